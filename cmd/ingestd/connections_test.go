package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// TestConnectionsSaidAtStart: a polling instance reads the server's
// max_connections and the live instances at start, and says what it needs
// — an info line when the instances fit, a warning naming the settings to
// change when they do not, and an error when its own pool cannot fit.
func TestConnectionsSaidAtStart(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URLFor(t, pgtest.PoolConns)
	ctx := t.Context()
	var maxConns, reserved int
	pool, err := pgxpool.New(ctx, pgtest.PoolURL(dbURL, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int`).Scan(&maxConns, &reserved); err != nil {
		t.Fatal(err)
	}
	allowed := maxConns - reserved

	// poolOf is a pool of size conns on the test's database (pgxpool
	// opens connections when asked: a pool larger than the server holds
	// is only a number until then).
	poolOf := func(conns int) *pgxpool.Pool {
		pool, err := pgxpool.New(ctx, pgtest.PoolURL(dbURL, conns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	check := func(pool *pgxpool.Pool) (connectionBudget, string, error) {
		var logs bytes.Buffer
		b, err := checkConnections(ctx, pool, "self:1", slog.New(slog.NewJSONHandler(&logs, nil)))
		return b, logs.String(), err
	}
	addInstances := func(pool *pgxpool.Pool, n int) {
		if _, err := pool.Exec(ctx, `INSERT INTO instances (owner, host, pid, expires_at)
			SELECT 'other:' || i, 'other', i, now() + interval '1 hour' FROM generate_series(1, $1) i`, n); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("fits", func(t *testing.T) {
		pool := poolOf(2)
		b, logs, err := check(pool)
		if err != nil {
			t.Fatal(err)
		}
		if b.Need != 3 || b.Allowed() != allowed || b.Others != 0 {
			t.Fatalf("budget %+v, want need 3, allowed %d, no other instance", b, allowed)
		}
		if !strings.Contains(logs, `"level":"INFO"`) || !strings.Contains(logs, fmt.Sprintf("%d instances of this size fit", allowed/3)) {
			t.Fatalf("log: %s", logs)
		}
	})

	t.Run("the instances running would not fit", func(t *testing.T) {
		pool := poolOf(2)
		// Each instance needs 3: one more than a third of what the
		// server allows is too many.
		others := allowed / 3
		addInstances(pool, others)
		t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DELETE FROM instances WHERE host = 'other'`) })
		b, logs, err := check(pool)
		if err != nil {
			t.Fatal(err)
		}
		if b.Others != others {
			t.Fatalf("%d other instances seen, want %d", b.Others, others)
		}
		for _, want := range []string{`"level":"WARN"`, "max_connections", "pool_max_conns",
			fmt.Sprintf("%d instances of 3 connections need %d", others+1, 3*(others+1))} {
			if !strings.Contains(logs, want) {
				t.Errorf("the warning does not say %q: %s", want, logs)
			}
		}
	})

	t.Run("one instance does not fit", func(t *testing.T) {
		_, logs, err := check(poolOf(allowed))
		if err == nil {
			t.Fatalf("a pool of max_connections (%d) was accepted; log: %s", allowed, logs)
		}
		for _, want := range []string{"max_connections", "pool_max_conns", fmt.Sprintf("needs up to %d connections", allowed+1)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
	})
}
