// Package pollbudget is a poll's time budget: a context that ends when the
// poll's own work has used its timeout, where the time the poll spends
// waiting in line for a request slot (the global max_in_flight, an origin's
// in-flight cap or rate limit) is not counted.
//
// A poll that waits behind a few hundred others at a busy hour has not asked
// its server anything yet: charging that wait to its timeout would fail it
// as a "timeout" of a server that was never asked. The wait has its own,
// separate bound (queue_timeout) with its own error, QueueError.
//
// The package is a leaf: the feeds package makes the budget of each poll
// with New, and the breaker, which owns the request slots, brackets each
// wait in line with Waiting.
package pollbudget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ExhaustedError is the cause of a budget's context ending because the
// poll's own work used its timeout. It wraps context.DeadlineExceeded, and
// the context's Err is context.DeadlineExceeded, so that code that tells a
// deadline from a cancellation keeps telling it.
type ExhaustedError struct {
	Timeout time.Duration // the poll's timeout: its budget of work
	Waited  time.Duration // time spent in line for request slots, not counted
}

func (e *ExhaustedError) Error() string {
	if e.Waited <= 0 {
		return fmt.Sprintf("poll timeout: its %s of work ran out", e.Timeout)
	}
	return fmt.Sprintf("poll timeout: its %s of work ran out (besides %s waited in line for request slots, not counted)",
		e.Timeout, e.Waited.Round(time.Millisecond))
}

func (e *ExhaustedError) Unwrap() error { return context.DeadlineExceeded }

// QueueError is the cause of a budget's context ending because the poll
// waited longer in line for request slots than its queue bound allows: the
// machine (or an origin's cap) is too busy for its feeds, which no server
// is to blame for.
type QueueError struct {
	Waited time.Duration // time spent in line for request slots
	Limit  time.Duration // the poll's queue_timeout
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("waited %s in line for a request slot or a database connection (queue_timeout %s): more polls are due than max_in_flight, the origin's limits or the database pool serve",
		e.Waited.Round(time.Second), e.Limit)
}

// Unwrap makes a QueueError a deadline too: the poll ran out of time, not
// of attempts, and was not cancelled.
func (e *QueueError) Unwrap() error { return context.DeadlineExceeded }

// Budget is the time accounting of one poll. Its methods are safe for
// concurrent use: a poll may fetch a page while it stages the previous one.
type Budget struct {
	timeout    time.Duration
	queueLimit time.Duration
	clock      clock
	parent     context.Context
	// ended is cancelled when the budget ends: the budget context's Done
	// channel and AfterFunc are its.
	ended      context.Context
	endCtx     context.CancelFunc
	stopParent func() bool

	mu        sync.Mutex
	err       error // context.Canceled, context.DeadlineExceeded or the parent's
	cause     error
	used      time.Duration // work counted before runSince
	runSince  time.Time     // start of the current stretch of counted work
	waiting   int           // calls of the poll waiting in line now
	waitSince time.Time     // start of the current stretch of waiting
	waited    time.Duration // waiting before waitSince
	timer     stopper       // fires when the running budget or the queue bound ends
}

// clock is the time a budget counts in: the real one, or a test's.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) stopper
}

type stopper interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                              { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

type budgetKey struct{}

// New returns a context for a poll with timeout of work, and at most
// queueLimit waiting in line in all (0: no bound), and its Budget. cancel
// releases its timer and must be called when the poll ends.
func New(parent context.Context, timeout, queueLimit time.Duration) (context.Context, *Budget, context.CancelFunc) {
	return newBudget(parent, timeout, queueLimit, realClock{})
}

func newBudget(parent context.Context, timeout, queueLimit time.Duration, clk clock) (context.Context, *Budget, context.CancelFunc) {
	b := &Budget{
		timeout:    timeout,
		queueLimit: queueLimit,
		clock:      clk,
		parent:     parent,
		runSince:   clk.Now(),
	}
	b.ended, b.endCtx = context.WithCancel(context.Background())
	b.mu.Lock()
	b.timer = clk.AfterFunc(timeout, b.expire)
	// Under the lock: end, which a cancelled parent may run at once, reads
	// stopParent.
	b.stopParent = context.AfterFunc(parent, func() { b.end(parent.Err(), context.Cause(parent)) })
	b.mu.Unlock()
	ctx := &budgetCtx{b: b}
	return ctx, b, func() { b.end(context.Canceled, context.Canceled) }
}

// Waiting marks the start of a wait in line (for a request slot, or a
// database connection) by a call made under ctx; the returned func marks
// its end. While any call of the poll waits, its budget of work stands
// still and its queue bound runs. Under a context without a Budget both
// are no-ops.
func Waiting(ctx context.Context) (end func()) {
	if b := Of(ctx); b != nil {
		return b.Wait()
	}
	return func() {}
}

// Of returns the Budget of the poll ctx belongs to, or nil.
func Of(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Wait marks the start of a wait in line; the returned func, which may be
// called more than once, marks its end. See Waiting.
func (b *Budget) Wait() (end func()) {
	b.startWait()
	var once sync.Once
	return func() { once.Do(b.endWait) }
}

// QueueCause returns the *QueueError that ended ctx's budget, or nil when
// ctx has no budget or it did not end for waiting too long: the breaker's
// pacing uses it to tell "waited too long in line" from "out of time".
func QueueCause(ctx context.Context) *QueueError {
	var qe *QueueError
	if errors.As(Cause(ctx), &qe) {
		return qe
	}
	return nil
}

// Waited returns the time the poll has waited in line for request slots.
func (b *Budget) Waited() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.waited
	if b.waiting > 0 {
		w += b.clock.Now().Sub(b.waitSince)
	}
	return w
}

func (b *Budget) startWait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting++
	if b.waiting > 1 || b.err != nil {
		return
	}
	now := b.clock.Now()
	b.used += now.Sub(b.runSince)
	b.waitSince = now
	b.timer.Stop()
	if b.queueLimit > 0 {
		b.timer = b.clock.AfterFunc(max(b.queueLimit-b.waited, 0), b.expire)
	}
}

func (b *Budget) endWait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting--
	if b.waiting > 0 {
		return
	}
	now := b.clock.Now()
	b.waited += now.Sub(b.waitSince)
	b.runSince = now
	if b.err != nil {
		return
	}
	b.timer.Stop()
	b.timer = b.clock.AfterFunc(max(b.timeout-b.used, 0), b.expire)
}

// expire ends the budget when the timer of its current state has run out.
// A timer stopped too late to keep it from running finds its state changed
// and checks the figures again.
func (b *Budget) expire() {
	b.mu.Lock()
	now := b.clock.Now()
	var cause error
	if b.waiting > 0 {
		if w := b.waited + now.Sub(b.waitSince); b.queueLimit > 0 && w >= b.queueLimit {
			cause = &QueueError{Waited: w, Limit: b.queueLimit}
		}
	} else if b.used+now.Sub(b.runSince) >= b.timeout {
		cause = &ExhaustedError{Timeout: b.timeout, Waited: b.waited}
	}
	b.mu.Unlock()
	if cause != nil {
		b.end(context.DeadlineExceeded, cause)
	}
}

// end ends the budget's context with err and cause, once.
func (b *Budget) end(err, cause error) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return
	}
	if cause == nil {
		cause = err
	}
	b.err, b.cause = err, cause
	b.timer.Stop()
	stopParent := b.stopParent
	b.mu.Unlock()
	stopParent()
	b.endCtx()
}

// budgetCtx is the poll's context. It is its own type, not a context made
// by WithDeadline, because its deadline moves: it stands still while the
// poll waits in line.
type budgetCtx struct{ b *Budget }

// Deadline is when the budget of work ends if the poll keeps working from
// now on without waiting; while it waits, only the queue bound (if any)
// and the parent's deadline apply. A child context's deadline taken from
// it is fixed when the child is made: the breaker makes an attempt's
// context after the wait for its slot.
func (c *budgetCtx) Deadline() (time.Time, bool) {
	b := c.b
	b.mu.Lock()
	var dl time.Time
	ok := true
	switch {
	case b.waiting == 0:
		dl = b.runSince.Add(b.timeout - b.used)
	case b.queueLimit > 0:
		dl = b.waitSince.Add(b.queueLimit - b.waited)
	default:
		ok = false
	}
	b.mu.Unlock()
	if pdl, pok := b.parent.Deadline(); pok && (!ok || pdl.Before(dl)) {
		return pdl, true
	}
	return dl, ok
}

func (c *budgetCtx) Done() <-chan struct{} { return c.b.ended.Done() }

// AfterFunc runs f once the budget has ended. The context package uses it
// (its afterFuncer) to cancel children without a goroutine each.
func (c *budgetCtx) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.b.ended, f) }

func (c *budgetCtx) Err() error {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.b.err
}

// Value answers the Budget itself, and the parent's values otherwise.
func (c *budgetCtx) Value(key any) any {
	if key == (budgetKey{}) {
		return c.b
	}
	return c.b.parent.Value(key)
}

// Cause returns why ctx's budget ended (an *ExhaustedError, a *QueueError,
// or the parent's cause), or ctx's own cause when ctx has no Budget.
// context.Cause cannot see it: it only knows the standard library's
// contexts, and answers a budget's context with its parent's cause.
func Cause(ctx context.Context) error {
	if b := Of(ctx); b != nil {
		b.mu.Lock()
		cause := b.cause
		b.mu.Unlock()
		if cause != nil {
			return cause
		}
	}
	return context.Cause(ctx)
}

func (c *budgetCtx) String() string { return "budget.Context" }
