package postgis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/feeds"
)

var _ feeds.Recovery = (*Store)(nil)

// Heartbeat implements feeds.Recovery.
func (s *Store) Heartbeat(ctx context.Context, owner, pidNS string, ttl time.Duration) error {
	host, pid := feeds.SplitInstanceID(owner)
	_, err := s.bookkeeping().Exec(ctx, sqlQuery("Heartbeat"),
		owner, host, pid, pidNS, ttl)
	if err != nil {
		return fmt.Errorf("postgis: heartbeat of %s: %w", owner, err)
	}
	return nil
}

// Retire implements feeds.Recovery.
func (s *Store) Retire(ctx context.Context, owner string) error {
	if _, err := s.bookkeeping().Exec(ctx, sqlQuery("Retire"), owner); err != nil {
		return fmt.Errorf("postgis: retire %s: %w", owner, err)
	}
	return nil
}

// Activity implements feeds.Recovery. Ages and expiries are measured by the
// database's clock, the one that wrote them.
func (s *Store) Activity(ctx context.Context) ([]feeds.Activity, error) {
	rows, err := s.pool.Query(ctx, sqlQuery("Activity"))
	if err != nil {
		return nil, fmt.Errorf("postgis: list claims and running polls: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (feeds.Activity, error) {
		var a feeds.Activity
		var age float64
		var live int
		err := r.Scan(&a.Owner, &a.Jurisdiction, &a.Feed, &a.PollID, &age, &a.LeaseExpired, &live, &a.PidNS)
		a.Age, a.Liveness = time.Duration(age*float64(time.Second)), feeds.Liveness(live)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgis: list claims and running polls: %w", err)
	}
	return out, nil
}

// Interrupt implements feeds.Recovery.
func (s *Store) Interrupt(ctx context.Context, a feeds.Activity, cause error) (feeds.Interruption, error) {
	msg := s.errorText(cause)
	var out feeds.Interruption
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = feeds.Interruption{}
		pollEnded := false
		if a.PollID != 0 {
			// Waits for an apply of the poll in flight; status is then
			// no longer running and nothing happens.
			tag, err := tx.Exec(ctx, sqlQuery("InterruptPoll"), a.PollID, msg, a.Owner)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				out.Ended, pollEnded = true, true
				if _, err := tx.Exec(ctx, sqlQuery("FeedFailed"), a.Jurisdiction, a.Feed, msg, a.PollID); err != nil {
					return err
				}
				// A replay's poll is its dead letter's checkpoint: the
				// letter's next replay resumes from these pages.
				var parked bool
				if err := tx.QueryRow(ctx, sqlQuery("PollParked"), a.PollID).Scan(&parked); err != nil {
					return err
				}
				out.Parked = parked
				if !parked {
					if err := deleteStaging(ctx, tx, a.PollID); err != nil {
						return err
					}
				}
			}
		}
		if a.Owner == "" || a.Feed == "" {
			return nil
		}
		var tickDone bool
		err := tx.QueryRow(ctx, sqlQuery("InterruptClaim"), a.Jurisdiction, a.Feed, a.Owner).Scan(&tickDone)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		out.Ended, out.TickDone = true, tickDone && !pollEnded
		return nil
	})
	if err != nil {
		return feeds.Interruption{}, fmt.Errorf("postgis: interrupt %s of %s/%s by %q: %w", activityKind(a), a.Jurisdiction, a.Feed, a.Owner, err)
	}
	return out, nil
}

func activityKind(a feeds.Activity) string {
	if a.PollID != 0 {
		return "poll " + strconv.FormatInt(a.PollID, 10)
	}
	return "claim"
}

// retryOnConnLoss runs fn until it succeeds, fails for another reason than a
// lost connection to PostgreSQL, or ctx ends. Recording how a poll ended is
// worth waiting for: a poll left 'running' misleads every reader.
func retryOnConnLoss(ctx context.Context, fn func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !connLost(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// connLost tells whether err says the connection to PostgreSQL broke or
// could not be made (the server crashed, is restarting or recovering),
// rather than that the statement failed.
func connLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 08: connection exception; 57P01-57P03: admin shutdown, crash
		// shutdown, cannot connect now (starting up, recovering).
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) ||
		strings.Contains(err.Error(), "conn closed")
}
