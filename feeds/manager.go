package feeds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
)

// Manager schedules and runs the polls of every configured feed.
//
// Each feed has a cron entry in its jurisdiction's time zone, shifted by a
// deterministic per-feed offset. A feed never has two polls running at once in
// one process: a tick that finds the previous poll still running is skipped.
type Manager struct {
	store     Store
	fetcher   Fetcher
	logger    *slog.Logger
	maxJitter time.Duration
	clock     Clock
	now       func() time.Time
	rand      func() float64 // in [0, 1), for retry_after jitter

	// letters is nil without a dead-letter queue: refusals then fail polls.
	letters DeadLetters
	dl      config.DeadLetter

	sched  *scheduler
	ctx    context.Context // cancelled by Stop: in-flight polls end
	cancel context.CancelFunc

	metrics      *metrics
	tickObserver func(key string, planned, started time.Time)
	instance     string // owner of this process's poll claims
	signals      managerSignals

	// recovery, when set, keeps this instance's heartbeat every beat and
	// sweeps for dead instances' work (sweep.go); loops waits for it.
	recovery   Recovery
	beat       time.Duration
	loops      sync.WaitGroup
	recovering bool // Start started the loop: Stop retires the heartbeat
	catchUp    bool // Start polls overdue feeds at once
	// unswept holds the keys of feeds whose dead owner's work a sweep
	// could not be sure it ended (Interrupt failed: perhaps after its
	// commit); a later sweep that no longer finds that work polls them.
	// Only the sweep touches it, and sweeps never overlap.
	unswept map[string]bool

	// slots bounds the polls this instance runs at once (nil: no bound).
	// A tick takes its slot before it claims its feed, so the instance
	// holds claims only for polls it is running (WithPollSlots).
	slots chan struct{}
	// originSlots, when set, bounds the polls of one origin running at
	// once (WithOriginPollSlots); origins counts them, under mu.
	originSlots func(origin string) int
	origins     map[string]*originGate
	// lastOK is each feed's last success as this process knows it (read
	// at Start, then set by its own successful polls), under mu: what
	// orders the ticks waiting for an origin's slot without a query per
	// tick. Another instance's polls are not in it.
	lastOK map[string]time.Time

	mu      sync.Mutex
	started bool
	feeds   map[string]*scheduledFeed // by Feed.Key()
	running map[string]bool
	wg      sync.WaitGroup
	// connectedSince: since when heartbeats succeed without a gap.
	connectedSince time.Time
}

type scheduledFeed struct {
	feed  config.Feed
	entry int // the scheduler's
}

// Option configures a Manager.
type Option func(*Manager)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.logger = l } }

// WithMaxJitter bounds each feed's start offset within a cron-spec
// schedule (default DefaultMaxJitter); a feed on "@every D" is spread over
// the whole D instead. 0 disables the offset of both.
func WithMaxJitter(d time.Duration) Option { return func(m *Manager) { m.maxJitter = d } }

// WithRegisterer registers the package's metrics (polls, durations, features
// loaded, last success, scheduler lag) on reg.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(m *Manager) { m.metrics = newMetrics(reg) }
}

// WithTickObserver calls fn at every scheduled tick with its planned time and
// the time its poll started; benchmarks use it to measure scheduling lag.
func WithTickObserver(fn func(key string, planned, started time.Time)) Option {
	return func(m *Manager) { m.tickObserver = fn }
}

// WithCatchUp sets whether Start polls at once the feeds whose last success
// is older than their interval, or that never succeeded (default true).
func WithCatchUp(on bool) Option { return func(m *Manager) { m.catchUp = on } }

// WithClock makes c the manager's clock (default: the real clock). The
// scheduler's ticks and the heartbeat wait on it, and every time a poll
// records, compares or measures (its start, its duration, a checkpoint's
// age, a dead letter's retry_after, the scheduler's lag, the sweep's trust
// in lapsed heartbeats) is read from it, so that a test moves time instead
// of sleeping. Deadlines (a poll's timeout, a request's) are contexts on
// the real clock, and the database keeps its own (claims, leases).
func WithClock(c Clock) Option {
	return func(m *Manager) {
		if c != nil {
			m.clock = c
		}
	}
}

// WithInstanceID names this process in poll claims, which keep several
// instances from polling one feed at once, and in its heartbeat (default
// InstanceID()). main passes the id it gives every other part.
func WithInstanceID(id string) Option { return func(m *Manager) { m.instance = id } }

// WithPollSlots bounds the polls this instance runs at once to n (0: no
// bound): a tick or a catch-up waits for a slot before it claims its feed,
// so that an instance with more feeds due than it can run leaves the rest
// claimable by the other instances, and its waiting ticks hold no claim,
// no database connection and no poll's buffers. main passes max_in_flight:
// a poll beyond that many would only wait for a request slot. The wait for
// a poll slot is counted in the poll's queue wait (the queue-wait metric
// and polls.queue_wait) but not bounded by queue_timeout: a tick that
// waits holds nothing another instance needs.
func WithPollSlots(n int) Option {
	return func(m *Manager) {
		if n > 0 {
			m.slots = make(chan struct{}, n)
		} else {
			m.slots = nil
		}
	}
}

// WithOriginPollSlots bounds the polls of one origin (breaker.Origin of
// the feed's URL) running at once to limit(origin) (0 or less: no bound).
// A tick waits for its origin's slot before it waits for a poll slot
// (WithPollSlots), so that the feeds of one origin, whose requests wait
// for its in-flight cap anyway, cannot fill every poll slot while other
// origins' feeds wait. limit is asked at every tick, so a reload's
// policies apply at once. main passes twice the origin's
// max_in_flight_per_origin: one poll may apply while another requests.
func WithOriginPollSlots(limit func(origin string) int) Option {
	return func(m *Manager) { m.originSlots = limit }
}

// originGate counts an origin's running polls (WithOriginPollSlots) and
// holds the ticks that wait for one. A freed slot is handed to the one
// waiter that needs it most (originWaiter.before) rather than raced for:
// a race is won by whichever tick comes back first, and on an origin with
// more feeds than its slots can serve in an interval, that kept its fresh
// feeds re-polling while its never-loaded ones waited.
type originGate struct {
	running int
	// waiting is in arrival order; the hand-off scans it, since a
	// waiter's need grows with time at a rate of its own (see before).
	// It holds one waiter per feed at most: a feed's next tick is
	// skipped ("running") while one waits.
	waiting []*originWaiter
}

// originWaiter is a tick (or a catch-up, or a one-off poll) waiting for
// its origin's slot.
type originWaiter struct {
	feed     string
	lastOK   time.Time // the feed's last success; zero: never loaded
	interval time.Duration
	queued   time.Time
	// skippable: the feed was fresh when its tick came (loaded, last
	// success within its interval) and the wait is a tick's or a
	// catch-up's, which the feed's next tick replaces (never a one-off
	// poll's); see Manager.dispatch.
	skippable bool
	// done is closed once the gate has decided: granted (the waiter
	// holds a slot) or not (skipped). Both under Manager.mu.
	done    chan struct{}
	granted bool
}

// before reports whether w should have a slot before v at now: a feed
// never loaded first, then the longest since its last success relative
// to its interval, then the first to come.
func (w *originWaiter) before(v *originWaiter, now time.Time) bool {
	if w.lastOK.IsZero() || v.lastOK.IsZero() {
		return w.lastOK.IsZero() && !v.lastOK.IsZero()
	}
	// (now - lastOK) / interval, compared without dividing.
	a := float64(now.Sub(w.lastOK)) * float64(v.interval)
	b := float64(now.Sub(v.lastOK)) * float64(w.interval)
	return a > b
}

// originSlotOutcome is how a wait for an origin's slot ended.
type originSlotOutcome int

const (
	originSlotTaken   originSlotOutcome = iota
	originSlotSkipped                   // a fresh feed's tick that waited past its interval
	originSlotStopped                   // ctx ended first
)

// skipReasonOriginBusy is the ticks-skipped reason of a fresh feed's tick
// that waited longer than its interval for its origin's slot.
const skipReasonOriginBusy = "origin_busy"

// unknownFeedDelay is how long a dead letter of a feed this instance does
// not know waits before any replayer claims it again: long enough that the
// instances that know the feed get it, short next to any retry_after.
const unknownFeedDelay = time.Minute

// letterPostponer is implemented by *deadletter.Queue: it moves a claimed
// letter's retry_after later without counting an attempt.
type letterPostponer interface {
	Postpone(ctx context.Context, id int64, d time.Duration) error
}

// DeadLetters is where polls that cannot finish now are parked;
// *deadletter.Queue implements it.
type DeadLetters interface {
	// Park records p as the feed's pending dead letter.
	Park(ctx context.Context, p deadletter.Parking) (int64, error)
	// Open returns the feed's pending or replaying dead letter, or nil.
	Open(ctx context.Context, jurisdiction, feed string) (*deadletter.Letter, error)
}

// WithDeadLetters parks polls refused by an open breaker or failed after
// retries in q instead of failing them, and makes a feed with an open dead
// letter wait for its replay (Manager.Replay) instead of being polled anew.
// cfg supplies max_checkpoint_age and failed_backoff.
func WithDeadLetters(q DeadLetters, cfg config.DeadLetter) Option {
	return func(m *Manager) { m.letters, m.dl = q, cfg }
}

// NewManager returns a manager that polls through fetcher into store.
func NewManager(store Store, fetcher Fetcher, opts ...Option) *Manager {
	m := &Manager{
		store:     store,
		fetcher:   fetcher,
		logger:    slog.New(slog.DiscardHandler),
		maxJitter: DefaultMaxJitter,
		clock:     systemClock{},
		catchUp:   true,
		rand:      rand.Float64,
		dl:        config.BuiltinDeadLetter(),
		feeds:     map[string]*scheduledFeed{},
		running:   map[string]bool{},
		origins:   map[string]*originGate{},
		lastOK:    map[string]time.Time{},
	}
	for _, o := range opts {
		o(m)
	}
	m.now = m.clock.Now
	if m.metrics == nil {
		m.metrics = newMetrics(nil)
	}
	if m.instance == "" {
		m.instance = InstanceID()
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.sched = newScheduler(m.clock)
	return m
}

// Start starts the scheduler on the configuration Update last gave it (call
// Update first), after ending what dead instances left when the manager has
// WithRecovery. With catch-up (the default; see WithCatchUp), feeds whose
// last success is older than their interval (or that never succeeded) are
// polled right away instead of waiting for their next tick, so a restart at
// 05:01 does not skip the 05:00 poll. ctx bounds the start only; the
// scheduler runs until Stop.
//
// Start and Stop are the lifecycle of every long-running part of ingestd
// (the dead-letter replayer, the shared breaker state, the origin watch):
// main starts them, and stops them in the shutdown order (scheduler,
// replayer, breaker state, pool).
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	started := m.started
	m.started = true
	m.mu.Unlock()
	if started {
		return errors.New("feeds: manager already started")
	}
	// Before the first tick: a dead predecessor's claims would make this
	// instance skip its feeds until the claims' leases ran out.
	var interrupted []*config.Feed
	beatFrom := m.now()
	if m.recovery != nil {
		interrupted = m.startRecovery(ctx)
	}
	var last map[string]time.Time
	if m.catchUp || m.originSlots != nil {
		var err error
		if last, err = m.lastSuccesses(ctx); err != nil {
			return err
		}
	}
	m.sched.start()
	if m.catchUp {
		overdue := m.overdue(last)
		seen := map[string]bool{}
		for _, f := range interrupted {
			seen[f.Key()] = true
			m.logger.Info("catching up a feed whose poll a dead instance left unfinished", "jurisdiction", f.Jurisdiction, "feed", f.ID)
			m.runAsync(f)
		}
		for _, f := range overdue {
			if !seen[f.Key()] {
				m.logger.Info("catching up overdue feed", "jurisdiction", f.Jurisdiction, "feed", f.ID)
				m.runAsync(f)
			}
		}
	}
	if m.recovery != nil {
		m.recovering = true
		m.loops.Add(1)
		go m.recoveryLoop(beatFrom, m.catchUp)
	}
	return nil
}

// Update makes cfg the running configuration: feeds that are new or changed are
// (re)scheduled, removed feeds stop being scheduled. A poll already running is
// never cancelled by an update, only by Stop.
func (m *Manager) Update(ctx context.Context, cfg *config.Config) error {
	now := m.now()
	feeds := cfg.Feeds()
	infos := make([]FeedInfo, 0, len(feeds))
	for _, f := range feeds {
		infos = append(infos, feedInfo(f, now))
	}
	if err := m.store.RegisterFeeds(ctx, infos); err != nil {
		return fmt.Errorf("feeds: registering feeds: %w", err)
	}
	// Only feeds this instance scheduled under its previous configuration
	// and that cfg drops are marked removed: at start-up (and in one-off
	// commands) there is no previous configuration, and a feed that is
	// only absent from this instance's file may be another instance's.
	if dropped := m.dropped(feeds, now); len(dropped) > 0 {
		if err := m.store.RemoveFeeds(ctx, dropped); err != nil {
			return fmt.Errorf("feeds: marking removed feeds: %w", err)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[string]bool, len(feeds))
	for _, f := range feeds {
		key := f.Key()
		seen[key] = true
		m.metrics.expectedInterval.WithLabelValues(f.Jurisdiction, f.ID).Set(f.ExpectedInterval(now).Seconds())
		if old, ok := m.feeds[key]; ok {
			if reflect.DeepEqual(old.feed, *f) {
				continue
			}
			m.sched.remove(old.entry)
		}
		sched := feedSchedule(f, now, m.maxJitter)
		sf := &scheduledFeed{feed: *f}
		sf.entry = m.sched.add(sched, func(planned time.Time) { m.tick(sf, planned) })
		m.feeds[key] = sf
		m.logger.Debug("feed scheduled", "jurisdiction", f.Jurisdiction, "feed", f.ID,
			"schedule", f.Schedule, "offset", sched.offset, "next", sched.Next(now))
	}
	for key, sf := range m.feeds {
		if !seen[key] {
			m.sched.remove(sf.entry)
			delete(m.feeds, key)
			delete(m.lastOK, key)
			m.metrics.forget(sf.feed.Jurisdiction, sf.feed.ID)
			m.logger.Info("feed unscheduled", "feed", key)
		}
	}
	return nil
}

// dropped returns the scheduled feeds that are not in next.
func (m *Manager) dropped(next []*config.Feed, now time.Time) []FeedInfo {
	keep := make(map[string]bool, len(next))
	for _, f := range next {
		keep[f.Key()] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []FeedInfo
	for key, sf := range m.feeds {
		if !keep[key] {
			out = append(out, feedInfo(&sf.feed, now))
		}
	}
	return out
}

// Stop stops scheduling, cancels polls in flight and waits for them to record
// their outcome. Cancelled polls apply nothing.
func (m *Manager) Stop() {
	m.sched.stop()
	m.cancel()
	m.sched.wait()
	m.loops.Wait()
	m.wg.Wait()
	if m.recovering {
		m.retire()
	}
}

// ErrParked is returned (wrapped) by Poll for a feed whose earlier poll is
// parked in the dead-letter queue: its replay is the feed's one path, and a
// second poll beside it would race it.
var ErrParked = errors.New("feeds: the feed has a parked poll")

// Poll runs one poll of the feed named key ("jurisdiction/feed") now, in the
// caller's goroutine. It returns ErrPollInProgress if the feed is being polled,
// and ErrParked if it has an open dead letter.
func (m *Manager) Poll(ctx context.Context, key string) (PollResult, error) {
	f, ok := m.feed(key)
	if !ok {
		return PollResult{}, fmt.Errorf("feeds: no feed %q in the configuration", key)
	}
	if !m.acquire(key) {
		return PollResult{}, ErrPollInProgress
	}
	defer m.release(key)
	if l, err := m.openLetter(ctx, &f); err != nil {
		return PollResult{}, err
	} else if l != nil {
		return PollResult{}, fmt.Errorf("%w: dead letter %d (%s) is %s until %s; `ingestd deadletter replay %d` replays it now",
			ErrParked, l.ID, l.Reason, l.Status, l.RetryAfter.Format(time.RFC3339), l.ID)
	}
	waited, outcome := m.takeSlots(ctx, &f, false)
	if outcome != originSlotTaken {
		return PollResult{}, fmt.Errorf("feeds: %s: waiting for a poll slot: %w", key, context.Cause(ctx))
	}
	defer m.freeSlots(&f)
	if m.recovery != nil && !m.recovering {
		// A one-off poll (the manager was not started): its heartbeat
		// tells the daemons that it is alive while it runs.
		defer m.beatWhile(ctx)()
	}
	release, ok, err := m.claim(ctx, &f, 0)
	if err != nil {
		return PollResult{}, err
	}
	if !ok {
		return PollResult{}, fmt.Errorf("%w (by another instance)", ErrPollInProgress)
	}
	defer release()
	return m.poll(ctx, &f, nil, waited)
}

// Replay resumes the parked poll of l from its checkpoint: the pages staged
// before the refusal are kept, the fetch continues at the checkpoint's page,
// and the snapshot is applied when the last page is in. It is the daemon's
// deadletter.ReplayFunc; its error tells the replayer what to do with the
// row (see package deadletter). Stop cancels a replay in flight.
func (m *Manager) Replay(ctx context.Context, l *deadletter.Letter) error {
	key := l.Key()
	f, ok := m.feed(key)
	if !ok {
		// Not this instance's feed, which says nothing of the others:
		// the letter goes back untouched (checkpoint, staging and
		// attempts kept) for an instance that knows the feed. Only
		// `ingestd feeds prune` abandons the letters of removed feeds.
		if p, ok := m.letters.(letterPostponer); ok {
			if err := p.Postpone(ctx, l.ID, unknownFeedDelay); err != nil {
				m.logger.Warn("postponing the dead letter of a feed this instance does not know", "feed", key,
					"dead_letter_id", l.ID, "error", err)
			}
		}
		m.logger.Warn("dead letter left for another instance: its feed is not in this instance's configuration",
			"feed", key, "dead_letter_id", l.ID)
		return fmt.Errorf("%w: %s is not in this instance's configuration", deadletter.ErrNotNow, key)
	}
	if !m.acquire(key) {
		return fmt.Errorf("%w: %s is being polled", deadletter.ErrNotNow, key)
	}
	defer m.release(key)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.ctx, cancel)()

	_, err := m.poll(ctx, &f, l, 0)
	if errors.Is(err, ErrCheckpointApplied) {
		// An instance applied it and died before recording the replay.
		m.logger.Info("dead letter already applied", "jurisdiction", f.Jurisdiction, "feed", f.ID, "dead_letter_id", l.ID)
		return nil
	}
	return err
}

func (m *Manager) feed(key string) (config.Feed, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sf, ok := m.feeds[key]
	if !ok {
		return config.Feed{}, false
	}
	return sf.feed, true
}

// openLetter returns f's open dead letter, or nil (always nil without a queue).
func (m *Manager) openLetter(ctx context.Context, f *config.Feed) (*deadletter.Letter, error) {
	if m.letters == nil {
		return nil, nil
	}
	l, err := m.letters.Open(ctx, f.Jurisdiction, f.ID)
	if err != nil {
		return nil, fmt.Errorf("feeds: %s: %w", f.Key(), err)
	}
	return l, nil
}

// tick is a cron activation of sf, planned for planned: it records how
// late it started, then polls.
func (m *Manager) tick(sf *scheduledFeed, planned time.Time) {
	started := m.now()
	m.metrics.schedulerLag.Observe(started.Sub(planned).Seconds())
	if m.tickObserver != nil {
		m.tickObserver(sf.feed.Key(), planned, started)
	}
	m.runScheduled(&sf.feed, planned)
}

// runScheduled polls f for a tick planned at planned (zero: a catch-up),
// unless the tick is to be skipped.
func (m *Manager) runScheduled(f *config.Feed, planned time.Time) {
	outcome := m.runTick(f)
	m.signals.ran.signal(tickRun{Key: f.Key(), Planned: planned, Outcome: outcome})
}

// runTick is runScheduled's work; it returns "polled" or why the tick was
// skipped.
func (m *Manager) runTick(f *config.Feed) string {
	key := f.Key()
	if !m.acquire(key) {
		m.metrics.ticksSkipped.WithLabelValues("running").Inc()
		m.logger.Warn("tick skipped: previous poll still running", "jurisdiction", f.Jurisdiction, "feed", f.ID)
		return "running"
	}
	defer m.release(key)
	// The slot before anything that needs the database: a tick waiting
	// for one holds no claim (another instance may poll the feed meanwhile,
	// and the claim below then finds it polled) and no connection.
	waited, outcome := m.takeSlots(m.ctx, f, true)
	switch outcome {
	case originSlotStopped:
		m.metrics.ticksSkipped.WithLabelValues("stopped").Inc()
		return "stopped"
	case originSlotSkipped:
		m.metrics.ticksSkipped.WithLabelValues(skipReasonOriginBusy).Inc()
		m.logger.Warn("tick skipped: the feed was fresh and its tick waited longer than its interval for one of its origin's poll slots, "+
			"which go to its never-loaded and most overdue feeds first; its next tick waits in its turn", "jurisdiction", f.Jurisdiction, "feed", f.ID,
			"origin", feedInfo(f, time.Time{}).Origin, "interval", f.ExpectedInterval(m.now()))
		return skipReasonOriginBusy
	}
	defer m.freeSlots(f)
	// A parked feed has one path, its dead letter: the replayer resumes it
	// from its checkpoint once the origin may be asked again, which a fresh
	// poll now could only duplicate (or be refused by the same open breaker).
	l, err := m.openLetter(m.ctx, f)
	if err != nil {
		m.logger.Error("tick skipped: cannot read the feed's dead letter", "jurisdiction", f.Jurisdiction, "feed", f.ID, "error", err)
		return "error"
	}
	if l != nil {
		m.metrics.ticksSkipped.WithLabelValues("parked").Inc()
		m.logger.Info("tick skipped: the feed is parked; the dead-letter replayer resumes it", "jurisdiction", f.Jurisdiction,
			"feed", f.ID, "dead_letter_id", l.ID, "dead_letter_status", l.Status, "retry_after", l.RetryAfter)
		return "parked"
	}
	// Several instances fire the same tick (offsets are deterministic):
	// the first claim wins, and a claim within half an interval of the
	// last one is that same tick.
	release, ok, err := m.claim(m.ctx, f, f.ExpectedInterval(m.now())/2)
	if err != nil {
		m.logger.Error("tick skipped: cannot claim the feed", "jurisdiction", f.Jurisdiction, "feed", f.ID, "error", err)
		return "error"
	}
	if !ok {
		m.metrics.ticksSkipped.WithLabelValues("claimed").Inc()
		m.logger.Debug("tick skipped: another instance polls the feed", "jurisdiction", f.Jurisdiction, "feed", f.ID)
		return "claimed"
	}
	defer release()
	_, _ = m.poll(m.ctx, f, nil, waited) // the poll logs and records its own outcome
	return "polled"
}

// takeSlots waits for f's origin's slot (WithOriginPollSlots), then for
// a poll slot (WithPollSlots), and returns how long it waited in all. It
// holds both when the outcome is originSlotTaken and neither otherwise:
// ctx ended first, or (skippable) the feed was fresh and its tick waited
// longer than its interval for the origin. freeSlots gives them back.
func (m *Manager) takeSlots(ctx context.Context, f *config.Feed, skippable bool) (waited time.Duration, outcome originSlotOutcome) {
	from := m.now()
	origin := feedInfo(f, from).Origin
	if outcome := m.takeOriginSlot(ctx, origin, f, skippable); outcome != originSlotTaken {
		return 0, outcome
	}
	if _, ok := m.takeSlot(ctx); !ok {
		m.freeOriginSlot(origin)
		return 0, originSlotStopped
	}
	return m.now().Sub(from), originSlotTaken
}

// freeSlots gives back the slots takeSlots took for f.
func (m *Manager) freeSlots(f *config.Feed) {
	m.freeSlot()
	m.freeOriginSlot(feedInfo(f, time.Time{}).Origin)
}

// takeOriginSlot counts one more poll of origin, for f, once origin runs
// fewer than its bound and f is the waiter that needs the slot most (see
// originGate). A skippable wait of a feed fresh when it began ends with
// originSlotSkipped once it has lasted longer than f's interval (see
// dispatch).
func (m *Manager) takeOriginSlot(ctx context.Context, origin string, f *config.Feed, skippable bool) originSlotOutcome {
	if m.originSlots == nil {
		return originSlotTaken
	}
	limit := m.originSlots(origin)
	now := m.now()
	key := f.Key()
	m.mu.Lock()
	g := m.origins[origin]
	if g == nil {
		g = &originGate{}
		m.origins[origin] = g
	}
	w := &originWaiter{
		feed:     key,
		lastOK:   m.lastOK[key],
		interval: f.ExpectedInterval(now),
		queued:   now,
		done:     make(chan struct{}),
	}
	w.skippable = skippable && !w.lastOK.IsZero() && now.Sub(w.lastOK) <= w.interval
	g.waiting = append(g.waiting, w)
	m.dispatch(g, limit, now)
	if w.granted {
		m.mu.Unlock()
		return originSlotTaken
	}
	m.mu.Unlock()
	m.metrics.slotWaiting.Inc()
	defer m.metrics.slotWaiting.Dec()
	m.signals.originWaiting.signal(key)
	select {
	case <-w.done:
	case <-ctx.Done():
		m.mu.Lock()
		select {
		case <-w.done:
			// Decided as ctx ended: a slot handed over goes on to the
			// next waiter, not back to nobody.
			if w.granted {
				m.mu.Unlock()
				m.freeOriginSlot(origin)
				return originSlotStopped
			}
		default:
			g.remove(w)
		}
		m.mu.Unlock()
		return originSlotStopped
	}
	m.mu.Lock()
	granted := w.granted
	m.mu.Unlock()
	if granted {
		return originSlotTaken
	}
	return originSlotSkipped
}

// freeOriginSlot ends a poll of origin counted by takeOriginSlot and hands
// the slot on.
func (m *Manager) freeOriginSlot(origin string) {
	if m.originSlots == nil {
		return
	}
	limit := m.originSlots(origin)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.origins[origin]; g != nil {
		g.running--
		m.dispatch(g, limit, now)
	}
}

// dispatch decides what it can of g's waiters at now, under mu. First it
// lets go the skippable waiters that have waited longer than their
// feed's interval: their feed's next tick has come and gone ("running")
// meanwhile, and one more poll of a fresh feed must not hold the slot an
// overdue or never-loaded one waits for; that next tick then comes as an
// overdue feed's and waits in its turn. Then, while g runs fewer polls
// than limit (0 or less: no bound), it hands a slot to the waiter first
// by originWaiter.before, the earliest among equals.
func (m *Manager) dispatch(g *originGate, limit int, now time.Time) {
	kept := g.waiting[:0]
	for _, w := range g.waiting {
		if w.skippable && now.Sub(w.queued) > w.interval {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
	for len(g.waiting) > 0 && (limit <= 0 || g.running < limit) {
		best := 0
		for i, w := range g.waiting[1:] {
			if w.before(g.waiting[best], now) {
				best = i + 1
			}
		}
		w := g.waiting[best]
		g.remove(w)
		g.running++
		w.granted = true
		close(w.done)
	}
}

// remove takes w out of g's waiters, keeping their arrival order.
func (g *originGate) remove(w *originWaiter) {
	for i, v := range g.waiting {
		if v == w {
			copy(g.waiting[i:], g.waiting[i+1:])
			g.waiting[len(g.waiting)-1] = nil
			g.waiting = g.waiting[:len(g.waiting)-1]
			return
		}
	}
}

// noteSuccess records that a poll of the feed named key succeeded at t,
// for the order of the ticks waiting for its origin's slot.
func (m *Manager) noteSuccess(key string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.After(m.lastOK[key]) {
		m.lastOK[key] = t
	}
}

// takeSlot waits for one of the instance's poll slots (WithPollSlots) and
// returns how long it waited; ok is false when ctx ended first. Without a
// bound it returns at once.
func (m *Manager) takeSlot(ctx context.Context) (waited time.Duration, ok bool) {
	if m.slots == nil {
		return 0, true
	}
	select {
	case m.slots <- struct{}{}:
		return 0, true
	default:
	}
	from := m.now()
	m.metrics.slotWaiting.Inc()
	defer m.metrics.slotWaiting.Dec()
	select {
	case m.slots <- struct{}{}:
		return m.now().Sub(from), true
	case <-ctx.Done():
		return 0, false
	}
}

// freeSlot gives back the slot takeSlot took.
func (m *Manager) freeSlot() {
	if m.slots != nil {
		<-m.slots
	}
}

// claim claims f for a poll by this instance (see Store.ClaimPoll); release
// ends the claim, even when ctx has ended.
func (m *Manager) claim(ctx context.Context, f *config.Feed, minGap time.Duration) (release func(), ok bool, err error) {
	info := feedInfo(f, m.now())
	// The lease outlives the poll's longest run, so it lapses only when the
	// instance died.
	ok, err = m.store.ClaimPoll(ctx, info, m.instance, longestPoll(f), minGap)
	if err != nil || !ok {
		return nil, ok, err
	}
	return func() {
		// A claim left behind keeps every other instance and every one-off
		// poll off the feed for the rest of its lease (the poll's longest
		// run), so the release waits its turn for a connection: when a
		// catch-up of hundreds of feeds keeps the pool busy, a release that
		// gave up after a few seconds left dozens of feeds claimed after the
		// polls had ended. A release ends only when done or past releaseWait.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWait)
		defer cancel()
		if err := m.store.ReleasePoll(rctx, info, m.instance); err != nil {
			m.logger.Error("releasing poll claim: the feed stays claimed until its lease ends", "jurisdiction", f.Jurisdiction,
				"feed", f.ID, "error", err)
		}
	}, true, nil
}

// releaseWait bounds a poll claim's release: long enough to wait for a
// connection of a busy pool, short enough that a database gone for good
// does not hold a shutdown for the lease's length.
const releaseWait = 2 * time.Minute

func (m *Manager) runAsync(f *config.Feed) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.runScheduled(f, time.Time{})
	}()
}

func (m *Manager) acquire(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running[key] {
		return false
	}
	m.running[key] = true
	m.wg.Add(1)
	return true
}

func (m *Manager) release(key string) {
	m.mu.Lock()
	delete(m.running, key)
	m.mu.Unlock()
	m.wg.Done()
}

// lastSuccesses reads every feed's last success from the database, keeps
// it for the order of the ticks waiting for an origin's slot, and sets the
// last-success gauges of the scheduled feeds from it.
func (m *Manager) lastSuccesses(ctx context.Context) (map[string]time.Time, error) {
	last, err := m.store.LastSuccess(ctx)
	if err != nil {
		return nil, fmt.Errorf("feeds: reading last successes: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, sf := range m.feeds {
		t, ok := last[key]
		if !ok {
			continue
		}
		if t.After(m.lastOK[key]) {
			m.lastOK[key] = t
		}
		// The stale alert compares this gauge: after a restart it
		// starts from the database, not from nothing.
		m.metrics.lastSuccess.WithLabelValues(sf.feed.Jurisdiction, sf.feed.ID).Set(float64(t.Unix()))
	}
	return last, nil
}

// overdue lists the scheduled feeds whose last success (in last) is older
// than their expected interval, or that never succeeded.
func (m *Manager) overdue(last map[string]time.Time) []*config.Feed {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*config.Feed
	for key, sf := range m.feeds {
		t, ok := last[key]
		if !ok || now.Sub(t) > sf.feed.ExpectedInterval(now) {
			out = append(out, &sf.feed)
		}
	}
	return out
}

// Healthy reports whether the manager still responds: its lock can be taken
// and its scheduler has not been stopped. The systemd watchdog pings only
// while it does, so a wedged process is restarted.
func (m *Manager) Healthy(ctx context.Context) error {
	locked := make(chan struct{})
	go func() {
		m.mu.Lock()
		m.mu.Unlock() // an empty critical section: taking the lock is the probe
		close(locked)
	}()
	select {
	case <-locked:
	case <-ctx.Done():
		return fmt.Errorf("feeds: manager lock not acquired: %w", ctx.Err())
	}
	if m.ctx.Err() != nil {
		return errors.New("feeds: manager stopped")
	}
	return nil
}
