package idsort

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// check sorts a copy of ids and fails unless it equals slices.Sort's.
func check(t *testing.T, name string, ids []int64) {
	t.Helper()
	got, want := slices.Clone(ids), slices.Clone(ids)
	Int64s(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s (%d ids): first difference at %d: %d, want %d", name, len(ids), i, got[i], want[i])
	}
}

// TestInt64s sorts lists on both sides of the radix bounds: shuffled
// object ids, ids spread over the whole int64 range (negatives first),
// repeats, one value, and lists already sorted or reversed.
func TestInt64s(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, RadixMin - 1, RadixMin, 1000, 100_000, RadixMax, RadixMax + 1} {
		seq := make([]int64, n)
		for i := range seq {
			seq[i] = int64(i + 1)
		}
		shuffled := slices.Clone(seq)
		rng.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		check(t, "shuffled object ids", shuffled)
		check(t, "sorted", seq)
		slices.Reverse(seq)
		check(t, "reversed", seq)
		wide := make([]int64, n)
		for i := range wide {
			wide[i] = int64(rng.Uint64())
		}
		if n > 2 {
			wide[0], wide[1], wide[2] = math.MinInt64, math.MaxInt64, 0
		}
		check(t, "the whole range", wide)
		repeats := make([]int64, n)
		for i := range repeats {
			repeats[i] = rng.Int64N(7) - 3
		}
		check(t, "repeats around zero", repeats)
		same := make([]int64, n)
		for i := range same {
			same[i] = 1 << 40
		}
		check(t, "one value", same)
		// Ids that differ only in a high byte: the low passes are skipped.
		high := make([]int64, n)
		for i := range high {
			high[i] = int64(rng.IntN(256)) << 48
		}
		check(t, "a high byte", high)
	}
}

// FuzzInt64s sorts the fuzzer's bytes read as ids (repeated up to the
// radix bound) and compares with slices.Sort.
func FuzzInt64s(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint16(600))
	f.Fuzz(func(t *testing.T, b []byte, n uint16) {
		if len(b) < 8 {
			return
		}
		ids := make([]int64, 0, int(n))
		for i := 0; i < int(n); i++ {
			off := (i * 8) % (len(b) - 7)
			ids = append(ids, int64(binary.LittleEndian.Uint64(b[off:]))+int64(i%3))
		}
		check(t, "fuzzed", ids)
	})
}

// BenchmarkInt64s sorts 100,000 shuffled object ids (a county parcel
// layer's id list, as servers list them in no promised order) by radix
// and, for comparison, by slices.Sort.
func BenchmarkInt64s(b *testing.B) {
	ids := make([]int64, 100_000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	work := make([]int64, len(ids))
	for _, sorter := range []struct {
		name string
		sort func([]int64)
	}{{"radix", Int64s}, {"slices.Sort", slices.Sort[[]int64]}} {
		b.Run(sorter.name, func(b *testing.B) {
			for b.Loop() {
				copy(work, ids)
				sorter.sort(work)
			}
		})
	}
}
