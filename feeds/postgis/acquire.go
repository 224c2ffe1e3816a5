package postgis

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/pollbudget"
)

// AcquireWaits is a pgxpool tracer (set it as the pool's
// ConnConfig.Tracer) that counts a poll's wait for a database connection
// as waiting in line, like its wait for a request slot: it stands the
// poll's time budget still and runs its queue_timeout instead. When a busy
// hour's polls finish their fetches together, their applies queue for the
// pool (max_in_flight + 5 connections), and that wait is not their work.
type AcquireWaits struct{}

type acquireWaitKey struct{}

var (
	_ pgxpool.AcquireTracer = AcquireWaits{}
	_ pgx.QueryTracer       = AcquireWaits{} // the type of ConnConfig.Tracer
)

// TraceAcquireStart implements pgxpool.AcquireTracer.
func (AcquireWaits) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	b := pollbudget.Of(ctx)
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, acquireWaitKey{}, b.Wait())
}

// TraceAcquireEnd implements pgxpool.AcquireTracer.
func (AcquireWaits) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if end, ok := ctx.Value(acquireWaitKey{}).(func()); ok {
		end()
	}
}

// TraceQueryStart implements pgx.QueryTracer, which a pool's tracer must:
// queries are not traced.
func (AcquireWaits) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (AcquireWaits) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
