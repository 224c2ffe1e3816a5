package deadletter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ReplayFunc resumes the parked poll of l. See the package comment for what
// its result does to the row.
type ReplayFunc func(ctx context.Context, l *Letter) error

// Replayer defaults.
const (
	DefaultInterval    = 5 * time.Second
	DefaultLease       = 2 * time.Minute
	DefaultBatchSize   = 16
	DefaultMaxAttempts = 10
)

// Replayer claims due dead letters and replays them. Build one per process
// with NewReplayer, Start it, and Stop it on shutdown.
type Replayer struct {
	queue       *Queue
	replay      ReplayFunc
	logger      *slog.Logger
	id          string
	interval    time.Duration
	lease       time.Duration
	batch       int
	maxAttempts int

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
}

// Option configures a Replayer.
type Option func(*Replayer)

// WithLogger sets the logger (nil discards).
func WithLogger(l *slog.Logger) Option {
	return func(r *Replayer) {
		if l != nil {
			r.logger = l
		}
	}
}

// WithInterval sets the time between two claims of due rows.
func WithInterval(d time.Duration) Option {
	return func(r *Replayer) {
		if d > 0 {
			r.interval = d
		}
	}
}

// WithLease sets how long a claim lasts without renewal. The replayer renews
// it every third of that while a replay runs, so it bounds how long a row
// stays stuck after its instance died, not how long a replay may take.
func WithLease(d time.Duration) Option {
	return func(r *Replayer) {
		if d > 0 {
			r.lease = d
		}
	}
}

// WithBatchSize bounds the rows claimed per tick.
func WithBatchSize(n int) Option {
	return func(r *Replayer) {
		if n > 0 {
			r.batch = n
		}
	}
}

// WithMaxAttempts sets the replays a row gets before it is abandoned.
func WithMaxAttempts(n int) Option {
	return func(r *Replayer) {
		if n > 0 {
			r.maxAttempts = n
		}
	}
}

// WithInstanceID names this replayer in dead_letter.claimed_by (default
// host:pid:random, unique per process).
func WithInstanceID(id string) Option {
	return func(r *Replayer) {
		if id != "" {
			r.id = id
		}
	}
}

// NewReplayer returns a replayer that claims rows through pool and hands
// them to replay.
func NewReplayer(pool *pgxpool.Pool, replay ReplayFunc, opts ...Option) *Replayer {
	r := &Replayer{
		queue:       NewQueue(pool),
		replay:      replay,
		logger:      slog.New(slog.DiscardHandler),
		id:          instanceID(),
		interval:    DefaultInterval,
		lease:       DefaultLease,
		batch:       DefaultBatchSize,
		maxAttempts: DefaultMaxAttempts,
	}
	for _, o := range opts {
		o(r)
	}
	r.logger = r.logger.With("replayer", r.id)
	return r
}

func instanceID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// ID returns the name this replayer claims rows under.
func (r *Replayer) ID() string { return r.id }

// Start runs the replayer in the background until Stop or ctx ends: every
// interval it returns expired leases to pending, claims a batch of due rows
// and replays them. It returns an error if the replayer is already running.
func (r *Replayer) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errors.New("deadletter: replayer already started")
	}
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.stopped = make(chan struct{})
	go r.loop(ctx, r.stopped)
	r.logger.Info("dead-letter replayer started", "interval", r.interval, "lease", r.lease,
		"batch_size", r.batch, "max_attempts", r.maxAttempts)
	return nil
}

// Stop cancels replays in flight (their rows go back to pending, checkpoints
// kept) and waits for the loop to end.
func (r *Replayer) Stop() {
	r.mu.Lock()
	cancel, stopped := r.cancel, r.stopped
	r.cancel = nil
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-stopped
	r.logger.Info("dead-letter replayer stopped")
}

func (r *Replayer) loop(ctx context.Context, stopped chan struct{}) {
	defer close(stopped)
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.logger.Error("dead-letter replay tick failed", "error", err)
		}
		// A sleep the context ends, rather than a ticker: a slow batch does
		// not queue up ticks behind it.
		t := time.NewTimer(r.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// RunOnce runs one tick: expired leases back to pending, then one batch of
// due rows claimed and replayed. It returns the rows it claimed, as they
// were when claimed.
func (r *Replayer) RunOnce(ctx context.Context) ([]*Letter, error) {
	expired, err := r.queue.requeueExpired(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range expired {
		r.logger.Warn("dead letter lease expired: back to pending", "dead_letter_id", l.ID,
			"jurisdiction", l.Jurisdiction, "feed", l.Feed, "claimed_by", l.ClaimedBy)
	}
	return r.claimAndReplay(ctx, claimParams{limit: r.batch})
}

// ReplayNow claims the pending rows f selects, ignoring retry_after, and
// replays them at once: the operator's `ingestd deadletter replay`. Rows
// another instance is replaying are not touched.
func (r *Replayer) ReplayNow(ctx context.Context, f Filter) ([]*Letter, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1 << 20
	}
	return r.claimAndReplay(ctx, claimParams{limit: limit, now: true, filter: f})
}

func (r *Replayer) claimAndReplay(ctx context.Context, p claimParams) ([]*Letter, error) {
	p.by, p.lease = r.id, r.lease
	letters, err := r.queue.claim(ctx, p)
	if err != nil || len(letters) == 0 {
		return nil, err
	}
	claimed := make([]*Letter, len(letters))
	for i, l := range letters {
		c := *l
		claimed[i] = &c
	}

	// Cancelled when a renewal finds that a lease was lost, or on Stop.
	rctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	cancels := make(map[int64]context.CancelFunc, len(letters))
	ctxs := make(map[int64]context.Context, len(letters))
	for _, l := range letters {
		ctxs[l.ID], cancels[l.ID] = context.WithCancel(rctx)
	}
	renewDone := make(chan struct{})
	go r.renewLeases(rctx, letters, cancels, renewDone)

	// One origin at a time, origins in parallel: see the package comment.
	byOrigin := map[string][]*Letter{}
	var origins []string
	for _, l := range letters {
		if _, ok := byOrigin[l.Origin]; !ok {
			origins = append(origins, l.Origin)
		}
		byOrigin[l.Origin] = append(byOrigin[l.Origin], l)
	}
	var wg sync.WaitGroup
	for _, o := range origins {
		wg.Go(func() {
			for _, l := range byOrigin[o] {
				r.replayOne(ctxs[l.ID], l)
			}
		})
	}
	wg.Wait()
	cancelAll()
	<-renewDone
	return claimed, nil
}

func (r *Replayer) renewLeases(ctx context.Context, letters []*Letter, cancels map[int64]context.CancelFunc, done chan struct{}) {
	defer close(done)
	ids := make([]int64, len(letters))
	for i, l := range letters {
		ids[i] = l.ID
	}
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lost, err := r.queue.renew(ctx, r.id, ids, r.lease)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Error("renewing dead-letter leases", "error", err)
			}
			continue
		}
		for _, id := range lost {
			// Another instance holds the row now: stop replaying it here, or
			// the feed would be replayed twice at once.
			r.logger.Error("dead letter lease lost: stopping its replay", "dead_letter_id", id)
			cancels[id]()
		}
	}
}

// replayOne replays l and records the outcome. Writes that record it use a
// context that outlives Stop: a replay that ended must not stay replaying
// until its lease runs out.
func (r *Replayer) replayOne(ctx context.Context, l *Letter) {
	log := r.logger.With("dead_letter_id", l.ID, "jurisdiction", l.Jurisdiction, "feed", l.Feed,
		"origin", l.Origin, "attempt", l.Attempts+1)
	l.LastAttempt = l.Attempts+1 >= r.maxAttempts
	start := time.Now()
	log.Info("replaying dead letter", "reason", l.Reason, "poll_id", l.Checkpoint.PollID,
		"next_page", l.Checkpoint.Page, "retry_after", l.RetryAfter)
	err := r.replay(ctx, l)

	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var werr error
	var de *DeferError
	switch {
	case err == nil:
		werr = r.queue.markDone(wctx, l.ID, r.id)
		if werr == nil {
			log.Info("dead letter replayed", "duration_ms", time.Since(start).Milliseconds())
		}
	case errors.As(err, &de):
		var st Status
		var attempts int
		st, attempts, werr = r.queue.repark(wctx, l.ID, r.id, de.Parking, r.maxAttempts)
		switch {
		case werr != nil:
		case st == StatusAbandoned:
			log.Error("dead letter abandoned: max attempts reached", "attempts", attempts,
				"max_attempts", r.maxAttempts, "reason", de.Reason, "error", de.Err)
		default:
			log.Warn("dead letter parked again", "attempts", attempts, "reason", de.Reason,
				"retry_after", de.RetryAfter, "next_page", de.Checkpoint.Page, "error", de.Err)
		}
	case errors.Is(err, ErrNotNow) || ctx.Err() != nil:
		werr = r.queue.release(wctx, l.ID, r.id)
		if werr == nil {
			log.Info("dead letter replay interrupted: back to pending", "error", err)
		}
	default:
		werr = r.queue.abandon(wctx, l.ID, r.id, err)
		if werr == nil {
			log.Error("dead letter abandoned: replay failed", "error", err)
		}
	}
	if errors.Is(werr, errLeaseLost) {
		log.Error("dead letter outcome not recorded: the lease was lost to another instance", "error", err)
	} else if werr != nil {
		log.Error("recording dead letter outcome", "error", werr)
	}
}
