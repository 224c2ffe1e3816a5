package pgshare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
)

// OriginWatch follows the breakers' state changes: it reports an origin that
// stays open across stuckAfter consecutive cooldowns (error event
// origin_stuck_open, once per episode) and records it in breaker_state's
// stuck column, which feed_freshness shows next to the origin's feeds.
// Without a Cluster it also records each origin's latest state there,
// since nothing else would.
//
// Hand OnStateChange to Config.OnStateChange. The hook only records the
// change; a goroutine started by Start writes it, because the hook runs on
// the goroutine of a request and must not wait for the database.
type OriginWatch struct {
	pool       *pgxpool.Pool
	sql        originWatchSQL
	stuckAfter int
	logger     *slog.Logger
	// shared: Cluster owns the verdict columns of breaker_state, and
	// this watch writes only the stuck flag.
	shared bool

	mu      sync.Mutex
	stuck   map[string]bool
	pending map[string]originState // latest unwritten state per origin
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// originState is the last state change of one origin, as breaker_state
// records it.
type originState struct {
	origin           string
	state            breaker.State
	at               time.Time
	openUntil        time.Time // zero unless open
	consecutiveOpens int
	// stuck is set while the origin has stayed open across stuckAfter
	// consecutive cooldowns.
	stuck bool
}

// NewOriginWatch returns a watch writing to breaker_state through pool;
// stuckAfter < 1 means 3. logger nil discards.
func NewOriginWatch(pool *pgxpool.Pool, stuckAfter int, logger *slog.Logger) *OriginWatch {
	if stuckAfter < 1 {
		stuckAfter = 3
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OriginWatch{pool: pool, sql: loadOriginWatchSQL(), stuckAfter: stuckAfter, logger: logger,
		stuck: map[string]bool{}, pending: map[string]originState{}, wake: make(chan struct{}, 1)}
}

// SharedVerdicts tells the watch that a Cluster writes the verdict
// columns of breaker_state (call it before Start when the registry has one).
// The watch then writes only the stuck flag: its own copy of the verdict,
// written after the fact from one instance's events, could overwrite a newer
// verdict of the cluster — a follower's "open, 0 s left" shortening a real
// open, or a stale "closed" ending one.
func (w *OriginWatch) SharedVerdicts() { w.shared = true }

// OnStateChange records ev; it never blocks on I/O.
func (w *OriginWatch) OnStateChange(ev breaker.StateChange) {
	s := originState{origin: ev.Origin, state: ev.To, at: ev.At, consecutiveOpens: ev.ConsecutiveOpens}
	w.mu.Lock()
	switch ev.To {
	case breaker.StateOpen:
		s.openUntil = ev.At.Add(ev.RetryAfter)
		if ev.ConsecutiveOpens >= w.stuckAfter && !w.stuck[ev.Origin] {
			w.stuck[ev.Origin] = true
			w.logger.Error("origin_stuck_open", "origin", ev.Origin, "consecutive_opens", ev.ConsecutiveOpens,
				"stuck_open_after", w.stuckAfter, "retry_after", ev.RetryAfter)
		}
	case breaker.StateClosed:
		if w.stuck[ev.Origin] {
			delete(w.stuck, ev.Origin)
			w.logger.Info("origin_stuck_open cleared: origin closed", "origin", ev.Origin)
		}
	}
	s.stuck = w.stuck[ev.Origin]
	w.pending[ev.Origin] = s
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ErrWatchStarted is returned by a second Start of an OriginWatch.
var ErrWatchStarted = errors.New("breaker: origin watch already started")

// Start runs the writer until Stop. ctx is not kept: the writer outlives it,
// so that Stop writes what is still pending whatever ended the daemon's
// context. It returns ErrWatchStarted if the watch is running.
func (w *OriginWatch) Start(ctx context.Context) error {
	if w.quit != nil {
		return ErrWatchStarted
	}
	w.quit, w.done = make(chan struct{}), make(chan struct{})
	go w.run()
	return nil
}

// Stop writes what is pending and stops the writer; call it before closing
// the pool.
func (w *OriginWatch) Stop() {
	if w.quit == nil {
		return
	}
	close(w.quit)
	<-w.done
	w.quit = nil
}

func (w *OriginWatch) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			w.flush()
		case <-w.quit:
			w.flush()
			return
		}
	}
}

func (w *OriginWatch) flush() {
	w.mu.Lock()
	batch := w.pending
	w.pending = map[string]originState{}
	w.mu.Unlock()
	for _, s := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		write := w.recordState
		if w.shared {
			write = w.recordStuck
		}
		if err := write(ctx, s); err != nil {
			w.logger.Error("recording breaker state", "origin", s.origin, "error", err)
		}
		cancel()
	}
}

// recordState writes the whole state of s.origin. The last write wins: the
// watch writes one origin's changes in order from one goroutine, and without
// a Cluster each instance describes its own breaker anyway.
func (w *OriginWatch) recordState(ctx context.Context, s originState) error {
	var openedAt, openUntil *time.Time
	if s.state == breaker.StateOpen {
		openedAt = &s.at
		openUntil = &s.openUntil
	}
	_, err := w.pool.Exec(ctx, w.sql.recordState,
		s.origin, s.state.String(), openedAt, openUntil, s.consecutiveOpens, s.stuck, s.at)
	if err != nil {
		return fmt.Errorf("breaker: record state of %s: %w", s.origin, err)
	}
	return nil
}

// recordStuck writes only the stuck flag, leaving the verdict columns to
// the Cluster. An UPDATE only: a row is the shared verdict's to create,
// and every change of stuck follows a transition that the verdict wrote
// first.
func (w *OriginWatch) recordStuck(ctx context.Context, s originState) error {
	_, err := w.pool.Exec(ctx, w.sql.recordStuck, s.origin, s.stuck)
	if err != nil {
		return fmt.Errorf("breaker: record stuck flag of %s: %w", s.origin, err)
	}
	return nil
}
