package feeds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

// gateTest is a manager whose only origin, county.test, has one poll
// slot, on a fake clock, without a store: the origin gate needs neither a
// database nor a fetch, only the feeds' schedules and last successes.
type gateTest struct {
	t      *testing.T
	m      *Manager
	clock  *FakeClock
	origin string
	feeds  map[string]*config.Feed // by id
}

// newGateTest configures feeds "id schedule" on one origin of one slot.
func newGateTest(t *testing.T, feeds ...string) *gateTest {
	t.Helper()
	var yaml strings.Builder
	yaml.WriteString("jurisdictions:\n  - id: county\n    feeds:\n")
	for _, f := range feeds {
		id, schedule, _ := strings.Cut(f, " ")
		fmt.Fprintf(&yaml, "      - {id: %s, kind: wfs, url: \"http://county.test/wfs\", type_name: %s, schedule: %q}\n", id, id, schedule)
	}
	cfg, err := config.Parse("gate.yaml", []byte(yaml.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := NewFakeClock(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	m := NewManager(nil, nil, WithClock(clock), WithOriginPollSlots(func(string) int { return 1 }))
	m.signals.originWaiting.init()
	g := &gateTest{t: t, m: m, clock: clock, feeds: map[string]*config.Feed{}}
	for _, f := range cfg.Feeds() {
		g.feeds[f.ID] = f
		g.origin = feedInfo(f, clock.Now()).Origin
	}
	return g
}

// loaded makes the feed's last success ago before now.
func (g *gateTest) loaded(id string, ago time.Duration) {
	g.m.noteSuccess(g.feeds[id].Key(), g.clock.Now().Add(-ago))
}

// take starts a wait of the feed for the origin's slot; the outcome comes
// on the channel. It returns once the wait has begun (or ended at once).
func (g *gateTest) take(ctx context.Context, id string, skippable bool) <-chan originSlotOutcome {
	g.t.Helper()
	out := make(chan originSlotOutcome, 1)
	go func() { out <- g.m.takeOriginSlot(ctx, g.origin, g.feeds[id], skippable) }()
	select {
	case key := <-g.m.signals.originWaiting.ch:
		if key != g.feeds[id].Key() {
			g.t.Fatalf("%s waits for the origin, want %s", key, g.feeds[id].Key())
		}
	case o := <-out:
		// Taken at once: put it back for the caller to read.
		out <- o
		return out
	case <-time.After(time.Minute): // only a hang
		g.t.Fatalf("%s neither took the origin's slot nor waited for it", id)
	}
	return out
}

// outcome waits for the end of a wait.
func (g *gateTest) outcome(id string, ch <-chan originSlotOutcome) originSlotOutcome {
	g.t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(time.Minute): // only a hang
		g.t.Fatalf("the wait of %s did not end", id)
	}
	return 0
}

// state is the gate's running polls and its waiters' feed ids, in arrival
// order.
func (g *gateTest) state() (running int, waiting []string) {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	gate := g.m.origins[g.origin]
	if gate == nil {
		return 0, nil
	}
	for _, w := range gate.waiting {
		waiting = append(waiting, strings.TrimPrefix(w.feed, "county/"))
	}
	return gate.running, waiting
}

// handOff frees the running poll's slot and checks that it went to want,
// the others still waiting.
func (g *gateTest) handOff(want string, waits map[string]<-chan originSlotOutcome) {
	g.t.Helper()
	// The gate decides within freeOriginSlot: its state says who got
	// the slot before the waiter's goroutine has run.
	g.m.freeOriginSlot(g.origin)
	running, waiting := g.state()
	for _, id := range waiting {
		if id == want {
			g.t.Fatalf("after a hand-off: %d running, waiting %v; want %s to have the slot", running, waiting, want)
		}
	}
	if running != 1 || len(waiting) != len(waits)-1 {
		g.t.Fatalf("after the hand-off to %s: %d running, waiting %v; want 1 running and the %d others waiting", want, running, waiting, len(waits)-1)
	}
	if o := g.outcome(want, waits[want]); o != originSlotTaken {
		g.t.Fatalf("%s's wait ended with %d, want the slot", want, o)
	}
	delete(waits, want)
}

// TestOriginSlotGoesToNeverLoadedFeed: with one slot, a fresh feed whose
// ticks keep coming and a feed that never loaded, every freed slot goes
// to the never-loaded feed first, though the fresh feed's tick came
// before it and again after it.
func TestOriginSlotGoesToNeverLoadedFeed(t *testing.T) {
	t.Parallel()
	g := newGateTest(t, "fresh @every 10m", "never @every 10m", "other @every 10m")
	ctx := t.Context()
	g.loaded("fresh", time.Minute)
	g.loaded("other", 2*time.Minute)
	if o := g.outcome("other", g.take(ctx, "other", true)); o != originSlotTaken {
		t.Fatalf("the first tick on an idle origin: %d, want the slot", o)
	}
	waits := map[string]<-chan originSlotOutcome{"fresh": g.take(ctx, "fresh", true)}
	waits["never"] = g.take(ctx, "never", true)
	g.handOff("never", waits)
	// The never-loaded feed's poll runs; the fresh feed's tick, first in
	// line, gets the slot after it.
	g.handOff("fresh", waits)
	g.m.freeOriginSlot(g.origin)
	if running, waiting := g.state(); running != 0 || len(waiting) != 0 {
		t.Fatalf("every poll ended: %d running, waiting %v", running, waiting)
	}
}

// TestOriginSlotGoesToMostOverdue: the slot goes to the feed longest since
// its last success relative to its interval (2.5 intervals before 1.5),
// though the other is more minutes past due and came first.
func TestOriginSlotGoesToMostOverdue(t *testing.T) {
	t.Parallel()
	g := newGateTest(t, "hourly @every 1h", "often @every 10m", "holder @every 10m")
	ctx := t.Context()
	g.loaded("hourly", 90*time.Minute) // 1.5 intervals, 30 min past due
	g.loaded("often", 25*time.Minute)  // 2.5 intervals, 15 min past due
	g.outcome("holder", g.take(ctx, "holder", false))
	waits := map[string]<-chan originSlotOutcome{"hourly": g.take(ctx, "hourly", true)}
	waits["often"] = g.take(ctx, "often", true)
	g.handOff("often", waits)
	g.handOff("hourly", waits)
}

// TestOriginSlotFirstComeAmongEquals: waiters of the same need (never
// loaded; loaded at the same time on the same interval) are served in the
// order they came.
func TestOriginSlotFirstComeAmongEquals(t *testing.T) {
	t.Parallel()
	g := newGateTest(t, "holder @every 10m", "n1 @every 10m", "n2 @every 10m", "n3 @every 10m",
		"l1 @every 10m", "l2 @every 10m", "l3 @every 10m")
	ctx := t.Context()
	g.outcome("holder", g.take(ctx, "holder", false))
	waits := map[string]<-chan originSlotOutcome{}
	for _, id := range []string{"l2", "n2", "l3", "n3", "l1", "n1"} {
		if strings.HasPrefix(id, "l") {
			g.loaded(id, 11*time.Minute)
		}
		waits[id] = g.take(ctx, id, true)
	}
	for _, id := range []string{"n2", "n3", "n1", "l2", "l3", "l1"} {
		g.handOff(id, waits)
	}
}

// TestOriginSlotWaiterLeavesWhenItsContextEnds: a waiter whose context
// ends leaves the line and takes no slot with it; the slot it would have
// had goes to the next waiter, and the gate counts 0 once the polls end.
func TestOriginSlotWaiterLeavesWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	g := newGateTest(t, "holder @every 10m", "gone @every 10m", "next @every 10m")
	ctx := t.Context()
	g.outcome("holder", g.take(ctx, "holder", false))
	goneCtx, cancel := context.WithCancel(ctx)
	waits := map[string]<-chan originSlotOutcome{"gone": g.take(goneCtx, "gone", true)}
	waits["next"] = g.take(ctx, "next", true)
	cancel()
	if o := g.outcome("gone", waits["gone"]); o != originSlotStopped {
		t.Fatalf("the wait whose context ended: %d, want stopped", o)
	}
	delete(waits, "gone")
	if running, waiting := g.state(); running != 1 || len(waiting) != 1 || waiting[0] != "next" {
		t.Fatalf("after the cancelled wait: %d running, waiting %v; want the holder running and next waiting", running, waiting)
	}
	g.handOff("next", waits)
	g.m.freeOriginSlot(g.origin)
	if running, waiting := g.state(); running != 0 || len(waiting) != 0 {
		t.Fatalf("every poll ended: %d running, waiting %v; want 0 and none", running, waiting)
	}
}

// TestOriginSlotSkipsFreshTickPastItsInterval: a fresh feed's tick that
// has waited longer than its feed's interval is let go (origin_busy) when
// the slot is next handed on, and the slot goes to the next in line; an
// overdue feed's tick, a never-loaded feed's and a one-off poll wait on,
// however long.
func TestOriginSlotSkipsFreshTickPastItsInterval(t *testing.T) {
	t.Parallel()
	g := newGateTest(t, "holder @every 10m", "fresh @every 10m", "overdue @every 10m", "never @every 10m", "manual @every 10m")
	ctx := t.Context()
	g.loaded("fresh", 9*time.Minute)
	g.loaded("overdue", 11*time.Minute)
	g.loaded("manual", time.Minute)
	g.outcome("holder", g.take(ctx, "holder", false))
	fresh := g.take(ctx, "fresh", true)
	waits := map[string]<-chan originSlotOutcome{
		"overdue": g.take(ctx, "overdue", true),
		"never":   g.take(ctx, "never", true),
		"manual":  g.take(ctx, "manual", false),
	}
	g.clock.Advance(10*time.Minute + time.Second)
	g.handOff("never", waits)
	if o := g.outcome("fresh", fresh); o != originSlotSkipped {
		t.Fatalf("the fresh feed's tick that waited past its interval: %d, want skipped", o)
	}
	// The others, older than their interval by now, wait their turn.
	g.clock.Advance(time.Hour)
	g.handOff("overdue", waits)
	g.handOff("manual", waits)
	g.m.freeOriginSlot(g.origin)
	if running, waiting := g.state(); running != 0 || len(waiting) != 0 {
		t.Fatalf("every poll ended: %d running, waiting %v; want 0 and none", running, waiting)
	}
}

// BenchmarkOriginGateHandOff measures one hand-off of a freed slot among n
// waiting ticks of one origin (the scan for the one that needs it most and
// its removal), the work a slot's release does under the manager's lock.
func BenchmarkOriginGateHandOff(b *testing.B) {
	for _, n := range []int{166, 5000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
			m := NewManager(nil, nil)
			g := &originGate{running: 1}
			waiter := func(i int) *originWaiter {
				return &originWaiter{
					feed:     fmt.Sprintf("county/f%d", i),
					lastOK:   now.Add(-time.Duration(i%977) * time.Minute),
					interval: time.Duration(1+i%5) * time.Hour,
					queued:   now,
					done:     make(chan struct{}),
				}
			}
			for i := range n {
				g.waiting = append(g.waiting, waiter(i))
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				g.running--
				m.dispatch(g, 1, now)
				g.waiting = append(g.waiting, waiter(n+i))
			}
		})
	}
}
