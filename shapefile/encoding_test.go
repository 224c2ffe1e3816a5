package shapefile_test

import (
	"encoding/hex"
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
