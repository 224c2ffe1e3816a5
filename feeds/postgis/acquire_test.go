package postgis_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/pollbudget"
)

// A poll that waits for the pool's last connection waits in line: its
// budget counts the wait as such (Waited grows) and stops counting once it
// has the connection.
func TestAcquireWaitsCountAsWaitingInLine(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	started := make(chan struct{}, 4)
	cfg.ConnConfig.Tracer = signalingTracer{started: started}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	held, err := pool.Acquire(t.Context()) // the only connection
	if err != nil {
		t.Fatal(err)
	}
	<-started // held's own
	ctx, b, cancel := pollbudget.New(t.Context(), time.Hour, 0)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		c, err := pool.Acquire(ctx)
		if err == nil {
			c.Release()
		}
		got <- err
	}()
	<-started
	// In line, the budget of work stands still: with no queue bound, the
	// poll has no deadline while it waits.
	if dl, ok := ctx.Deadline(); ok {
		t.Errorf("while waiting for a connection the poll's deadline is %v; want none (its budget stands still)", dl)
	}
	held.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, ok := ctx.Deadline(); !ok {
		t.Error("after the connection was acquired the poll has no deadline; its budget should run again")
	}
	if w1, w2 := b.Waited(), b.Waited(); w1 == 0 || w1 != w2 {
		t.Errorf("Waited = %s, then %s: want the wait counted once, and no more after the connection came", w1, w2)
	}
	// Without a budget the tracer leaves the context alone.
	c, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
}

// signalingTracer is AcquireWaits that also says when an acquire starts.
type signalingTracer struct {
	postgis.AcquireWaits
	started chan struct{}
}

func (s signalingTracer) TraceAcquireStart(ctx context.Context, p *pgxpool.Pool, d pgxpool.TraceAcquireStartData) context.Context {
	ctx = s.AcquireWaits.TraceAcquireStart(ctx, p, d)
	select {
	case s.started <- struct{}{}:
	default:
	}
	return ctx
}
