package arcgis

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestIDListSort: a list of several chunks, in order, out of order within
// a chunk or only across chunks, ends sorted and whole.
func TestIDListSort(t *testing.T) {
	n := idChunk*2 + 100
	inOrder := make([]int64, n)
	for i := range inOrder {
		inOrder[i] = int64(i*3 - 7)
	}
	swapped := slices.Clone(inOrder)
	swapped[10], swapped[idChunk+5] = swapped[idChunk+5], swapped[10]
	chunksSwapped := slices.Concat(inOrder[idChunk:2*idChunk], inOrder[:idChunk], inOrder[2*idChunk:]) // each chunk sorted, the list not
	shuffled := slices.Clone(inOrder)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for name, in := range map[string][]int64{"in order": inOrder, "two swapped": swapped, "chunks swapped": chunksSwapped, "shuffled": shuffled} {
		l := &idList{}
		for _, id := range in {
			l.add(id)
		}
		if got, want := l.sorted(), slices.IsSorted(in); got != want {
			t.Errorf("%s: sorted() = %v; want %v", name, got, want)
		}
		l.sort()
		if got := l.slice(0, l.n); !slices.Equal(got, inOrder) {
			t.Errorf("%s: sorted to %d ids, first %v; want the %d ids in order", name, len(got), got[:5], n)
		}
		// A list longer than flatSortMax is sorted in place, through
		// sort.Interface.
		l = &idList{}
		for _, id := range in {
			l.add(id)
		}
		sort.Sort(l)
		if got := l.slice(0, l.n); !slices.Equal(got, inOrder) {
			t.Errorf("%s, in place: sorted to %d ids, first %v; want the %d ids in order", name, len(got), got[:5], n)
		}
	}
}

// BenchmarkIDListSort sorts a shuffled list of 100,000 ids (the fixture
// shuffles its id lists) as idList.sort does, and through sort.Interface
// in place, as it does for lists over flatSortMax:
//
//	go test -run '^$' -bench IDListSort ./arcgis
func BenchmarkIDListSort(b *testing.B) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(100_000)
	list := func() *idList {
		l := &idList{}
		for _, v := range perm {
			l.add(int64(v))
		}
		return l
	}
	for name, sortList := range map[string]func(*idList){"flat": (*idList).sort, "interface": func(l *idList) { sort.Sort(l) }} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				l := list()
				b.StartTimer()
				sortList(l)
			}
		})
	}
}
