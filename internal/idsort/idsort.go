// Package idsort sorts lists of integer ids by radix. An ArcGIS layer's id
// list (and a feed's stored ids) are read whole on every incremental poll
// and sorted for the merge that proves the snapshot whole: 100,000 ids in
// three passes over their significant bytes instead of pdqsort's n·log n
// comparisons (BenchmarkInt64s prints both).
//
// Written here because no radix sort is among the modules this build may
// use; FuzzInt64s checks it against slices.Sort.
package idsort

import "slices"

// Bounds of the radix sort: below RadixMin ids a comparison sort is as
// fast; above RadixMax the scratch copy it needs (8 bytes an id) is not
// worth the time it saves, and the list is sorted in place.
const (
	RadixMin = 1 << 9
	RadixMax = 1 << 20
)

// signBit flips the sign so that negative ids order before the others
// when the keys are compared as unsigned.
const signBit = 1 << 63

// Int64s sorts ids in ascending order.
func Int64s(ids []int64) {
	if len(ids) < RadixMin || len(ids) > RadixMax {
		slices.Sort(ids)
		return
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, v := range ids {
		k := uint64(v) ^ signBit
		lo, hi = min(lo, k), max(hi, k)
	}
	// Every key lies between lo and hi, so the bytes above the highest
	// one in which they differ are the same in all of them: no pass.
	varying := lo ^ hi
	if varying == 0 {
		return
	}
	src, dst := ids, make([]int64, len(ids))
	for shift := uint(0); shift < 64 && varying>>shift != 0; shift += 8 {
		var count [256]int
		for _, v := range src {
			count[byte((uint64(v)^signBit)>>shift)]++
		}
		if count[byte(lo>>shift)] == len(src) {
			continue // a byte every key shares
		}
		sum := 0
		for b, c := range count {
			count[b] = sum
			sum += c
		}
		for _, v := range src {
			b := byte((uint64(v) ^ signBit) >> shift)
			dst[count[b]] = v
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ids[0] {
		copy(ids, src)
	}
}
