package breaker

import (
	"slices"
	"testing"
	"time"
)

// TestPacerLatency: the latency is the running mean of each estimate and
// the next sample; a failed attempt only raises it; the gap is the latency
// over the target, capped, and none without a target or a sample.
func TestPacerLatency(t *testing.T) {
	t.Parallel()
	p := pacer{target: 2}
	if g := p.gap(); g != 0 {
		t.Fatalf("gap %s before any sample, want 0", g)
	}
	steps := []struct {
		d           time.Duration
		ok          bool
		wantLatency time.Duration
	}{
		{400 * time.Millisecond, true, 400 * time.Millisecond},
		{200 * time.Millisecond, true, 300 * time.Millisecond},
		{100 * time.Millisecond, false, 300 * time.Millisecond}, // a fast failure says nothing
		{900 * time.Millisecond, false, 600 * time.Millisecond}, // a slow one raises it
		{0, true, 600 * time.Millisecond},
		{200 * time.Millisecond, true, 400 * time.Millisecond},
	}
	for i, s := range steps {
		p.observe(s.d, s.ok)
		if p.latency != s.wantLatency {
			t.Fatalf("step %d (%s, ok %v): latency %s, want %s", i, s.d, s.ok, p.latency, s.wantLatency)
		}
	}
	if g := p.gap(); g != 200*time.Millisecond {
		t.Errorf("gap %s, want 400ms / 2", g)
	}
	p.observe(10*time.Minute, true)
	if g := p.gap(); g != maxPacingGap {
		t.Errorf("gap %s after a 10-minute answer, want the cap %s", g, maxPacingGap)
	}
	off := pacer{latency: time.Second}
	if g := off.gap(); g != 0 {
		t.Errorf("gap %s with no target, want 0", g)
	}
}

// TestPacerReserve: starts queue one gap apart while others are active, a
// lone attempt goes at once, and a start given back is handed out again.
func TestPacerReserve(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := pacer{target: 1, latency: 100 * time.Millisecond}
	var waits []time.Duration
	for range 3 {
		w, _ := p.reserve(t0)
		waits = append(waits, w)
	}
	if want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(waits, want) || p.active != 3 {
		t.Fatalf("waits %v with %d active, want %v with 3", waits, p.active, want)
	}
	// The third gives its start back (its deadline came first): the next
	// one takes it.
	p.unreserve(t0.Add(200*time.Millisecond), t0.Add(100*time.Millisecond))
	if w, _ := p.reserve(t0); w != 200*time.Millisecond {
		t.Errorf("wait %s after a start was given back, want 200ms", w)
	}
	// Everyone done: a lone attempt goes at once, even inside the gap.
	p.active = 0
	if w, _ := p.reserve(t0.Add(210 * time.Millisecond)); w != 0 {
		t.Errorf("a lone attempt waited %s", w)
	}
}
