package conform

import (
	"testing"
	"unicode/utf8"
)

// FuzzBuiltinScan holds prefixedNumber and postfixedStreet to
// batch-machine's patterns, which regexp2 runs in the slow path.
//
//	go test ./conform -run '^$' -fuzz FuzzBuiltinScan -fuzztime 60s
func FuzzBuiltinScan(f *testing.F) {
	for _, s := range []string{
		"123 MAIN ST", "12 3/4 MAIN", "12 3/4MAIN", "12-3/4 X", "12-34 X", "12-34X", "12-a X", "12a\tX",
		"12ſ MAIN", "  7  OAK\nDR", "٣٤ x", "12\x1cMAIN", "12 ", "12", "", " \n ", "MAIN ST", "3rd ST",
		"12-\u0130 MAIN", "12-1/2\u00a0MAIN ST", "69-15 51st AVE\nUNIT 4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, tt := range []struct {
			name string
			fast func(string) string
			re   *pyRegexp
		}{
			{"prefixed_number", prefixedNumber, prefixedNumberRe},
			{"postfixed_street", postfixedStreet, postfixedStreetRe},
		} {
			text, m, err := tt.re.search(s)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if m != nil && m.spans[1][0] >= 0 {
				want = string(text[m.spans[1][0]:m.spans[1][1]])
			}
			if got := tt.fast(s); got != want {
				t.Errorf("%s(%q) = %q, the pattern gives %q", tt.name, s, got, want)
			}
		}
	})
}

// TestBuiltinScanAllShort compares prefixedNumber and postfixedStreet with
// the patterns on every string of up to five characters over an alphabet
// of the characters the patterns treat differently.
func TestBuiltinScanAllShort(t *testing.T) {
	alphabet := []rune{'1', '2', ' ', '-', '/', 'a', 'ſ', '\n', '\x1c', '٣'}
	n := 0
	var walk func(prefix []rune)
	walk = func(prefix []rune) {
		s := string(prefix)
		n++
		for _, tt := range []struct {
			fast func(string) string
			re   *pyRegexp
		}{{prefixedNumber, prefixedNumberRe}, {postfixedStreet, postfixedStreetRe}} {
			text, m, err := tt.re.search(s)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if m != nil && m.spans[1][0] >= 0 {
				want = string(text[m.spans[1][0]:m.spans[1][1]])
			}
			if got := tt.fast(s); got != want {
				t.Fatalf("%q: got %q, the pattern gives %q", s, got, want)
			}
		}
		if len(prefix) < 5 {
			for _, r := range alphabet {
				walk(append(prefix, r))
			}
		}
	}
	walk(nil)
	if n != 111111 {
		t.Errorf("%d strings", n)
	}
}
