package breaker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeShared is a Shared whose cached row the test sets. A View it is armed
// for stops after reading the row, until the test lets it go: the caller
// then holds a view that the test makes stale, as a goroutine descheduled
// between reading the cache and taking gate does.
type fakeShared struct {
	clock Clock

	mu     sync.Mutex
	row    Verdict
	gen    uint64
	hold   chan struct{} // non-nil: the next View stops
	viewed chan struct{} // closed when the stopped View has read the row
	leases int
	pubs   []Publication
}

// set makes v the cached row (a new Gen, as the cache bumps it).
func (f *fakeShared) set(v Verdict) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	v.Version = int64(f.gen)
	f.row = v
}

// holdNextView makes the next View stop after reading the row: viewed is
// closed once it has, and it returns when release is called.
func (f *fakeShared) holdNextView() (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hold, viewed := make(chan struct{}), make(chan struct{})
	f.hold, f.viewed = hold, viewed
	return viewed, sync.OnceFunc(func() { close(hold) })
}

func (f *fakeShared) View(string) SharedView {
	f.mu.Lock()
	vw := SharedView{Verdict: f.row, Exists: f.gen > 0, Gen: f.gen, Reachable: true}
	hold, viewed := f.hold, f.viewed
	f.hold, f.viewed = nil, nil
	f.mu.Unlock()
	if hold != nil {
		close(viewed)
		<-hold
	}
	return vw
}

func (f *fakeShared) AcquireLease(_ context.Context, origin string, opens int, _ int64) (bool, error) {
	f.mu.Lock()
	f.leases++
	f.mu.Unlock()
	// The store as it would answer: the lease is taken, which opens the row.
	f.set(Verdict{Origin: origin, State: StateHalfOpen, ConsecutiveOpens: opens,
		ProbeOwner: f.InstanceID(), ProbeUntil: f.clock.Now().Add(time.Hour), UpdatedBy: f.InstanceID()})
	return true, nil
}

func (f *fakeShared) Clock() Clock                    { return f.clock }
func (f *fakeShared) InstanceID() string              { return "b:2" }
func (f *fakeShared) RenewLease(string) (stop func()) { return func() {} }
func (f *fakeShared) LeaseDuration() time.Duration    { return time.Hour }
func (f *fakeShared) DropPending(string)              {}
func (f *fakeShared) RedactError(err error) string    { return err.Error() }
func (f *fakeShared) Publish(p Publication) {
	f.mu.Lock()
	f.pubs = append(f.pubs, p)
	f.mu.Unlock()
}

// An instance adopts another's close even when one of its calls read the
// cache before the close and reaches the origin's lock after it: the old
// open row that call carries must not open the origin again. If it did,
// the call would find the cooldown over, take the probe lease of the now
// closed row (taking it publishes an open verdict) and hold every instance
// of the cluster open under a lease nobody probes with.
func TestStaleViewDoesNotUndoAnAdoptedClose(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	sh := &fakeShared{clock: clock}
	var (
		evMu   sync.Mutex
		events []StateChange
	)
	p := DefaultPolicy()
	p.MaxAttempts, p.RateLimit, p.MaxInFlightPerOrigin = 1, 0, 0
	r := NewRegistry(Config{Policy: p, Shared: sh, Clock: clock, Jitter: func() float64 { return 0.5 },
		OnStateChange: func(ev StateChange) {
			evMu.Lock()
			events = append(events, ev)
			evMu.Unlock()
		}}, nil)
	const origin = "http://gis.county.example:8093"
	nothing := func(context.Context, int) Result { return Result{Outcome: Ignored} }
	refusedNow := func(what string) {
		t.Helper()
		if _, open := errors.AsType[*OpenError](r.Do(t.Context(), origin, nothing)); !open {
			t.Fatalf("%s: admitted, want refused", what)
		}
	}

	// Another instance (a:1) opened the origin; its cooldown is over, and
	// this instance's call reads that row, then stalls.
	sh.set(Verdict{Origin: origin, State: StateOpen, ConsecutiveOpens: 1, OpenUntil: clock.Now().Add(time.Hour), UpdatedBy: "a:1"})
	refusedNow("the open verdict of a:1")
	sh.set(Verdict{Origin: origin, State: StateOpen, ConsecutiveOpens: 1, OpenUntil: clock.Now().Add(-time.Minute), UpdatedBy: "a:1"})
	viewed, release := sh.holdNextView()
	late := make(chan error, 1)
	go func() { late <- r.Do(context.Background(), origin, nothing) }()
	<-viewed

	// Meanwhile a:1 takes the lease, probes and closes the origin, and this
	// instance adopts each row.
	sh.set(Verdict{Origin: origin, State: StateHalfOpen, ConsecutiveOpens: 1, ProbeOwner: "a:1",
		ProbeUntil: clock.Now().Add(time.Hour), UpdatedBy: "a:1"})
	refusedNow("a:1's probe lease")
	sh.set(Verdict{Origin: origin, State: StateClosed, ConsecutiveOpens: 1, UpdatedBy: "a:1"})
	if err := r.Do(t.Context(), origin, nothing); err != nil {
		t.Fatalf("after a:1's close: %v", err)
	}
	evMu.Lock()
	adopted := len(events)
	evMu.Unlock()

	// The stalled call goes on with its view of the open row.
	release()
	if err := <-late; err != nil {
		t.Fatalf("the call that read the cache before the close: %v, want admitted", err)
	}
	if s := r.origin(origin).snapshot(); s.State != StateClosed {
		t.Errorf("after the stalled call: %+v, want closed", s)
	}
	sh.mu.Lock()
	leases := sh.leases
	sh.mu.Unlock()
	if leases != 0 {
		t.Errorf("the stalled call took the probe lease of a closed origin (%d times)", leases)
	}
	evMu.Lock()
	defer evMu.Unlock()
	for _, ev := range events[adopted:] {
		t.Errorf("state change after the adopted close: %s → %s decided by %q", ev.From, ev.To, ev.DecidedBy)
	}
}

// The run of failures belongs to one closed spell of the origin: another
// instance's open and close, adopted here, end it, and a call admitted
// before them that fails afterwards does not count in the next spell's
// run (it asked the origin under the old verdict).
func TestAdoptedVerdictsEndTheRun(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	sh := &fakeShared{clock: clock}
	p := DefaultPolicy()
	p.MaxAttempts, p.RateLimit, p.MaxInFlightPerOrigin, p.FailureRatio = 1, 0, 0, 0
	r := NewRegistry(Config{Policy: p, Shared: sh, Clock: clock, Jitter: func() float64 { return 0.5 }}, nil)
	const origin = "http://gis.county.example:8093"
	refused := func(context.Context, int) Result {
		return Result{Outcome: Failure, Err: errors.New("dial tcp: connection refused")}
	}
	nothing := func(context.Context, int) Result { return Result{Outcome: Ignored} }
	run := func() uint32 { return r.origin(origin).snapshot().Counts.ConsecutiveFailures }

	for range p.ConsecutiveFailures - 1 {
		if _, open := errors.AsType[*OpenError](r.Do(t.Context(), origin, refused)); open {
			t.Fatal("refused before the run was complete")
		}
	}
	// One more call is under way, admitted while the origin is closed.
	started, fail := make(chan struct{}), make(chan struct{})
	late := make(chan error, 1)
	go func() {
		late <- r.Do(context.Background(), origin, func(ctx context.Context, n int) Result {
			close(started)
			<-fail
			return refused(ctx, n)
		})
	}()
	<-started
	if got := run(); got != uint32(p.ConsecutiveFailures-1) {
		t.Fatalf("run %d before the verdicts, want %d", got, p.ConsecutiveFailures-1)
	}

	// Another instance opens the origin, then closes it after its probe.
	sh.set(Verdict{Origin: origin, State: StateOpen, ConsecutiveOpens: 1, OpenUntil: clock.Now().Add(time.Hour), UpdatedBy: "a:1"})
	if _, open := errors.AsType[*OpenError](r.Do(t.Context(), origin, nothing)); !open {
		t.Fatal("a:1's open verdict not adopted")
	}
	sh.set(Verdict{Origin: origin, State: StateClosed, ConsecutiveOpens: 1, UpdatedBy: "a:1"})
	if err := r.Do(t.Context(), origin, nothing); err != nil {
		t.Fatalf("a:1's close not adopted: %v", err)
	}
	if got := run(); got != 0 {
		t.Fatalf("run %d after the adopted open and close, want 0", got)
	}

	// The call admitted before them fails now: not part of the new run.
	close(fail)
	if err := <-late; err == nil {
		t.Fatal("the late call's failure returned nil")
	}
	if _, open := errors.AsType[*OpenError](r.Do(t.Context(), origin, refused)); open {
		t.Fatal("refused at the first failure after the close")
	}
	if s := r.origin(origin).snapshot(); s.State != StateClosed || s.Counts.ConsecutiveFailures != 1 {
		t.Fatalf("after the late failure and one more: %s with a run of %d, want closed with 1", s.State, s.Counts.ConsecutiveFailures)
	}
}
