package feeds

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ingestd/ingestd/breaker"
)

// BreakerState is the last state change of one origin's breaker, as
// breaker_state shows it.
type BreakerState struct {
	Origin           string
	State            string // closed, open, half-open
	At               time.Time
	OpenUntil        time.Time // zero unless open
	ConsecutiveOpens int
	// Stuck is set while the origin has stayed open across StuckOpenAfter
	// consecutive cooldowns.
	Stuck bool
}

// BreakerStateStore records breaker states; *postgis.Store implements it.
type BreakerStateStore interface {
	// RecordBreakerState writes the whole state of s.Origin.
	RecordBreakerState(ctx context.Context, s BreakerState) error
	// RecordOriginStuck writes only whether the origin is stuck open.
	RecordOriginStuck(ctx context.Context, origin string, stuck bool) error
}

// OriginWatch follows the breakers' state changes: it reports an origin that
// stays open across stuck_open_after consecutive cooldowns (error event
// origin_stuck_open, once per episode) and writes each origin's latest state
// to the store, so that feed_freshness can show it next to the origin's feeds.
//
// Hand OnStateChange to breaker.Config.OnStateChange. The hook only records
// the change; a goroutine started by Start writes it, because the hook runs
// on the goroutine of a request and must not wait for the database.
type OriginWatch struct {
	store      BreakerStateStore
	stuckAfter int
	logger     *slog.Logger
	// shared: breaker.SharedState owns the verdict columns of breaker_state,
	// and this watch writes only the stuck flag.
	shared bool

	mu      sync.Mutex
	stuck   map[string]bool
	pending map[string]BreakerState // latest unwritten state per origin
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// NewOriginWatch returns a watch writing to store; stuckAfter < 1 means 3.
// logger nil discards.
func NewOriginWatch(store BreakerStateStore, stuckAfter int, logger *slog.Logger) *OriginWatch {
	if stuckAfter < 1 {
		stuckAfter = 3
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OriginWatch{store: store, stuckAfter: stuckAfter, logger: logger,
		stuck: map[string]bool{}, pending: map[string]BreakerState{}, wake: make(chan struct{}, 1)}
}

// SharedVerdicts tells the watch that breaker.SharedState writes the verdict
// columns of breaker_state (call it before Start when the registry has one).
// The watch then writes only the stuck flag: its own copy of the verdict,
// written after the fact from one instance's events, could overwrite a newer
// verdict of the cluster — a follower's "open, 0 s left" shortening a real
// open, or a stale "closed" ending one.
func (w *OriginWatch) SharedVerdicts() { w.shared = true }

// OnStateChange records ev; it never blocks on I/O.
func (w *OriginWatch) OnStateChange(ev breaker.StateChange) {
	s := BreakerState{Origin: ev.Origin, State: ev.To.String(), At: ev.At, ConsecutiveOpens: ev.ConsecutiveOpens}
	w.mu.Lock()
	switch ev.To {
	case breaker.StateOpen:
		s.OpenUntil = ev.At.Add(ev.RetryAfter)
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
	s.Stuck = w.stuck[ev.Origin]
	w.pending[ev.Origin] = s
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start runs the writer until Stop.
func (w *OriginWatch) Start() {
	w.quit, w.done = make(chan struct{}), make(chan struct{})
	go w.run()
}

// Stop writes what is pending and stops the writer; call it before closing
// the store's pool.
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
	w.pending = map[string]BreakerState{}
	w.mu.Unlock()
	for _, s := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		write := func() error { return w.store.RecordBreakerState(ctx, s) }
		if w.shared {
			write = func() error { return w.store.RecordOriginStuck(ctx, s.Origin, s.Stuck) }
		}
		if err := write(); err != nil {
			w.logger.Error("recording breaker state", "origin", s.Origin, "error", err)
		}
		cancel()
	}
}
