package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The server's connections are shared by every test binary go test runs at
// once (-p of them, each running up to -parallel tests, some of which start
// ingestd processes with pools of their own), and a stock server allows 100.
// So each test reserves the connections it will open before its database is
// made, as slots of one budget kept in the server itself: slot i is the
// advisory lock (slotLockClass, i), held by the test's own admin connection
// until the test ends. Every test binary sees the same locks, and the server
// frees them when a binary dies. A test that does not fit waits for another
// to end (the NOTIFY on budgetChannel it sends after freeing its slots), not
// for "too many clients".

const (
	// slotLockClass is the first key of every slot's advisory lock (the
	// two-int form, like templateLockClass; "pgts").
	slotLockClass = 0x70677473
	// budgetChannel is the channel a test notifies when it frees slots.
	budgetChannel = "pgtest_budget"
	// PoolConns is the size of the pools Pool opens and the connections URL
	// reserves for the test's own use of its database. pgxpool's default
	// (the larger of 4 and the number of CPUs) would make a test's demand
	// grow with the machine; 4 is that default on the 2-core machines the
	// suite is timed on.
	PoolConns = 4
	// keptFree is how many of the server's connections the budget leaves to
	// everything that does not reserve: building the template, the tests'
	// connections to the server's own database (roles_test makes roles),
	// a developer's psql.
	keptFree = 5
	// recheck is how long a waiting test waits for a NOTIFY before it looks
	// at the slots again: a test binary that was killed frees its slots
	// without one.
	recheck = 5 * time.Second
)

// budgetEnv overrides the number of connections the tests may use in all,
// for a server that other clients share.
const budgetEnv = "INGESTD_TEST_DB_CONNS"

// budget is what the tests may use of the server, and why.
type budget struct {
	class  int32  // the slots' advisory lock class: slotLockClass
	slots  int    // connections the tests may hold at once, in all
	reason string // how slots was reckoned, for error messages
	// waiting, when set, is called each time reserve starts to wait:
	// its own test's signal.
	waiting func()
}

var (
	budgetMu  sync.Mutex
	budgetVal *budget
)

// serverBudget reads the server's budget once per test binary, on conn.
func serverBudget(ctx context.Context, conn *pgx.Conn) (budget, error) {
	budgetMu.Lock()
	defer budgetMu.Unlock()
	if budgetVal != nil {
		return *budgetVal, nil
	}
	var maxConns, reserved int
	// reserved_connections (PostgreSQL 16) is missing on 15: NULL, so 0.
	err := conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int
		+ coalesce(current_setting('reserved_connections', true)::int, 0)`).Scan(&maxConns, &reserved)
	if err != nil {
		return budget{}, fmt.Errorf("reading max_connections: %w", err)
	}
	b, err := reckonBudget(maxConns, reserved, os.Getenv(budgetEnv))
	if err != nil {
		return budget{}, err
	}
	budgetVal = &b
	return b, nil
}

// reckonBudget is the budget of a server with maxConns connections of which
// reserved are kept for superusers, unless env (INGESTD_TEST_DB_CONNS) sets it.
func reckonBudget(maxConns, reserved int, env string) (budget, error) {
	if env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 2 {
			return budget{}, fmt.Errorf("%s=%q: want a number of connections, at least 2", budgetEnv, env)
		}
		return budget{class: slotLockClass, slots: n,
			reason: fmt.Sprintf("%s=%d", budgetEnv, n)}, nil
	}
	return budget{class: slotLockClass, slots: maxConns - reserved - keptFree,
		reason: fmt.Sprintf("max_connections %d - %d reserved - %d kept free", maxConns, reserved, keptFree)}, nil
}

// tooSmall is the one line a test ends with when the server cannot give it
// the connections it needs however long it waits.
func (b budget) tooSmall(server string, need int) error {
	return fmt.Errorf("the test needs %d connections at once and the server at %s gives the tests %d (%s): "+
		"raise max_connections (scripts/postgis.sh's cluster has 200) or set %s",
		need, redact(server), b.slots, b.reason, budgetEnv)
}

// reserve takes need slots of the budget on conn, waiting while other tests
// hold them, until ctx ends. The slots are held until conn releases them
// (release) or closes.
func reserve(ctx context.Context, conn *pgx.Conn, b budget, server string, need int) error {
	if need > b.slots {
		return b.tooSmall(server, need)
	}
	// Listen before the first look, so that a release between a look and
	// the wait is not missed.
	if _, err := conn.Exec(ctx, "LISTEN "+budgetChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		got, err := trySlots(ctx, conn, b.class, b.slots, need)
		if err != nil {
			return err
		}
		if got == need {
			// Notifications would pile up in the connection while the
			// test runs.
			_, err := conn.Exec(ctx, "UNLISTEN "+budgetChannel)
			return err
		}
		// All or nothing: a test holding part of its slots while it waits
		// for the rest could wait for another doing the same.
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock_all()"); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		if b.waiting != nil {
			b.waiting()
		}
		wait, cancel := context.WithTimeout(ctx, recheck)
		_, err = conn.WaitForNotification(wait)
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("waited for %d of the %d connections the tests may use (%s): %w",
				need, b.slots, b.reason, context.Cause(ctx))
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("waiting for connections: %w", err)
		}
	}
}

// trySlots takes up to need of the slots that are free, without waiting, and
// returns how many it took. The filter runs row by row under the LIMIT, so
// it stops locking once it has need.
func trySlots(ctx context.Context, conn *pgx.Conn, class int32, slots, need int) (int, error) {
	var got int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT s FROM generate_series(0, $2::int - 1) s WHERE pg_try_advisory_lock($1::int, s) LIMIT $3) t`,
		class, slots, need).Scan(&got)
	if err != nil {
		return 0, fmt.Errorf("taking connection slots: %w", err)
	}
	return got, nil
}

// release frees conn's slots and tells the waiting tests.
func release(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock_all()"); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, "NOTIFY "+budgetChannel)
	return err
}

// PoolURL returns u with pgxpool's pool_max_conns set to conns, for a pool
// or an ingestd process the test opens on its database: their connections
// must stay within what the test reserved (URLFor). Only pgxpool reads the
// setting; pgx.Connect, libpq and GDAL refuse it, so give them u itself.
func PoolURL(u string, conns int) string {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		if p, err := url.Parse(u); err == nil {
			q := p.Query()
			q.Set("pool_max_conns", strconv.Itoa(conns))
			p.RawQuery = q.Encode()
			return p.String()
		}
	}
	return u + " pool_max_conns=" + strconv.Itoa(conns)
}
