package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/redact"
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

// WithBatchSize bounds the replays that run at once in this process.
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
// host:pid). main passes the process's one id (feeds.InstanceID), the name
// its polls, poll claims and heartbeat carry.
func WithInstanceID(id string) Option {
	return func(r *Replayer) {
		if id != "" {
			r.id = id
		}
	}
}

// WithSecrets scrubs secrets by value from the texts the replayer's queue
// writes (see QueueSecrets).
func WithSecrets(secrets *redact.Secrets) Option {
	return func(r *Replayer) { r.queue.secrets = secrets }
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

// instanceID is the default id, host:pid as feeds.InstanceID builds it (this
// package cannot import feeds): a process's replayer claims under the name
// its polls and heartbeat carry. Two replayers in one process need
// WithInstanceID, or their claims cannot be told apart.
func instanceID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// ID returns the name this replayer claims rows under.
func (r *Replayer) ID() string { return r.id }

// Start runs the replayer in the background until Stop (ctx's values are
// kept, not its cancellation: the daemon orders the shutdown, and stops the
// replayer after the scheduler): every
// interval it returns expired leases to pending and claims due rows for its
// free slots, and whenever a replay ends it claims again, so a due row waits
// at most about one interval for a free slot and never for another origin's
// replay. It returns an error if the replayer is already running.
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
	d := r.newDispatch(claimParams{}, -1)
	// A timer reset after each tick, rather than a ticker: a slow tick does
	// not queue up ticks behind it.
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			d.wait()
			return
		case l := <-d.done:
			d.finish(l)
		case <-t.C:
			// Letters released or re-parked due at once since the last tick
			// may be claimed again: at most one claim per tick each.
			clear(d.skip)
			if expired, err := r.queue.requeueExpired(ctx); err != nil {
				if ctx.Err() == nil {
					r.logger.Error("dead-letter replay tick failed", "error", err)
				}
			} else {
				r.logExpired(expired)
			}
			t.Reset(r.interval)
		}
		if ctx.Err() == nil {
			if err := d.fill(ctx); err != nil && ctx.Err() == nil {
				r.logger.Error("dead-letter replay tick failed", "error", err)
			}
		}
	}
}

func (r *Replayer) logExpired(expired []*Letter) {
	for _, l := range expired {
		r.logger.Warn("dead letter lease expired: back to pending", "dead_letter_id", l.ID,
			"jurisdiction", l.Jurisdiction, "feed", l.Feed, "claimed_by", l.ClaimedBy)
	}
}

// RunOnce runs one tick and waits for it: expired leases back to pending,
// then up to the batch size of due rows claimed and replayed the way the
// running replayer does it (see dispatch), none twice. It returns the rows it
// claimed, as they were when claimed.
func (r *Replayer) RunOnce(ctx context.Context) ([]*Letter, error) {
	expired, err := r.queue.requeueExpired(ctx)
	if err != nil {
		return nil, err
	}
	r.logExpired(expired)
	return r.drain(ctx, claimParams{}, r.batch)
}

// ReplayNow claims the pending rows f selects, ignoring retry_after, and
// replays them at once: the operator's `ingestd deadletter replay`. A row f
// names by ID (f.IDs) that was abandoned is revived first, its attempts
// reset: an operator who names a row wants it tried again, whatever made the
// replayer give up; a row not named is never revived. Rows another instance
// is replaying are not touched. It returns when they are all replayed, or
// ErrNotFound for an ID that names no row.
func (r *Replayer) ReplayNow(ctx context.Context, f Filter) ([]*Letter, error) {
	for _, id := range f.IDs {
		if err := r.queue.reviveNamed(ctx, id); err != nil {
			return nil, err
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	return r.drain(ctx, claimParams{now: true, filter: f}, limit)
}

// drain claims and replays through a dispatch until nothing it may claim is
// left and nothing runs, claiming at most limit rows (no bound when
// negative) and none twice.
func (r *Replayer) drain(ctx context.Context, p claimParams, limit int) ([]*Letter, error) {
	d := r.newDispatch(p, limit)
	d.keepSkips = true
	var first error
	for {
		if first == nil && ctx.Err() == nil {
			first = d.fill(ctx)
		}
		if d.running == 0 {
			break
		}
		d.finish(<-d.done)
	}
	if ctx.Err() != nil && len(d.claimed) > 0 {
		first = nil // stopped: what was claimed went back to pending
	}
	return d.claimed, first
}

// dispatch runs replays in at most batch slots at once, each letter claimed
// when a slot is free and released on its own when its replay ends: a slow
// replay holds its slot and its origin, never the other letters. An origin
// has one replay at a time in this process (see the package comment), so a
// claim takes at most one row per origin and none of a busy origin; when a
// replay ends its origin's next due row is claimed at once.
type dispatch struct {
	r     *Replayer
	p     claimParams
	total int // rows left to claim; negative: no bound
	// keepSkips keeps every claimed id in skip (drain); the loop clears
	// skip at each tick.
	keepSkips bool

	busy    map[string]bool
	skip    map[int64]bool
	running int
	done    chan *Letter
	claimed []*Letter
}

func (r *Replayer) newDispatch(p claimParams, total int) *dispatch {
	p.by, p.lease = r.id, r.lease
	return &dispatch{r: r, p: p, total: total, busy: map[string]bool{}, skip: map[int64]bool{},
		done: make(chan *Letter, r.batch)}
}

// fill claims rows for the free slots and starts their replays. It claims
// again while claims return rows (each one makes its origin busy, so the
// next claim reaches further origins) and slots remain.
func (d *dispatch) fill(ctx context.Context) error {
	for d.running < d.r.batch && d.total != 0 {
		limit := d.r.batch - d.running
		if d.total > 0 {
			limit = min(limit, d.total)
		}
		p := d.p
		p.limit = limit
		p.busyOrigins = make([]string, 0, len(d.busy))
		for o := range d.busy {
			p.busyOrigins = append(p.busyOrigins, o)
		}
		p.skipIDs = make([]int64, 0, len(d.skip))
		for id := range d.skip {
			p.skipIDs = append(p.skipIDs, id)
		}
		letters, err := d.r.queue.claim(ctx, p)
		if err != nil || len(letters) == 0 {
			return err
		}
		for _, l := range letters {
			d.start(ctx, l)
		}
	}
	return nil
}

func (d *dispatch) start(ctx context.Context, l *Letter) {
	c := *l
	d.claimed = append(d.claimed, &c)
	if d.total > 0 {
		d.total--
	}
	d.running++
	d.busy[l.Origin] = true
	d.skip[l.ID] = true
	go func() {
		d.r.replayOne(ctx, l)
		d.done <- l
	}()
}

// finish frees the slot and the origin of a letter whose replay ended.
func (d *dispatch) finish(l *Letter) {
	d.running--
	delete(d.busy, l.Origin)
	if !d.keepSkips {
		// In the loop, the tick clears skip; until then the row waits.
		d.skip[l.ID] = true
	}
}

// wait lets the replays in flight end (Stop cancelled them).
func (d *dispatch) wait() {
	for d.running > 0 {
		d.finish(<-d.done)
	}
}

// keepLease renews the lease on l every third of the lease while its replay
// runs, until stop is closed. The replay's own outcome is written only after
// this returns, so a renewal never meets a row that this replay already
// finished: a renewal that finds the row gone means that another instance
// really took it (the lease ran out, say while the database was
// unreachable), and then the replay is stopped through lost, or the feed
// would be replayed twice at once.
func (r *Replayer) keepLease(ctx context.Context, l *Letter, stop <-chan struct{}, lost func(by string, st Status)) {
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		held, err := r.queue.renew(ctx, l.ID, r.id, r.lease)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Error("renewing dead-letter lease", "dead_letter_id", l.ID,
					"jurisdiction", l.Jurisdiction, "feed", l.Feed, "error", err)
			}
			continue
		}
		if !held {
			by, st, err := r.queue.holder(ctx, l.ID)
			if err != nil {
				by, st = "?", "?"
			}
			lost(by, st)
			return
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

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lost atomic.Bool
	stop, renewing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewing)
		r.keepLease(rctx, l, stop, func(by string, st Status) {
			lost.Store(true)
			log.Error("dead letter lease lost: another instance took it, stopping its replay here",
				"held_by", by, "status", st)
			cancel()
		})
	}()
	err := r.replay(rctx, l)
	close(stop)
	<-renewing
	if lost.Load() {
		// The row is another instance's now: its outcome is not ours to write.
		return
	}

	wctx, cancelWrite := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelWrite()
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
		// The lease ran out between two renewals (the database did not
		// answer them) and another instance took the row.
		log.Error("dead letter lease lost: another instance took it, its outcome is not recorded", "error", err)
	} else if werr != nil {
		log.Error("recording dead letter outcome", "error", werr)
	}
}
