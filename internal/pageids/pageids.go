// Package pageids remembers the feature ids of one paged fetch, and the
// page of each, so that a protocol's fetch (wfs, ogcapi) notices an id
// delivered twice: on two pages (a server whose paging order is unstable,
// which skips features as it repeats others, or pages that overlap), or
// twice on one page (ids that are not unique). Either way the fetch cannot
// be the layer, whole and once.
package pageids

import (
	"hash/maphash"
	"slices"
)

// Bounds of a Set that is not exact: every id up to ExactIDs (a few MB),
// then one id in Sample, chosen by its hash.
const (
	ExactIDs = 100_000
	Sample   = 64
)

// Set remembers ids as 64-bit hashes, about 20 bytes a feature, not the
// ids' bytes. The seed is random per Set, so an unlucky collision
// does not repeat in the next fetch.
//
// Unless exact, it stops remembering every id of the fetch after ExactIDs
// and keeps one id in Sample. The sample is chosen by the id's hash, so an
// id is either always remembered or never; a server whose pages come in an
// unstable order (no numberMatched, never a short page) therefore repeats a
// remembered id by the time it has sent about as many features again as
// the layer holds, just as an exact set would, at 1/Sample of the memory.
// The store's exact check at apply catches what the sample lets by across
// pages. Within the page being read every id is remembered, sampled or
// not, until the next Begin: a page's memory is bounded by its size.
//
// A page is read by attempts (a body cut short is read again from its
// start): Begin starts each, so that an attempt re-reading the ids of the
// one before is not taken for a page that holds an id twice.
type Set struct {
	seed    maphash.Seed
	pages   map[uint64]seen
	exact   bool
	page    int32
	attempt uint32
	// current holds the current attempt's ids that pages does not keep
	// (past ExactIDs, outside the sample).
	current hashSet
}

// seen is where an id was last read: its page and the attempt that read it.
type seen struct {
	page    int32
	attempt uint32
}

// New returns an empty Set; exact makes it remember every id.
func New(exact bool) *Set {
	return &Set{seed: maphash.MakeSeed(), pages: make(map[uint64]seen), exact: exact}
}

// Begin starts an attempt at reading page: the ids Add records until the
// next Begin are this attempt's. Call it before each attempt of each page,
// a retry of the same page included.
func (s *Set) Begin(page int) {
	s.page = int32(page)
	s.attempt++
	s.current.reset()
}

// Add records id as read by the current attempt (see Begin), and reports a
// duplicate: prev is the page it was read on before, which is the current
// page when this attempt read it already (the page holds it twice). An id
// read again by a later attempt of the same page (a retry re-reading its
// page) is no duplicate.
func (s *Set) Add(id string) (prev int, dup bool) {
	return s.AddHash(maphash.String(s.seed, id))
}

// AddHash is Add for a feature known by a 64-bit key rather than an id (a
// hash of its content, for features without one): keys and the hashes of
// ids share the Set.
func (s *Set) AddHash(h uint64) (prev int, dup bool) {
	p, ok := s.pages[h]
	switch {
	case ok && p.page != s.page:
		return int(p.page), true
	case ok && p.attempt == s.attempt:
		return int(s.page), true
	case ok || s.exact || len(s.pages) < ExactIDs || h%Sample == 0:
		s.pages[h] = seen{page: s.page, attempt: s.attempt}
		return 0, false
	}
	if !s.current.add(h) {
		return int(s.page), true
	}
	return 0, false
}

// Len is how many ids the Set holds across pages (the current attempt's
// unsampled ids not included).
func (s *Set) Len() int { return len(s.pages) }

// hashBucketBits is log2 of hashSet's buckets.
const hashBucketBits = 12

// hashSet is a set of 64-bit hashes at about 9 bytes each: the hashes in
// sorted slices, one per value of their top hashBucketBits bits (a few
// hundred hashes each at a million), grown by a quarter at a time. A map
// costs 12 to 20 bytes a hash, and the within-page part of a Set grows with
// the page: an unpaged document of 1M features is one page, whose 900,000
// hashes past ExactIDs are then most of the first load's live heap, and
// through the collector's pacing of its peak RSS (scripts/bench.sh bigdoc).
type hashSet struct {
	buckets [][]uint64 // nil until the first add
}

// add adds h and reports whether it was not in the set yet.
func (s *hashSet) add(h uint64) bool {
	if s.buckets == nil {
		s.buckets = make([][]uint64, 1<<hashBucketBits)
	}
	b := &s.buckets[h>>(64-hashBucketBits)]
	i, found := slices.BinarySearch(*b, h)
	if found {
		return false
	}
	if len(*b) == cap(*b) {
		// Not append's doubling: a quarter at a time keeps the slack small.
		grown := make([]uint64, len(*b), len(*b)+len(*b)/4+8)
		copy(grown, *b)
		*b = grown
	}
	*b = slices.Insert(*b, i, h)
	return true
}

// reset empties the set, keeping its buckets' room for the next page.
func (s *hashSet) reset() {
	for i := range s.buckets {
		s.buckets[i] = s.buckets[i][:0]
	}
}
