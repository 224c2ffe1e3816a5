package pageids

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRetriedPage: an attempt retried after a cut body re-reads its
// page's ids; that is not a duplicate. The same id on a later page is.
func TestRetriedPage(t *testing.T) {
	t.Parallel()
	s := New(false)
	s.Begin(0)
	for _, id := range []string{"a", "b"} {
		if _, dup := s.Add(id); dup {
			t.Fatal("dup on first sight")
		}
	}
	s.Begin(0) // the retry
	for _, id := range []string{"a", "b"} {
		if _, dup := s.Add(id); dup {
			t.Errorf("%s read again by a retry of its page counted as a duplicate", id)
		}
	}
	s.Begin(3)
	if prev, dup := s.Add("b"); !dup || prev != 0 {
		t.Errorf("b on page 3: %d %v", prev, dup)
	}
}

// TestTwiceInOnePage: an id read twice by one attempt of one page is a
// duplicate naming that page, in the exact part of the set, past it
// (sampled or not), and after a retry of the page.
func TestTwiceInOnePage(t *testing.T) {
	t.Parallel()
	s := New(false)
	s.Begin(0)
	for i := range ExactIDs + 10*Sample {
		s.Add(fmt.Sprint("fill.", i))
	}
	s.Begin(1)
	s.Add("x")
	s.Begin(1) // a retry reads x again, then finds it twice
	if _, dup := s.Add("x"); dup {
		t.Fatal("the retry's first x counted as a duplicate")
	}
	if prev, dup := s.Add("x"); !dup || prev != 1 {
		t.Errorf("x twice in page 1: %d %v, want 1 true", prev, dup)
	}
	// Past ExactIDs most ids are not kept across pages; within the page
	// every one is.
	s.Begin(2)
	missed := 0
	for i := range 1000 {
		id := fmt.Sprint("late.", i)
		s.Add(id)
		if prev, dup := s.Add(id); !dup || prev != 2 {
			missed++
		}
	}
	if missed != 0 {
		t.Errorf("%d of 1000 ids read twice in page 2 (past ExactIDs) went unnoticed", missed)
	}
	if prev, dup := s.AddHash(42); dup {
		t.Fatalf("a new key: %d %v", prev, dup)
	}
	if prev, dup := s.AddHash(42); !dup || prev != 2 {
		t.Errorf("a key twice in page 2: %d %v", prev, dup)
	}
}

// TestBounded: past ExactIDs the set keeps a sample, so its memory is
// bounded, and a layer served a second time is still caught.
func TestBounded(t *testing.T) {
	t.Parallel()
	s := New(false)
	const n = 3 * ExactIDs
	for i := range n {
		if i%1000 == 0 {
			s.Begin(i / 1000)
		}
		if _, dup := s.Add(fmt.Sprint("id.", i)); dup {
			t.Fatalf("distinct id %d counted as a duplicate", i)
		}
	}
	if max := ExactIDs + 2*(n-ExactIDs)/Sample; s.Len() > max {
		t.Errorf("%d ids kept, want at most %d", s.Len(), max)
	}
	dups := 0
	s.Begin(10_000)
	for i := ExactIDs; i < n; i++ { // the sampled part, served again on a later page
		if _, dup := s.Add(fmt.Sprint("id.", i)); dup {
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
	s.Begin(0)
	for i := range n {
		s.Add(fmt.Sprint("id.", i))
	}
	if s.Len() != n {
		t.Errorf("exact set holds %d of %d ids", s.Len(), n)
	}
}

// TestHashSet: hashSet is an exact set (every hash added once is found,
// none other) whose slices hold little more room than its hashes (issue
// 26: a page's unsampled ids are most of a large unpaged document's heap),
// and reset empties it.
func TestHashSet(t *testing.T) {
	t.Parallel()
	var s hashSet
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 300_000
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = rng.Uint64()
		if !s.add(hashes[i]) {
			t.Fatalf("hash %d of %d (%#x) taken for a repeat", i, n, hashes[i])
		}
	}
	for i, h := range hashes {
		if s.add(h) {
			t.Fatalf("hash %d (%#x) added twice", i, h)
		}
	}
	if s.add(0) != true || s.add(^uint64(0)) != true || s.add(0) || s.add(^uint64(0)) {
		t.Error("the extreme hashes 0 and 2^64-1 are not kept exactly")
	}
	held, room := 0, 0
	for _, b := range s.buckets {
		if !slices.IsSorted(b) {
			t.Fatal("a bucket is not sorted")
		}
		held += len(b)
		room += cap(b)
	}
	if held != n+2 {
		t.Errorf("%d hashes held, want %d", held, n+2)
	}
	// A map takes 12 to 20 bytes a hash; append's doubling would leave a
	// third of the room empty on average.
	if max := held + held/5 + 8*len(s.buckets); room > max {
		t.Errorf("room for %d hashes to hold %d, want at most %d (a fifth more)", room, held, max)
	}
	s.reset()
	if !s.add(hashes[0]) {
		t.Error("after reset, a hash of before is still held")
	}
}
