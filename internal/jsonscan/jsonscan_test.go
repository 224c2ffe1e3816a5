package jsonscan

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestSkipWS(t *testing.T) {
	for _, c := range []struct {
		in   string
		i    int
		want int
	}{
		{"", 0, 0},
		{"x", 0, 0},
		{" \t\r\nx", 0, 4},
		{"  ", 0, 2},
		{"a  b", 1, 3},
		{"a\v b", 1, 1}, // \v and \f are not JSON whitespace
		{"a\f", 1, 1},
		{"a", 1, 1},
	} {
		if got := SkipWS([]byte(c.in), c.i); got != c.want {
			t.Errorf("SkipWS(%q, %d) = %d, want %d", c.in, c.i, got, c.want)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		i    int
		want float64
		end  int
	}{
		{"0", 0, 0, 1},
		{"-0.5e+10,", 0, -0.5e10, 8},
		{"[12.25]", 1, 12.25, 6},
		{"1E-2 ", 0, 0.01, 4},
		{"[1,2]", 3, 2, 4},
		{"-1.7976931348623157e308}", 0, -math.MaxFloat64, 23},
	} {
		v, end, err := Number([]byte(c.in), c.i)
		if err != nil || v != c.want || end != c.end {
			t.Errorf("Number(%q, %d) = %v, %d, %v; want %v, %d", c.in, c.i, v, end, err, c.want, c.end)
		}
	}
	// Out of range: ±Inf with strconv.ErrRange, for the caller to judge.
	v, end, err := Number([]byte("-1e400]"), 0)
	if !errors.Is(err, strconv.ErrRange) || !math.IsInf(v, -1) || end != 6 {
		t.Errorf("Number(-1e400) = %v, %d, %v; want -Inf, 6, ErrRange", v, end, err)
	}
	for _, bad := range []string{"", "]", "null", "\"1\"", "1e", "--1", "1.2.3", " 1"} {
		if v, _, err := Number([]byte(bad), 0); err == nil {
			t.Errorf("Number(%q) = %v, want an error", bad, v)
		}
	}
}

func TestNumberDoesNotAllocate(t *testing.T) {
	b := []byte("[-123.456789012345e-3,")
	if n := testing.AllocsPerRun(100, func() { _, _, _ = Number(b, 1) }); n != 0 {
		t.Errorf("Number allocates %v times per call", n)
	}
}

// FuzzNumber holds Number to encoding/json: for every valid JSON number, in
// an array with any whitespace around it, Number stops at its end and
// yields encoding/json's value (ErrRange where encoding/json refuses a
// number beyond float64). On any other input it must not panic and must
// stay within bounds.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-12.5", "1e3", "1E+3", "2.5e-3", "123456789012345678901234567890",
		"1e400", "-1e400", "1e-400", "4.9e-324", "0.1", "1.7976931348623157e308", "+1", ".5", "01", "1.", "-", "e", "1e5e5", "0x10", "Inf", "NaN"} {
		f.Add(s, " ")
	}
	f.Fuzz(func(t *testing.T, s, space string) {
		for i := range len(s) + 1 {
			_, end, _ := Number([]byte(s), i)
			if end < i || end > len(s) {
				t.Fatalf("Number(%q, %d): end %d out of bounds", s, i, end)
			}
		}
		if SkipWS([]byte(space), 0) != len(space) {
			return // not only whitespace
		}
		var num json.Number
		if json.Unmarshal([]byte(s), &num) != nil || string(num) != s {
			return // not exactly one JSON number
		}
		var want float64
		wantErr := json.Unmarshal([]byte(s), &want)
		doc := "[" + space + s + space + "," + space + "]"
		i := SkipWS([]byte(doc), 1)
		v, end, err := Number([]byte(doc), i)
		if end != i+len(s) {
			t.Fatalf("Number(%q) ended at %d, want %d", doc, end, i+len(s))
		}
		switch {
		case wantErr != nil:
			if !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("Number(%q) = %v, %v; encoding/json: %v", s, v, err, wantErr)
			}
		case err != nil:
			t.Fatalf("Number(%q): %v; encoding/json: %v", s, err, want)
		case v != want || math.Signbit(v) != math.Signbit(want):
			t.Fatalf("Number(%q) = %v, encoding/json %v", s, v, want)
		}
	})
}
