package esrijson

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// The hand-written number parser agrees with encoding/json whenever it
// accepts an input (and leaves the rest to encoding/json's slow path). Its
// input is valid JSON (the reader's json.Decoder validated the feature), so
// only that is compared: it does not check JSON's number grammar itself.
func FuzzFastParts(f *testing.F) {
	f.Add(`[[[0,0],[1,2.5,3],[-1e3,4E-2]],[]]`)
	f.Add(`[[[0,0],{"c":[[1,1],[2,2]]}]]`)
	f.Add(`[[[1,null]]]`)
	f.Add(` [ [ [ 1 , 2 ] ] ] `)
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(s)
		if !json.Valid(raw) {
			return
		}
		if got := fastParts(raw); got != nil {
			var want [][][]float64
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("fastParts accepted %q, encoding/json: %v", s, err)
			}
			if !sameParts(got, want) {
				t.Fatalf("%q: fastParts %v, encoding/json %v", s, got, want)
			}
		}
		if got := fastPositions(raw); got != nil {
			var want [][]float64
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("fastPositions accepted %q, encoding/json: %v", s, err)
			}
			if !sameParts([][][]float64{got}, [][][]float64{want}) {
				t.Fatalf("%q: fastPositions %v, encoding/json %v", s, got, want)
			}
		}
	})
}

func sameParts(a, b [][][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y [][]float64) bool {
		return slices.EqualFunc(x, y, func(p, q []float64) bool {
			return slices.EqualFunc(p, q, func(u, v float64) bool { return u == v || (math.IsNaN(u) && math.IsNaN(v)) })
		})
	})
}

// eachMember splits an object as encoding/json reads it.
func TestEachMember(t *testing.T) {
	obj := []byte(` { "a" : 1 , "b\u0022":{"x":[1,"]"]}, "c":"}" ,"d":null} `)
	var keys, vals []string
	if err := eachMember(obj, func(k, v []byte) error {
		keys = append(keys, keyString(k))
		vals = append(vals, string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"a", `b"`, "c", "d"}) || !slices.Equal(vals, []string{"1", `{"x":[1,"]"]}`, `"}"`, "null"}) {
		t.Errorf("keys %q vals %q", keys, vals)
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1,}`, `{"a":1`, `{"a":"x}`} {
		if err := eachMember([]byte(bad), func(k, v []byte) error { return nil }); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
