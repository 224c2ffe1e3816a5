package pgtest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/internal/testwait"
)

func TestReckonBudget(t *testing.T) {
	b, err := reckonBudget(100, 3, "")
	if err != nil || b.slots != 100-3-keptFree {
		t.Errorf("stock server: %+v, %v; want %d slots", b, err, 100-3-keptFree)
	}
	if b, err := reckonBudget(100, 3, "40"); err != nil || b.slots != 40 {
		t.Errorf("%s=40: %+v, %v; want 40 slots", budgetEnv, b, err)
	}
	for _, env := range []string{"x", "1", "-3"} {
		if _, err := reckonBudget(100, 3, env); err == nil || !strings.Contains(err.Error(), budgetEnv) {
			t.Errorf("%s=%q: %v; want an error naming the variable", budgetEnv, env, err)
		}
	}
}

func TestPoolURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?pool_max_conns=3&sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db?pool_max_conns=3"},
		{"host=h dbname=db", "host=h dbname=db pool_max_conns=3"},
	} {
		if got := PoolURL(c.in, 3); got != c.want {
			t.Errorf("PoolURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// adminConn connects to the tests' server, skipping (or failing under CI)
// when there is none; it closes when t ends.
func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	server := ServerURL()
	conn, err := connect(t.Context(), server)
	if err != nil {
		unreachable(t, server, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A test that does not fit in the budget waits until another frees its
// slots, and then holds its own; a test that can never fit is told at once.
func TestReserveWaitsForSlots(t *testing.T) {
	// A class of its own, so that the tests of other binaries on the same
	// server neither take these slots nor lose theirs.
	waiting := make(chan struct{}, 10)
	b := budget{class: slotLockClass + 1, slots: 3, reason: "a test's budget",
		waiting: func() { waiting <- struct{}{} }}
	a, other := adminConn(t), adminConn(t)
	ctx := t.Context()

	if err := reserve(ctx, a, b, "server", 2); err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	done := make(chan error)
	go func() {
		err := reserve(ctx, other, b, "server", 2)
		if err == nil && !released.Load() {
			err = errors.New("the second test got its slots while the first held them")
		}
		done <- err
	}()
	// other cannot have two of three slots while a holds two; it gets them
	// once a frees its own (and notifies).
	testwait.Await(t, "the second test waiting", waiting)
	released.Store(true)
	if err := release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Await(t, "the second test's slots", done); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = $1::int::oid AND pid = $2`, b.class, other.PgConn().PID()).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 2 {
		t.Errorf("the second test holds %d slots, want 2", held)
	}

	err := reserve(ctx, a, b, "server", 4)
	if err == nil || !strings.Contains(err.Error(), "needs 4 connections") || !strings.Contains(err.Error(), "gives the tests 3") {
		t.Errorf("reserving more than the budget: %v; want the one line that says so", err)
	}
}
