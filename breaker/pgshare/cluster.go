// Package pgshare shares the breaker's verdicts between ingestd instances
// through PostgreSQL (the breaker_state table): open verdicts and their
// open_until, the one half-open probe lease of the cluster, operator
// overrides, the LISTEN/NOTIFY cache with its clock-skew estimate, the
// asynchronous writer, and the OriginWatch that flags origins stuck open.
// A Cluster implements breaker.Shared; the breaker core imports no database
// client.
package pgshare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/scrubrows"
	"github.com/ingestd/ingestd/redact"
)

var _ breaker.Shared = (*Cluster)(nil)

// realClock is the default clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// notifyChannel is the channel breaker_state's trigger notifies, with the
// origin as payload (migration 00006).
const notifyChannel = "ingestd_breaker_state"

func parseState(s string) breaker.State {
	switch s {
	case "open":
		return breaker.StateOpen
	case "half-open":
		return breaker.StateHalfOpen
	}
	return breaker.StateClosed
}

// Option configures a Cluster.
type Option func(*options)

type options struct {
	refresh time.Duration
	lease   time.Duration
	timeout time.Duration
	clock   breaker.Clock
	resume  ResumeFunc
	secrets *redact.Secrets
}

// Defaults of the shared state's timings, which `ingestd run` can change.
const (
	// DefaultRefreshInterval is how often every row is re-read.
	DefaultRefreshInterval = 5 * time.Second
	// DefaultProbeLease is how long a probe lease lasts unless renewed.
	DefaultProbeLease = 30 * time.Second
	// DefaultQueryTimeout bounds each statement of the shared state.
	DefaultQueryTimeout = time.Second
)

// ResumeFunc brings forward the work that an origin's open verdict held
// back, so that it is due at notBefore (now when notBefore is zero or past),
// and returns how many items it moved. (*deadletter.Queue).Expedite is one;
// main wires it, since breaker imports no other ingestd package.
type ResumeFunc func(ctx context.Context, origin string, notBefore time.Time) (int64, error)

// WithResume sets what SetOverride calls when an operator lifts an open
// override (sets closed or none): polls the override refused were parked
// until it would have ended, or OpenMax, which then holds nothing back.
func WithResume(fn ResumeFunc) Option {
	return func(o *options) { o.resume = fn }
}

// WithSecrets scrubs secrets (the configuration's credentials, a set the
// caller keeps up to date) by value from the texts the shared state writes:
// breaker_state.last_error and override_reason.
func WithSecrets(secrets *redact.Secrets) Option {
	return func(o *options) { o.secrets = secrets }
}

// WithClock sets the clock the shared state times its cache and its
// database-clock estimate with (default: the real clock). A Registry built
// on the Cluster without a Clock of its own uses this one.
func WithClock(c breaker.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithRefreshInterval sets how often every row is re-read, the fallback for
// notifications lost while the listening connection was down (default 5 s).
func WithRefreshInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.refresh = d
		}
	}
}

// WithProbeLease sets the probe lease (default 30 s). Its holder renews it
// every third of it while the probe runs, so it bounds how long the death of
// a prober stalls recovery, not how long a probe may take.
func WithProbeLease(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.lease = d
		}
	}
}

// WithQueryTimeout bounds each database statement (default 1 s); taking the
// probe lease is the only one that runs on a caller's path.
func WithQueryTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// Cluster shares breaker verdicts between ingestd instances through the
// breaker_state table: open verdicts with their open_until, the lease for the
// one half-open probe of the cluster, and manual overrides. Build one with
// New, pass it in Config.Shared, Start it, and Stop it after the
// callers have stopped and before the pool closes.
//
// Do never queries the database: it reads a cache that a LISTEN connection
// refreshes within milliseconds of a write and a periodic reload refreshes
// as a fallback. Writes (trips, failed probes, closes) go out asynchronously.
// The only statement on a caller's path is taking the probe lease, once per
// cooldown per instance, bounded by the query timeout. While the database is
// unreachable each instance's own breaker decides (cached verdicts still
// refuse until their time).
type Cluster struct {
	pool   *pgxpool.Pool
	id     string
	logger *slog.Logger
	opts   options
	sql    verdictSQL

	writes chan breaker.Publication

	mu        sync.RWMutex
	rows      map[string]cachedVerdict
	gen       uint64        // bumped on every change of rows; origins compare it
	skew      time.Duration // database clock minus local clock
	skewRTT   time.Duration // round trip of the sample skew came from
	skewAt    time.Time     // when that sample was taken
	reachable bool
	known     bool                           // reachability has been observed once
	pending   map[string]breaker.Publication // writes that failed, retried on the next reload
	ctx       context.Context                // lives from Start to Stop
	cancel    context.CancelFunc
	closed    bool

	wg sync.WaitGroup
}

type cachedVerdict struct {
	v   breaker.Verdict
	gen uint64
	at  time.Time // local time the entry was stored
}

// New returns a Cluster on pool for the instance id
// (host:pid); logger may be nil. It starts nothing: call Start for the
// cache, or use it as is for SetOverride and Verdicts (the CLI).
func New(pool *pgxpool.Pool, instanceID string, logger *slog.Logger, opts ...Option) *Cluster {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := options{refresh: DefaultRefreshInterval, lease: DefaultProbeLease, timeout: DefaultQueryTimeout, clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	return &Cluster{
		pool:    pool,
		id:      instanceID,
		logger:  logger.With("instance", instanceID),
		opts:    o,
		sql:     loadVerdictSQL(),
		writes:  make(chan breaker.Publication, 1024),
		rows:    make(map[string]cachedVerdict),
		pending: make(map[string]breaker.Publication),
	}
}

// since is the time elapsed on the shared state's clock since t.
func (s *Cluster) since(t time.Time) time.Duration { return s.opts.clock.Now().Sub(t) }

// InstanceID returns the id this instance writes into probe_owner and updated_by.
func (s *Cluster) InstanceID() string { return s.id }

// ErrStarted is returned by a second Start, or a Start after Stop.
var ErrStarted = errors.New("breaker: shared state already started or closed")

// Start loads every verdict, so that an origin left open by a previous run
// stays open until its time without a request, then starts listening for
// changes, reloading periodically and writing verdicts. The loops run until
// Stop, whatever happens to ctx, which bounds only the initial load. A
// failed load is returned, but the loops run regardless and keep retrying:
// a caller may carry on with local breakers.
func (s *Cluster) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.cancel != nil || s.closed {
		s.mu.Unlock()
		return ErrStarted
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	loops := s.ctx
	s.mu.Unlock()

	// LISTEN before the load, so that no write falls between the two.
	conn, err := s.connectListener(ctx)
	if err == nil {
		err = s.reload(ctx)
	} else {
		s.setReachable(false, err)
	}
	s.wg.Add(3)
	go s.listen(loops, conn)
	go s.refreshLoop(loops)
	go s.writer(loops)
	if err != nil {
		return fmt.Errorf("breaker: shared state: initial load: %w", err)
	}
	return nil
}

// Stop stops the loops after writing out the verdicts already queued (within
// a few query timeouts). It does not release probe leases that calls still in
// flight hold: those calls release them when they end, or the lease expires.
// Stop it after everything that makes requests and before the pool closes;
// it is safe to call on a state never started (the CLI's).
func (s *Cluster) Stop() {
	s.mu.Lock()
	s.closed = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
}

// noteSkewLocked estimates the database clock's offset from a query's answer:
// dbNow was read somewhere within the round trip, so the midpoint is off by up
// to half of it. Like NTP, keep the sample with the shortest round trip — on
// a loaded machine a query can take hundreds of milliseconds, which would
// shift every open_until by as much. Samples age, in case either clock is
// stepped: after a minute a comparable one (at most twice the best round trip,
// or 50 ms) replaces the best, after ten minutes any does. Needs mu.
func (s *Cluster) noteSkewLocked(dbNow, sent time.Time, rtt time.Duration) {
	now := sent.Add(rtt)
	age := now.Sub(s.skewAt)
	if s.skewAt.IsZero() || rtt <= s.skewRTT ||
		(age > time.Minute && rtt <= max(2*s.skewRTT, 50*time.Millisecond)) || age > 10*time.Minute {
		s.skew = dbNow.Sub(sent.Add(rtt / 2))
		s.skewRTT, s.skewAt = rtt, now
	}
}

// View returns origin's cached verdict, with the clock skew and whether the
// database was reachable at the last query.
func (s *Cluster) View(origin string) breaker.SharedView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.rows[origin]
	return breaker.SharedView{Verdict: c.v, Exists: ok, Gen: c.gen, Skew: s.skew, Reachable: s.reachable}
}

// Clock returns the clock the cluster state times its cache with.
func (s *Cluster) Clock() breaker.Clock { return s.opts.clock }

// LeaseDuration is the probe lease the instance asks for.
func (s *Cluster) LeaseDuration() time.Duration { return s.opts.lease }

// loopContext returns the context of the running loops, or nil before Start
// and after Stop.
func (s *Cluster) loopContext() context.Context {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || s.ctx == nil {
		return nil
	}
	return s.ctx
}

func (s *Cluster) setReachable(ok bool, err error) {
	s.mu.Lock()
	changed := !s.known || s.reachable != ok
	s.known, s.reachable = true, ok
	closed := s.closed
	s.mu.Unlock()
	if !changed || (closed && !ok) {
		return
	}
	if ok {
		s.logger.Info("breaker shared state reachable: verdicts are shared")
	} else {
		s.logger.Warn("breaker shared state unreachable: each instance's breakers decide alone", "error", err)
	}
}

// store puts a row read by a query sent at local time sent and answered after
// rtt (database time dbNow) into the cache unless the cache holds a newer
// version, and logs override changes.
func (s *Cluster) store(v breaker.Verdict, dbNow, sent time.Time, rtt time.Duration) {
	s.mu.Lock()
	s.noteSkewLocked(dbNow, sent, rtt)
	prev, had := s.rows[v.Origin]
	if had && prev.v.Version >= v.Version {
		s.mu.Unlock()
		return
	}
	s.gen++
	s.rows[v.Origin] = cachedVerdict{v: v, gen: s.gen, at: s.opts.clock.Now()}
	s.mu.Unlock()
	if prev.v.Override != v.Override || !prev.v.OverrideUntil.Equal(v.OverrideUntil) || prev.v.OverrideReason != v.OverrideReason {
		if !had && v.Override == breaker.OverrideNone {
			return
		}
		s.logger.Warn("breaker override",
			slog.String("origin", v.Origin),
			slog.String("override", v.Override.String()),
			slog.String("previous", prev.v.Override.String()),
			slog.Time("override_until", v.OverrideUntil),
			slog.String("reason", v.OverrideReason),
			slog.String("by", v.OverrideBy),
		)
	}
}

// forget marks a row that disappeared as closed, so that an origin held open
// by it closes; a later row of the origin has a higher version.
func (s *Cluster) forget(origin string, before time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.rows[origin]
	if !ok || !c.at.Before(before) || c.v.Origin == "" {
		return
	}
	s.gen++
	s.rows[origin] = cachedVerdict{v: breaker.Verdict{Version: c.v.Version}, gen: s.gen, at: s.opts.clock.Now()}
}

// scanVerdict reads a row in the column order of every statement in
// sql/verdicts.sql, the database's clock_timestamp() last.
func scanVerdict(row pgx.Row) (breaker.Verdict, time.Time, error) {
	var (
		v                                                breaker.Verdict
		state, override                                  string
		openedAt, openUntil, probeUntil, ovUntil, ovAt   *time.Time
		probeOwner, ovReason, ovBy, updatedBy, lastError *string
		dbNow                                            time.Time
	)
	err := row.Scan(&v.Origin, &state, &openedAt, &openUntil, &v.ConsecutiveOpens, &probeOwner, &probeUntil,
		&override, &ovUntil, &ovReason, &ovBy, &ovAt, &v.UpdatedAt, &updatedBy, &lastError, &v.Version, &dbNow)
	if err != nil {
		return breaker.Verdict{}, time.Time{}, err
	}
	v.State = parseState(state)
	v.Override, _ = breaker.ParseOverride(override) // the CHECK constraint admits only known values
	v.OpenedAt, v.OpenUntil, v.ProbeUntil = deref(openedAt), deref(openUntil), deref(probeUntil)
	v.OverrideUntil, v.OverrideAt = deref(ovUntil), deref(ovAt)
	v.ProbeOwner, v.OverrideReason, v.OverrideBy = deref(probeOwner), deref(ovReason), deref(ovBy)
	v.UpdatedBy, v.LastError = deref(updatedBy), deref(lastError)
	return v, dbNow, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// queryRow runs a statement that returns at most one breaker_state row and
// caches it. It returns ok=false when no row came back.
func (s *Cluster) queryRow(ctx context.Context, sql string, args ...any) (breaker.Verdict, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	readAt := s.opts.clock.Now()
	v, dbNow, err := scanVerdict(s.pool.QueryRow(ctx, sql, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		s.setReachable(true, nil)
		return breaker.Verdict{}, false, nil
	}
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.setReachable(false, err)
		}
		return breaker.Verdict{}, false, err
	}
	s.setReachable(true, nil)
	s.store(v, dbNow, readAt, s.since(readAt))
	return v, true, nil
}

// refreshOrigin re-reads one origin's row after a notification.
func (s *Cluster) refreshOrigin(ctx context.Context, origin string) error {
	started := s.opts.clock.Now()
	_, ok, err := s.queryRow(ctx, s.sql.selectOrigin, origin)
	if err == nil && !ok {
		s.forget(origin, started)
	}
	return err
}

// reload re-reads every row.
func (s *Cluster) reload(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*s.opts.timeout)
	defer cancel()
	started := s.opts.clock.Now()
	rows, err := s.pool.Query(ctx, s.sql.selectAll)
	if err != nil {
		s.setReachable(false, err)
		return err
	}
	defer rows.Close()
	seen := make(map[string]bool)
	for rows.Next() {
		v, dbNow, err := scanVerdict(rows)
		if err != nil {
			s.setReachable(false, err)
			return err
		}
		seen[v.Origin] = true
		s.store(v, dbNow, started, s.since(started))
	}
	if err := rows.Err(); err != nil {
		s.setReachable(false, err)
		return err
	}
	s.setReachable(true, nil)
	s.mu.RLock()
	var gone []string
	for o := range s.rows {
		if !seen[o] {
			gone = append(gone, o)
		}
	}
	s.mu.RUnlock()
	for _, o := range gone {
		s.forget(o, started)
	}
	return nil
}

// listen keeps a dedicated connection LISTENing and re-reads each notified
// origin. After every reconnection it reloads everything, because
// notifications sent while it was away are lost. conn may be nil.
func (s *Cluster) listen(ctx context.Context, conn *pgx.Conn) {
	defer s.wg.Done()
	const firstBackoff = 200 * time.Millisecond
	backoff := firstBackoff
	for ctx.Err() == nil {
		var err error
		if conn == nil {
			if conn, err = s.connectListener(ctx); err == nil {
				err = s.reload(ctx)
			}
		}
		if conn != nil {
			if err == nil {
				backoff = firstBackoff
				err = s.waitNotifications(ctx, conn)
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), s.opts.timeout)
			conn.Close(closeCtx)
			cancel()
			conn = nil
		}
		if ctx.Err() != nil {
			return
		}
		s.setReachable(false, err)
		if sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, s.opts.refresh)
	}
}

// connectListener opens the dedicated connection (outside the pool, which
// must not lose a connection for good) and LISTENs.
func (s *Cluster) connectListener(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*s.opts.timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(cctx)
		return nil, err
	}
	return conn, nil
}

func (s *Cluster) waitNotifications(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		// A failed re-read marks the state unreachable; the periodic reload
		// catches up, so the listener keeps going.
		_ = s.refreshOrigin(ctx, n.Payload)
	}
}

// refreshLoop reloads every row periodically and retries failed writes.
func (s *Cluster) refreshLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		retry := s.pending
		s.pending = make(map[string]breaker.Publication)
		s.mu.Unlock()
		for _, w := range retry {
			s.do(ctx, w)
		}
		_ = s.reload(ctx)
	}
}

// Publish hands a write to the writer without ever blocking the caller; a
// newer write of the same origin supersedes one that failed earlier.
func (s *Cluster) Publish(w breaker.Publication) {
	s.mu.Lock()
	delete(s.pending, w.Origin)
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	select {
	case s.writes <- w:
	default:
		s.logger.Error("breaker shared state: write queue full, verdict not shared",
			"origin", w.Origin, "kind", int(w.Kind))
	}
}

// DropPending forgets a failed write of origin that a local decision made moot.
func (s *Cluster) DropPending(origin string) {
	s.mu.Lock()
	delete(s.pending, origin)
	s.mu.Unlock()
}

func (s *Cluster) writer(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case w := <-s.writes:
			// Not ctx: a write under way when Stop comes must finish (the
			// query timeout bounds it).
			s.do(context.Background(), w)
		case <-ctx.Done():
			// Write out what is queued: a trip noticed during shutdown must
			// still reach the other instances.
			drain, cancel := context.WithTimeout(context.Background(), 3*s.opts.timeout)
			defer cancel()
			for {
				select {
				case w := <-s.writes:
					if drain.Err() == nil {
						s.do(drain, w)
					}
				default:
					return
				}
			}
		}
	}
}

func (s *Cluster) do(ctx context.Context, w breaker.Publication) {
	var err error
	var ok bool
	switch w.Kind {
	case breaker.PublishOpen:
		_, _, err = s.queryRow(ctx, s.sql.open, w.Origin, w.Open.Seconds(), w.Opens, s.id, nullIfEmpty(w.LastError))
		ok = true
	case breaker.PublishClose:
		_, ok, err = s.queryRow(ctx, s.sql.close, w.Origin, s.id)
	case breaker.PublishRelease:
		_, ok, err = s.queryRow(ctx, s.sql.release, w.Origin, s.id)
	}
	if err != nil {
		s.logger.Warn("breaker shared state: write failed, retrying on the next reload",
			"origin", w.Origin, "kind", int(w.Kind), "error", err)
		s.mu.Lock()
		if _, newer := s.pending[w.Origin]; !newer {
			s.pending[w.Origin] = w
		}
		s.mu.Unlock()
		return
	}
	if !ok {
		// The lease was no longer ours (it expired and another instance took
		// it): that instance decides. Read what it holds.
		_ = s.refreshOrigin(ctx, w.Origin)
	}
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AcquireLease tries to take the probe lease of origin, deciding from the
// row at version seen. It returns whether it won; either way the cache holds
// the row as it now stands. Each statement is bounded by the query timeout.
func (s *Cluster) AcquireLease(ctx context.Context, origin string, opens int, seen int64) (bool, error) {
	_, won, err := s.queryRow(ctx, s.sql.lease, origin, s.id, s.opts.lease.Seconds(), opens, seen)
	if err != nil || won {
		return won, err
	}
	return false, s.refreshOrigin(ctx, origin)
}

// renewLease extends the lease every third of its length until ctx ends or
// the lease is no longer ours.
func (s *Cluster) renewLease(ctx context.Context, origin string) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, ok, err := s.queryRow(ctx, s.sql.renew, origin, s.id, s.opts.lease.Seconds()); err == nil && !ok {
			return
		}
	}
}

// RenewLease starts renewing origin's lease; the returned func stops it.
// It returns a no-op when the loops are not running.
func (s *Cluster) RenewLease(origin string) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.wg.Add(1)
	go s.renewLease(ctx, origin)
	return cancel
}

// OverrideRequest is a manual override of one origin's breaker.
type OverrideRequest struct {
	// Origin is scheme://host:port (see breaker.ParseOrigin).
	Origin   string
	Override breaker.Override
	// For bounds the override (0: until changed). Ignored for breaker.OverrideNone.
	For time.Duration
	// Reason says why, for the log and for `ingestd breaker list`.
	Reason string
	// By says who; empty means the Cluster's instance id.
	By string
}

// OverrideResult is what SetOverride did.
type OverrideResult struct {
	// Verdict is the origin's row as the override left it.
	breaker.Verdict
	// Resumed counts the parked items that WithResume's func brought
	// forward, due at ResumeAt (zero: now).
	Resumed  int64
	ResumeAt time.Time
}

// SetOverride persists an override; every running instance honours it within
// a second (NOTIFY) or at worst one refresh interval. breaker.OverrideClosed also
// clears the automatic verdict: an operator who vouches for an origin means
// it to be closed when the override lapses, not to resume an old open.
//
// Lifting an override (closed or none) also resumes, through WithResume's
// func, the work parked while the origin was refused: now, or at the end of
// the breaker's own cooldown when none hands the origin back to an open
// breaker (a replay refused again would only spend an attempt). An error of
// that func is returned with the result of the override, which stands.
func (s *Cluster) SetOverride(ctx context.Context, req OverrideRequest) (OverrideResult, error) {
	v, err := s.setOverride(ctx, req)
	if err != nil || req.Override == breaker.OverrideOpen || s.opts.resume == nil {
		return OverrideResult{Verdict: v}, err
	}
	res := OverrideResult{Verdict: v}
	if req.Override == breaker.OverrideNone && v.State != breaker.StateClosed {
		res.ResumeAt = v.OpenUntil
	}
	res.Resumed, err = s.opts.resume(ctx, v.Origin, res.ResumeAt)
	if err != nil {
		return res, fmt.Errorf("breaker: override %s: resuming parked work: %w", v.Origin, err)
	}
	return res, nil
}

func (s *Cluster) setOverride(ctx context.Context, req OverrideRequest) (breaker.Verdict, error) {
	origin, err := breaker.ParseOrigin(req.Origin)
	if err != nil {
		return breaker.Verdict{}, err
	}
	if req.Override < breaker.OverrideNone || req.Override > breaker.OverrideClosed {
		return breaker.Verdict{}, fmt.Errorf("%w: %d", breaker.ErrBadOverride, int(req.Override))
	}
	if req.For < 0 {
		return breaker.Verdict{}, fmt.Errorf("%w: negative duration %s", breaker.ErrBadOverride, req.For)
	}
	if req.Override == breaker.OverrideNone {
		req.For = 0
	}
	by := req.By
	if by == "" {
		by = s.id
	}
	ctx, cancel := context.WithTimeout(ctx, 10*s.opts.timeout)
	defer cancel()
	readAt := s.opts.clock.Now()
	v, dbNow, err := scanVerdict(s.pool.QueryRow(ctx, s.sql.override,
		origin, req.Override.String(), req.For.Seconds(), nullIfEmpty(s.opts.secrets.Text(req.Reason)), by))
	if err != nil {
		return breaker.Verdict{}, fmt.Errorf("breaker: override %s: %w", origin, err)
	}
	s.store(v, dbNow, readAt, s.since(readAt))
	s.logger.Warn("breaker override set",
		slog.String("origin", origin),
		slog.String("override", req.Override.String()),
		slog.Time("override_until", v.OverrideUntil),
		slog.String("reason", s.opts.secrets.Text(req.Reason)),
		slog.String("by", by),
	)
	return v, nil
}

// Verdicts reads every row of breaker_state from the database (not the
// cache), sorted by origin, with the database's current time.
func (s *Cluster) Verdicts(ctx context.Context) ([]breaker.Verdict, time.Time, error) {
	rows, err := s.pool.Query(ctx, s.sql.selectSorted)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("breaker: read verdicts: %w", err)
	}
	defer rows.Close()
	var out []breaker.Verdict
	now := s.opts.clock.Now()
	for rows.Next() {
		v, dbNow, err := scanVerdict(rows)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("breaker: read verdicts: %w", err)
		}
		out = append(out, v)
		now = dbNow
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("breaker: read verdicts: %w", err)
	}
	return out, now, nil
}

// RedactError is err's text for breaker_state.last_error, which anyone with
// SQL access reads: every URL in it redacted and every secret scrubbed by
// value (redact.Secrets.Error), cut to 1000 bytes on a rune boundary so
// that the column stays UTF-8.
func (s *Cluster) RedactError(err error) string {
	if err == nil {
		return ""
	}
	msg := s.opts.secrets.Error(err)
	if len(msg) > 1000 {
		cut := 1000
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return msg
}

// ScrubSecrets replaces every secret of secrets, in any of its spellings,
// by REDACTED in the texts breaker_state holds (last_error,
// override_reason), and returns how many rows it changed: what versions
// that did not scrub by value stored.
func (s *Cluster) ScrubSecrets(ctx context.Context, secrets *redact.Secrets) (int64, error) {
	read, write := loadScrubSQL()
	n, err := scrubrows.Scrub(ctx, s.pool, secrets, read, write)
	if err != nil {
		return n, fmt.Errorf("breaker: scrub stored secrets: %w", err)
	}
	return n, nil
}
