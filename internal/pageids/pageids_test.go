package pageids

import (
	"fmt"
	"testing"
)

// TestRetriedPage: an attempt retried after a cut body re-reads its
// page's ids; that is not a duplicate.
func TestRetriedPage(t *testing.T) {
	t.Parallel()
	s := New(false)
	for _, id := range []string{"a", "b"} {
		if _, dup := s.Add(id, 0); dup {
			t.Fatal("dup on first sight")
		}
	}
	if _, dup := s.Add("a", 0); dup {
		t.Error("same page again counted as a duplicate")
	}
	if prev, dup := s.Add("b", 3); !dup || prev != 0 {
		t.Errorf("b on page 3: %d %v", prev, dup)
	}
}

// TestBounded: past ExactIDs the set keeps a sample, so its memory is
// bounded, and a layer served a second time is still caught.
func TestBounded(t *testing.T) {
	t.Parallel()
	s := New(false)
	const n = 3 * ExactIDs
	for i := range n {
		if _, dup := s.Add(fmt.Sprint("id.", i), i/1000); dup {
			t.Fatalf("distinct id %d counted as a duplicate", i)
		}
	}
	if max := ExactIDs + 2*(n-ExactIDs)/Sample; s.Len() > max {
		t.Errorf("%d ids kept, want at most %d", s.Len(), max)
	}
	dups := 0
	for i := ExactIDs; i < n; i++ { // the sampled part, served again on a later page
		if _, dup := s.Add(fmt.Sprint("id.", i), 10_000); dup {
			dups++
		}
	}
	if dups == 0 {
		t.Error("the ids after ExactIDs came back on another page unnoticed")
	}
}

// TestExact: an exact Set keeps every id.
func TestExact(t *testing.T) {
	t.Parallel()
	s := New(true)
	const n = ExactIDs + 10*Sample
	for i := range n {
		s.Add(fmt.Sprint("id.", i), 0)
	}
	if s.Len() != n {
		t.Errorf("exact set holds %d of %d ids", s.Len(), n)
	}
}
