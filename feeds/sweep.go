package feeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/config"
)

// DefaultHeartbeat is how often an instance with WithRecovery renews its
// liveness row and sweeps for dead instances' work. Its TTL is
// heartbeatTTLs of it: a dead instance on another host is recognised within
// about a minute and a quarter; one on this host at once.
const DefaultHeartbeat = 15 * time.Second

// heartbeatTTLs is how many heartbeats an instance may miss before others
// take it for dead.
const heartbeatTTLs = 4

// unknownFeedStale is the age after which a running poll of a feed this
// instance does not configure, whose owner says nothing of its liveness, is
// taken as abandoned: the default timeout (10 min) and the claim's minute,
// with room for longer timeouts.
const unknownFeedStale = time.Hour

// WithRecovery makes the manager keep a heartbeat as its instance in r and
// end what dead instances left: at Start, before catching up, and then at
// every heartbeat (every; 0 means DefaultHeartbeat). A claim or a running
// poll is a dead instance's when its owner is on this host and its process
// is gone, when its owner's heartbeat lapsed, or (an owner without a
// heartbeat row) when it outlived its lease; and this instance's own when
// the feed is not being polled here (its outcome could not be recorded, e.g.
// PostgreSQL was down). Such polls end as failed ("interrupted: ..."), their
// staging is deleted, the claims are released, and with catch-up the feeds
// are polled at once instead of at their next tick.
func WithRecovery(r Recovery, every time.Duration) Option {
	return func(m *Manager) {
		if every <= 0 {
			every = DefaultHeartbeat
		}
		m.recovery, m.beat = r, every
	}
}

// startRecovery writes the first heartbeat and ends the work of dead
// instances; it returns the feeds to poll now.
func (m *Manager) startRecovery(ctx context.Context) []*config.Feed {
	m.heartbeat(ctx)
	return m.sweep(ctx)
}

// recoveryLoop heartbeats and sweeps at every beat after from, on the
// manager's clock, until the manager stops.
func (m *Manager) recoveryLoop(from time.Time, catchUp bool) {
	defer m.loops.Done()
	next := from
	for {
		next = nextBeat(next, m.now(), m.beat)
		select {
		case <-m.ctx.Done():
			return
		case <-m.clock.At(next):
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.beat)
		m.heartbeat(ctx)
		again := m.sweep(ctx)
		cancel()
		if catchUp {
			for _, f := range again {
				m.runAsync(f)
			}
		}
		m.signals.swept.signal(next)
	}
}

// nextBeat is the beat after last or, when the loop fell behind, the latest
// beat due by now: like a ticker, it runs once at once and skips the beats
// it missed.
func nextBeat(last, now time.Time, every time.Duration) time.Time {
	next := last.Add(every)
	if next.Before(now) {
		next = next.Add(now.Sub(next).Truncate(every))
	}
	return next
}

// beatWhile keeps this instance's heartbeat until the returned func is
// called, which retires it.
func (m *Manager) beatWhile(ctx context.Context) (stop func()) {
	m.heartbeat(ctx)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	from := m.now()
	go func() {
		defer close(done)
		for next := from; ; {
			next = nextBeat(next, m.now(), m.beat)
			select {
			case <-ctx.Done():
				return
			case <-m.clock.At(next):
				m.heartbeat(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
		m.retire()
	}
}

// retire deletes this instance's liveness row once its polls have ended: a
// clean shutdown is not a death. What the database still lists as this
// instance's is ended first (endLeftovers).
func (m *Manager) retire() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.endLeftovers(ctx)
	if err := m.recovery.Retire(ctx, m.instance); err != nil {
		m.logger.Warn("retiring this instance's heartbeat", "instance", m.instance, "error", err)
	}
}

// endLeftovers ends the running polls and claims the database still lists
// as this instance's once none of its polls runs: a poll whose start was
// committed while the stop cancelled it never learnt its id, and would stay
// running (its feed unpollable by any instance that trusts the claim) until
// another instance's sweep, or none if every instance stopped.
func (m *Manager) endLeftovers(ctx context.Context) {
	acts, err := m.recovery.Activity(ctx)
	if err != nil {
		m.logger.Warn("stop: cannot list this instance's leftover polls", "instance", m.instance, "error", err)
		return
	}
	for _, a := range acts {
		if a.Owner != m.instance || a.Feed == "" {
			continue
		}
		why := fmt.Errorf("interrupted: instance %s stopped before it recorded the poll's outcome", m.instance)
		if _, err := m.recovery.Interrupt(ctx, a, why); err != nil {
			m.logger.Warn("stop: cannot end a leftover poll", "jurisdiction", a.Jurisdiction, "feed", a.Feed,
				"poll_id", a.PollID, "error", err)
			continue
		}
		m.logger.Warn("stop: ended a claim or poll this instance had left unrecorded", "jurisdiction", a.Jurisdiction,
			"feed", a.Feed, "poll_id", a.PollID)
	}
}

// heartbeat renews this instance's liveness row and tracks since when the
// database has been reachable without a gap (connectedSince).
func (m *Manager) heartbeat(ctx context.Context) {
	err := m.recovery.Heartbeat(ctx, m.instance, pidNamespace(), heartbeatTTLs*m.beat)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err != nil:
		m.connectedSince = time.Time{}
		m.logger.Warn("heartbeat not recorded", "instance", m.instance, "error", err)
	case m.connectedSince.IsZero():
		m.connectedSince = m.now()
	}
}

// sweep ends the claims and running polls that dead instances (or this one,
// see WithRecovery) left, and returns the configured feeds they concerned.
func (m *Manager) sweep(ctx context.Context) []*config.Feed {
	acts, err := m.recovery.Activity(ctx)
	if err != nil {
		m.logger.Warn("sweep: cannot list claims and running polls", "error", err)
		return nil
	}
	// Read after the listing: a poll holds its feed's running mark from
	// before it begins until after it ended, so a poll of ours listed as
	// running while its feed is not marked can only be an orphan.
	m.mu.Lock()
	inFlight := make(map[string]bool, len(m.running))
	for k := range m.running {
		inFlight[k] = true
	}
	// A lapsed heartbeat means death only once this instance has itself
	// been connected for two heartbeats: after PostgreSQL was down (or
	// unreachable from here), every instance's heartbeat lapsed, and the
	// live ones renew theirs within a heartbeat of its return.
	trustLapse := !m.connectedSince.IsZero() && m.now().Sub(m.connectedSince) > 2*m.beat
	m.mu.Unlock()

	var again []*config.Feed
	queued := map[string]bool{}
	dead, unfinished := map[string]bool{}, map[string]bool{}
	// A feed whose claim ended but whose running poll could not be ended
	// is not polled again yet: the poll would not begin beside the one
	// still running. The sweep that ends that poll queues the feed.
	unfinishedFeed := map[string]bool{}
	for _, a := range acts {
		why, ok := m.gone(a, inFlight, trustLapse)
		if !ok {
			continue
		}
		if a.Owner != "" && a.Owner != m.instance {
			dead[a.Owner] = true
		}
		if a.Feed == "" {
			continue
		}
		ended, err := m.recovery.Interrupt(ctx, a, errors.New(why))
		if err != nil {
			// Its liveness row stays, for the next sweep to find the
			// owner dead again.
			unfinished[a.Owner] = true
			unfinishedFeed[a.Key()] = true
			m.logger.Warn("sweep: cannot end a dead instance's work", "jurisdiction", a.Jurisdiction, "feed", a.Feed,
				"owner", a.Owner, "poll_id", a.PollID, "error", err)
			continue
		}
		if !ended.Ended {
			continue
		}
		m.logger.Warn("sweep: ended a dead instance's work", "jurisdiction", a.Jurisdiction, "feed", a.Feed,
			"owner", a.Owner, "poll_id", a.PollID, "cause", why, "tick_polled", ended.TickDone, "parked", ended.Parked)
		if ended.TickDone || ended.Parked {
			continue
		}
		if f, ok := m.feed(a.Key()); ok && !queued[a.Key()] {
			queued[a.Key()] = true
			again = append(again, &f)
		}
	}
	again = slices.DeleteFunc(again, func(f *config.Feed) bool { return unfinishedFeed[f.Key()] })
	again = m.requeueUnswept(again, queued, unfinishedFeed)
	for owner := range dead {
		if unfinished[owner] {
			continue
		}
		if err := m.recovery.Retire(ctx, owner); err != nil {
			m.logger.Warn("sweep: cannot forget a dead instance", "owner", owner, "error", err)
		}
	}
	return again
}

// requeueUnswept adds to again the feeds whose work an earlier sweep could
// not end and which this one (unfinished: the feeds whose work it could not
// end) no longer finds: it ended after all (an Interrupt whose commit
// outlived its deadline), or another sweep ended it. Their ticks still want
// a poll; if a tick was done, its claim refuses the poll. It remembers this
// sweep's unfinished feeds for the next.
func (m *Manager) requeueUnswept(again []*config.Feed, queued, unfinished map[string]bool) []*config.Feed {
	for key := range m.unswept {
		if unfinished[key] {
			continue
		}
		delete(m.unswept, key)
		if f, ok := m.feed(key); ok && !queued[key] {
			queued[key] = true
			again = append(again, &f)
		}
	}
	for key := range unfinished {
		if m.unswept == nil {
			m.unswept = map[string]bool{}
		}
		m.unswept[key] = true
	}
	return again
}

// gone decides whether a belongs to an instance that will not finish it,
// and says why.
func (m *Manager) gone(a Activity, inFlight map[string]bool, trustLapse bool) (string, bool) {
	if a.Owner == m.instance {
		if a.Feed == "" || inFlight[a.Key()] {
			return "", false
		}
		return fmt.Sprintf("interrupted: instance %s no longer runs it (its outcome could not be recorded)", a.Owner), true
	}
	if a.Owner == "" {
		if a.Age > m.staleAfter(a.Key()) {
			return fmt.Sprintf("interrupted: left running for %s by an instance that did not record itself",
				a.Age.Round(time.Second)), true
		}
		return "", false
	}
	host, pid := SplitInstanceID(a.Owner)
	myHost, _ := SplitInstanceID(m.instance)
	switch {
	// A pid is looked up only in its own namespace: containers sharing
	// the host's network (and name) have pid namespaces of their own.
	case host == myHost && pid > 0 && pid != os.Getpid() && (a.PidNS == "" || a.PidNS == pidNamespace()) && processGone(pid):
		return fmt.Sprintf("interrupted: instance %s is gone", a.Owner), true
	case a.Liveness == LivenessLapsed && trustLapse:
		return fmt.Sprintf("interrupted: instance %s is gone (its heartbeat lapsed)", a.Owner), true
	case a.Liveness != LivenessUnknown || a.Feed == "":
		return "", false
	case a.PollID == 0 && a.LeaseExpired:
		return fmt.Sprintf("interrupted: instance %s let its claim expire", a.Owner), true
	case a.PollID != 0 && a.Age > m.staleAfter(a.Key()):
		return fmt.Sprintf("interrupted: left running for %s by instance %s", a.Age.Round(time.Second), a.Owner), true
	}
	return "", false
}

// staleAfter is how long a poll of the feed named key can run (its
// longestPoll), or unknownFeedStale for a feed this instance does not
// configure.
func (m *Manager) staleAfter(key string) time.Duration {
	if f, ok := m.feed(key); ok {
		return longestPoll(&f)
	}
	return unknownFeedStale
}

// longestPoll is how long a poll of f can run: its timeout of work, its
// queue_timeout in line, and a minute to record its outcome. A claim's
// lease is this long, so it lapses only when its instance died.
func longestPoll(f *config.Feed) time.Duration {
	return f.Timeout.Std() + f.QueueTimeout.Std() + time.Minute
}

// InstanceID returns this process's name, host:pid: the one id main builds
// once and hands to everything that records who does what (poll claims and
// polls, heartbeats, dead-letter claims, breaker verdicts and probe leases),
// so that one process reads as one owner everywhere. The sweep relies on the
// form: an owner on this host whose pid has exited is recognised as dead at
// once, without waiting for its heartbeat to lapse (see gone).
func InstanceID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// SplitInstanceID splits an instance id "host:pid" (see InstanceID); pid
// is 0 when the id is not of that form.
func SplitInstanceID(owner string) (string, int) {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return owner, 0
	}
	pid, err := strconv.Atoi(owner[i+1:])
	if err != nil {
		return owner, 0
	}
	return owner[:i], pid
}

// processGone reports whether process pid of this host has exited (or is a
// zombie waiting for its parent). Without procfs it cannot tell and says
// no: the owner's heartbeat then decides.
func processGone(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

// pidNamespace names this process's PID namespace ("pid:[4026531836]"), or
// "" without procfs.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}
