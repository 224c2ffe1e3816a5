package shapefile_test

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/shapefile"
)

// TestLegacyEncodings: every name OpenAddresses' catalog gives an
// encoding (EUCKR, CP949, SHIFT_JISX0213, iso-8859-3, latin-1, CP1251)
// and the usual .cpg names of the other East Asian code pages decode
// text as Python's codec of that name does (the bytes below are Python's
// encoding of the text); a byte sequence that is no character is replaced
// and reported.
func TestLegacyEncodings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, hex, want string }{
		{"EUCKR", "bcadbfefc6afbab0bdc320bee7c3b5b1b8", "서울특별시 양천구"},
		{"euc-kr", "bcadbfefc6afbab0bdc320bee7c3b5b1b8", "서울특별시 양천구"},
		{"CP949", "8c63b9e6b0a2c7cf", "똠방각하"}, // 똠 is UHC's, not EUC-KR's
		{"SHIFT_JISX0213", "906a92ac", "針町"},
		{"Shift_JIS", "93de97c78ca7", "奈良県"},
		{"cp932", "93de97c78ca7", "奈良県"},
		{"iso-8859-3", "c67520f86920de616ef869f86173", "Ĉu ĝi Ŝanĝiĝas"},
		{"latin-1", "4d fc 6c 6c 65 72", "Müller"},
		{"CP1251", "cc ee f1 ea e2 e0", "Москва"},
		{"GBK", "b1b1bea9cad0", "北京市"},
		{"Big5", "bb4fa55fa5ab", "臺北市"},
		{"EUC-JP", "c5ecb5fec5d4", "東京都"},
	} {
		e, err := shapefile.LookupEncoding(tc.name)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, err := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got, repaired := e.Decode(b); got != tc.want || repaired {
			t.Errorf("%s (%s): %q (repaired %v), want %q", tc.name, e.Name, got, repaired, tc.want)
		}
	}
	sjis, _ := shapefile.LookupEncoding("SHIFT_JISX0213")
	if got, repaired := sjis.Decode([]byte("\x90\x6a\x92")); !repaired || got != "針\uFFFD" {
		t.Errorf("Shift_JIS cut inside a character: %q (repaired %v), want it replaced and reported", got, repaired)
	}
	if _, err := shapefile.LookupEncoding("klingon"); err == nil {
		t.Error("an unknown encoding is known")
	}
}

// TestSplits: a CSV's separator must not be a byte that can be the second
// half of a character of its encoding.
func TestSplits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sep  rune
		want bool
	}{
		{"UTF-8", '|', true}, {"UTF-8", '；', true}, {"ISO-8859-1", ';', true},
		{"Shift_JIS", ',', true}, {"Shift_JIS", '\t', true}, {"Shift_JIS", '|', false}, {"Shift_JIS", '@', false},
		{"EUC-KR", '|', true}, {"CP949", 'A', false}, {"GB18030", '5', false}, {"EUC-JP", '|', true},
		{"windows-1252", '§', false},
	} {
		e, err := shapefile.LookupEncoding(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Splits(tc.sep); got != tc.want {
			t.Errorf("%s splits on %q: %v, want %v", tc.name, tc.sep, got, tc.want)
		}
	}
}

// TestShiftJISX0213AgainstPython: the catalog's SHIFT_JISX0213 decodes
// every single byte and every two-byte code as Python's shift_jisx0213
// codec does (batch-machine decodes with it), a code Python has no
// character for as U+FFFD, reported; and it logs how many codes
// Shift_JIS (CP932, Windows-31J: x/text's, which jisx0213.go corrects)
// reads otherwise, for docs/decisions/0157-legacy-encodings.md. It skips
// without python3.
//
//	go test ./shapefile -run TestShiftJISX0213AgainstPython -v
func TestShiftJISX0213AgainstPython(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 (the reference codec) is not installed")
	}
	var codes []string
	for c := 0x00; c <= 0xFF; c++ {
		codes = append(codes, fmt.Sprintf("%02X", c))
	}
	for lead := 0x81; lead <= 0xFC; lead++ {
		if lead >= 0xA0 && lead <= 0xDF {
			continue
		}
		for tr := 0x40; tr <= 0xFC; tr++ {
			if tr != 0x7F {
				codes = append(codes, fmt.Sprintf("%02X%02X", lead, tr))
			}
		}
	}
	cmd := exec.Command(py, "-c", `import sys
for h in sys.stdin.read().split():
    try: print(bytes.fromhex(h).decode("shift_jisx0213").encode("utf-8").hex() or "=")
    except UnicodeDecodeError: print("-")`)
	cmd.Stdin = strings.NewReader(strings.Join(codes, "\n"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	ref := strings.Fields(string(out))
	if len(ref) != len(codes) {
		t.Fatalf("python3 answered %d codes of %d", len(ref), len(codes))
	}
	x0213, err := shapefile.LookupEncoding("SHIFT_JISX0213")
	if err != nil {
		t.Fatal(err)
	}
	cp932, err := shapefile.LookupEncoding("CP932")
	if err != nil {
		t.Fatal(err)
	}
	var chars, none, windows int
	for i, code := range codes {
		b, _ := hex.DecodeString(code)
		want := ""
		switch ref[i] {
		case "-":
			want = "\uFFFD"
			none++
		case "=":
		default:
			w, _ := hex.DecodeString(ref[i])
			want = string(w)
			chars++
		}
		if got, repaired := x0213.Decode(b); got != want || repaired != (ref[i] == "-") {
			t.Errorf("%s: %+q (repaired %v), Python's shift_jisx0213 %+q", code, got, repaired, want)
		}
		if got, _ := cp932.Decode(b); got != want {
			windows++
		}
	}
	t.Logf("%d codes checked: %d characters, %d none in Python's codec; CP932 reads %d of them otherwise", len(codes), chars, none, windows)
	// A run of ordinary text around the corrected codes.
	if got, _ := x0213.Decode([]byte("\x90\x6a\x92\xac 1\x7e3 \x81\x60 C:\x5C")); got != "針町 1‾3 〜 C:¥" {
		t.Errorf("mixed text: %q", got)
	}
}

// BenchmarkDecode decodes one address field (a Korean one of 17 bytes in
// EUC-KR, a Japanese one of 4 in Shift_JIS, a Latin-1 one of 9), as the
// CSV and DBF readers decode each field:
//
//	go test ./shapefile -run '^$' -bench BenchmarkDecode -benchmem
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct{ name, hex string }{
		{"EUCKR", "bcadbfefc6afbab0bdc320bee7c3b5b1b8"},
		{"SHIFT_JISX0213", "906a92ac"},
		{"ISO-8859-1", "50 5a 20 45 53 50 41 d1 41"},
	} {
		e, err := shapefile.LookupEncoding(bc.name)
		if err != nil {
			b.Fatal(err)
		}
		in, _ := hex.DecodeString(strings.ReplaceAll(bc.hex, " ", ""))
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				e.Decode(in)
			}
		})
	}
}
