// Package pageids remembers the feature ids of one paged fetch, and the
// page of each, so that a protocol's fetch (wfs, ogcapi) notices an id
// delivered on two pages: a server whose paging order is unstable, which
// skips features as it repeats others.
package pageids

import "hash/maphash"

// Bounds of a Set that is not exact: every id up to ExactIDs (a few MB),
// then one id in Sample, chosen by its hash.
const (
	ExactIDs = 100_000
	Sample   = 64
)

// Set remembers ids as 64-bit hashes: a million features cost about 20 MB,
// not the ids' bytes. The seed is random per Set, so an unlucky collision
// does not repeat in the next fetch.
//
// Unless exact, it stops remembering every id after ExactIDs and keeps one
// id in Sample. The sample is chosen by the id's hash, so an id is either
// always remembered or never; a server whose pages come in an unstable
// order (no numberMatched, never a short page) therefore repeats a
// remembered id by the time it has sent about as many features again as
// the layer holds, just as an exact set would, at 1/Sample of the memory.
// The store's exact check at apply catches what the sample lets by.
type Set struct {
	seed  maphash.Seed
	pages map[uint64]int32
	exact bool
}

// New returns an empty Set; exact makes it remember every id.
func New(exact bool) *Set {
	return &Set{seed: maphash.MakeSeed(), pages: make(map[uint64]int32), exact: exact}
}

// Add records id as seen on page, and reports the earlier page when it was
// seen on another page before. A repeat on the same page is a retried
// attempt re-reading its page (or a layer whose ids repeat within one
// response, which paging did not cause): not a duplicate here.
func (s *Set) Add(id string, page int) (prev int, dup bool) {
	h := maphash.String(s.seed, id)
	p, ok := s.pages[h]
	if ok && int(p) != page {
		return int(p), true
	}
	if ok || s.exact || len(s.pages) < ExactIDs || h%Sample == 0 {
		s.pages[h] = int32(page)
	}
	return 0, false
}

// Len is how many ids the Set holds.
func (s *Set) Len() int { return len(s.pages) }
