package pollbudget

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when the test advances it, firing
// the timers that fall due on the way.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// advance moves the clock by d, running each timer due on the way (in
// order, synchronously) at its own time.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.Slice(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) {
				next = t
				break
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func TestWaitingInLineDoesNotSpendTheBudget(t *testing.T) {
	clk := newFakeClock()
	ctx, b, cancel := newBudget(context.Background(), 10*time.Second, 0, clk)
	defer cancel()

	clk.advance(4 * time.Second) // 4 s of work
	end := Waiting(ctx)
	clk.advance(time.Hour) // in line: no bound, nothing counted
	if ended(ctx) {
		t.Fatalf("the budget ended while the poll waited in line: %v", Cause(ctx))
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("a poll waiting in line with no queue bound has a deadline")
	}
	end()
	end() // a second call is a no-op
	if got := b.Waited(); got != time.Hour {
		t.Errorf("Waited = %s, want 1h", got)
	}
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(clk.Now().Add(6*time.Second)) {
		t.Errorf("Deadline after the wait = %v %v, want now+6s (10 s of work, 4 used)", dl, ok)
	}
	clk.advance(6*time.Second - time.Nanosecond)
	if ended(ctx) {
		t.Fatal("the budget ended before 10 s of work")
	}
	clk.advance(time.Nanosecond)
	if !ended(ctx) {
		t.Fatal("the budget did not end after 10 s of work")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, want context.DeadlineExceeded", ctx.Err())
	}
	var ex *ExhaustedError
	if !errors.As(Cause(ctx), &ex) || ex.Waited != time.Hour || ex.Timeout != 10*time.Second {
		t.Errorf("Cause = %#v, want ExhaustedError{10s, waited 1h}", Cause(ctx))
	}
	if QueueCause(ctx) != nil {
		t.Error("QueueCause is set for a budget that ran out of work")
	}
}

func TestConcurrentWaitsPauseOnce(t *testing.T) {
	clk := newFakeClock()
	ctx, b, cancel := newBudget(context.Background(), 10*time.Second, 0, clk)
	defer cancel()
	end1 := Waiting(ctx)
	clk.advance(time.Minute)
	end2 := Waiting(ctx)
	clk.advance(time.Minute)
	end1()
	clk.advance(time.Minute) // the second call still waits
	end2()
	if got := b.Waited(); got != 3*time.Minute {
		t.Errorf("Waited = %s, want 3m (overlapping waits counted once)", got)
	}
	clk.advance(10*time.Second - time.Nanosecond)
	if ended(ctx) {
		t.Fatal("overlapping waits spent the budget")
	}
	clk.advance(time.Nanosecond)
	if !ended(ctx) {
		t.Fatal("the budget did not end")
	}
}

func TestQueueBound(t *testing.T) {
	clk := newFakeClock()
	ctx, b, cancel := newBudget(context.Background(), 10*time.Second, 25*time.Minute, clk)
	defer cancel()
	end := Waiting(ctx)
	clk.advance(20 * time.Minute)
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(clk.Now().Add(5*time.Minute)) {
		t.Errorf("Deadline in line = %v %v, want now+5m (the queue bound's rest)", dl, ok)
	}
	end()
	clk.advance(5 * time.Second)
	end = Waiting(ctx) // the bound is on the poll's whole time in line
	clk.advance(5*time.Minute - time.Nanosecond)
	if ended(ctx) {
		t.Fatal("ended before 25 minutes in line")
	}
	clk.advance(time.Nanosecond)
	if !ended(ctx) {
		t.Fatal("did not end after 25 minutes in line")
	}
	end()
	qe := QueueCause(ctx)
	if qe == nil || qe.Waited != 25*time.Minute || qe.Limit != 25*time.Minute {
		t.Fatalf("QueueCause = %#v, want waited 25m of 25m", qe)
	}
	if want := "waited 25m0s in line for a request slot or a database connection (queue_timeout 25m0s): more polls are due than max_in_flight, the origin's limits or the database pool serve"; qe.Error() != want {
		t.Errorf("message %q, want %q", qe.Error(), want)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v", ctx.Err())
	}
	if b.Waited() != 25*time.Minute {
		t.Errorf("Waited = %s", b.Waited())
	}
}

func TestParentCancellationAndChildren(t *testing.T) {
	clk := newFakeClock()
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, _, cancel := newBudget(parent, time.Minute, 0, clk)
	defer cancel()
	child, cancelChild := context.WithTimeout(ctx, time.Hour)
	defer cancelChild()
	type key struct{}
	if ctx.Value(key{}) != nil {
		t.Fatal("unexpected value")
	}
	cancelParent()
	<-ctx.Done()
	<-child.Done() // a child made from the budget's context ends with it
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("Err = %v, child %v; want context.Canceled", ctx.Err(), child.Err())
	}
}

func TestChildSeesDeadlineExceeded(t *testing.T) {
	clk := newFakeClock()
	ctx, _, cancel := newBudget(context.Background(), time.Second, 0, clk)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	clk.advance(time.Second)
	<-child.Done()
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("child Err = %v, want context.DeadlineExceeded", child.Err())
	}
	if _, ok := Cause(child).(*ExhaustedError); !ok {
		t.Errorf("Cause(child) = %v, want *ExhaustedError", Cause(child))
	}
}

func TestWaitingWithoutBudget(t *testing.T) {
	Waiting(context.Background())() // no budget: a no-op, no panic
	if QueueCause(context.Background()) != nil {
		t.Error("QueueCause of a context without budget")
	}
}

func TestCauseBeforeTheEnd(t *testing.T) {
	ctx, _, cancel := newBudget(context.Background(), time.Minute, 0, newFakeClock())
	defer cancel()
	if c := Cause(ctx); c != nil {
		t.Errorf("Cause of a running budget = %v", c)
	}
	if QueueCause(ctx) != nil {
		t.Error("QueueCause of a running budget")
	}
}

func TestCancelledParentAtStart(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	cancelParent()
	ctx, _, cancel := newBudget(parent, time.Minute, 0, newFakeClock())
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Err = %v", ctx.Err())
	}
}
