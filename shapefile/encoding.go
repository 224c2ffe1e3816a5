package shapefile

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// Encoding decodes a DBF's (or a CSV's) text to UTF-8.
type Encoding struct {
	// Name is what the encoding is called in messages ("UTF-8",
	// "ISO-8859-1", "windows-1252", "Shift_JIS").
	Name string
	cm   *charmap.Charmap // a single-byte code page
	// mb is a multibyte encoding (cm and mb nil: UTF-8); trail reports
	// whether an ASCII byte can follow its lead byte, since a reader that
	// splits the text on an ASCII byte before decoding must not split on
	// one that may be the second half of a character.
	mb    encoding.Encoding
	trail func(c byte) bool
	// fix maps the codes that Python's codec of this name decodes
	// otherwise than mb to Python's reading (jisx0213.go).
	fix map[uint16]string
}

// Splits reports whether text in e can be cut at every c before it is
// decoded: c is never part of another character (in Shift_JIS, GBK and
// Big5, the second byte of a character can be '|' or '@').
func (e Encoding) Splits(c rune) bool {
	switch {
	case e.cm == nil && e.mb == nil:
		return true // UTF-8: every byte of a character is ≥ 0x80 but an ASCII one's
	case c >= utf8.RuneSelf:
		return false // encoding/csv reads the separator as UTF-8
	}
	return e.trail == nil || !e.trail(byte(c))
}

// The ASCII bytes that can be a character's second (in GB18030, also
// fourth) byte: a Shift_JIS, GBK or Big5 one from '@' (0x40) to '~',
// a GB18030 one a digit too, a UHC (CP949) one a letter.
func trail40(c byte) bool    { return c >= 0x40 && c < 0x7F }
func trail30(c byte) bool    { return trail40(c) || c >= '0' && c <= '9' }
func trailAlpha(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// Decode returns b as UTF-8, and whether bytes that are no character of
// the encoding were replaced by U+FFFD (a UTF-8 file that is not, a
// Shift_JIS file cut inside a character).
func (e Encoding) Decode(b []byte) (string, bool) {
	if e.cm == nil && e.mb == nil {
		if utf8.Valid(b) {
			return string(b), false
		}
		return strings.ToValidUTF8(string(b), "\uFFFD"), true
	}
	if e.fix != nil {
		return e.decodeFixed(b)
	}
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), false
	}
	if e.mb != nil {
		return e.decodeMB(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for _, c := range b {
		sb.WriteRune(e.cm.DecodeByte(c))
	}
	return sb.String(), false
}

// decodeMB decodes b, not all ASCII, with the multibyte encoding e.mb.
func (e Encoding) decodeMB(b []byte) (string, bool) {
	// One byte becomes at most three of UTF-8 (a half-width katakana of
	// Shift_JIS), so one Transform into a buffer of thrice the input is
	// the whole decoding. None of these encodings maps a character to
	// U+FFFD, so one in the output is a replaced byte sequence.
	dst := make([]byte, 3*len(b))
	n, _, err := e.mb.NewDecoder().Transform(dst, b, true)
	out := string(dst[:n])
	if err != nil {
		// Not expected of these decoders; the general path decides.
		if out, err = e.mb.NewDecoder().String(string(b)); err != nil {
			return strings.ToValidUTF8(string(b), "\uFFFD"), true
		}
	}
	return out, strings.ContainsRune(out, utf8.RuneError)
}

// decodeFixed decodes b as e.mb does but for the codes of e.fix, which
// are read as e.fix says: runs of other bytes go to decodeMB whole.
func (e Encoding) decodeFixed(b []byte) (string, bool) {
	var sb strings.Builder
	repaired := false
	start := 0
	flush := func(end int) {
		if end > start {
			s, r := e.decodeMB(b[start:end])
			sb.WriteString(s)
			repaired = repaired || r
		}
	}
	for i := 0; i < len(b); {
		c, n := uint16(b[i]), 1
		if (b[i] >= 0x81 && b[i] <= 0x9F || b[i] >= 0xE0 && b[i] <= 0xFC) && i+1 < len(b) {
			c, n = c<<8|uint16(b[i+1]), 2
		}
		if s, ok := e.fix[c]; ok {
			flush(i)
			sb.WriteString(s)
			repaired = repaired || s == "\uFFFD"
			start = i + n
		}
		i += n
	}
	flush(len(b))
	return sb.String(), repaired
}

// UTF8 is the encoding of a .cpg that says UTF-8.
var UTF8 = Encoding{Name: "UTF-8"}

// codePages maps the names a .cpg file (or the encoding: setting) uses,
// normalized (upper case, no spaces, dashes or underscores), to encodings.
var codePages = map[string]Encoding{
	"UTF8": UTF8, "65001": UTF8,
	"88591": {Name: "ISO-8859-1", cm: charmap.ISO8859_1}, "ISO88591": {Name: "ISO-8859-1", cm: charmap.ISO8859_1}, "LATIN1": {Name: "ISO-8859-1", cm: charmap.ISO8859_1},
	"88592": {Name: "ISO-8859-2", cm: charmap.ISO8859_2}, "ISO88592": {Name: "ISO-8859-2", cm: charmap.ISO8859_2},
	"885915": {Name: "ISO-8859-15", cm: charmap.ISO8859_15}, "ISO885915": {Name: "ISO-8859-15", cm: charmap.ISO8859_15},
	"1250": {Name: "windows-1250", cm: charmap.Windows1250}, "CP1250": {Name: "windows-1250", cm: charmap.Windows1250}, "WINDOWS1250": {Name: "windows-1250", cm: charmap.Windows1250},
	"1251": {Name: "windows-1251", cm: charmap.Windows1251}, "CP1251": {Name: "windows-1251", cm: charmap.Windows1251}, "WINDOWS1251": {Name: "windows-1251", cm: charmap.Windows1251},
	"1252": {Name: "windows-1252", cm: charmap.Windows1252}, "CP1252": {Name: "windows-1252", cm: charmap.Windows1252}, "WINDOWS1252": {Name: "windows-1252", cm: charmap.Windows1252},
	"ANSI1252": {Name: "windows-1252", cm: charmap.Windows1252},
	"1253":     {Name: "windows-1253", cm: charmap.Windows1253}, "1254": {Name: "windows-1254", cm: charmap.Windows1254},
	"1257": {Name: "windows-1257", cm: charmap.Windows1257},
	"437":  {Name: "IBM437", cm: charmap.CodePage437}, "CP437": {Name: "IBM437", cm: charmap.CodePage437},
	"850": {Name: "IBM850", cm: charmap.CodePage850}, "CP850": {Name: "IBM850", cm: charmap.CodePage850},
	"852": {Name: "IBM852", cm: charmap.CodePage852}, "866": {Name: "IBM866", cm: charmap.CodePage866},
	"ISO88593": {Name: "ISO-8859-3", cm: charmap.ISO8859_3}, "88593": {Name: "ISO-8859-3", cm: charmap.ISO8859_3}, "LATIN3": {Name: "ISO-8859-3", cm: charmap.ISO8859_3},

	// Multibyte encodings, by the names OpenAddresses' catalog, Python's
	// codecs and .cpg files give them. x/text's EUC-KR is the WHATWG
	// one, Windows' code page 949 (UHC), of which EUC-KR is a subset;
	// its Shift_JIS is Windows-31J (code page 932). The catalog's
	// SHIFT_JISX0213 is Python's codec of that name, which batch-machine
	// decodes with: Windows-31J but for the 4,291 codes of jisx0213.go
	// (docs/decisions/0157-legacy-encodings.md).
	"EUCKR": euckr, "KSC5601": euckr, "KSC56011987": euckr, "KSX1001": euckr,
	"CP949": cp949, "949": cp949, "UHC": cp949, "MS949": cp949, "WINDOWS949": cp949,
	"SHIFTJISX0213": {Name: "Shift_JIS X 0213", mb: japanese.ShiftJIS, trail: trail40, fix: jisx0213},
	"SHIFTJIS":      sjis, "SJIS": sjis, "CP932": sjis, "932": sjis, "MS932": sjis,
	"WINDOWS31J": sjis, "MSKANJI": sjis,
	"EUCJP": {Name: "EUC-JP", mb: japanese.EUCJP},
	"GBK":   gbk, "CP936": gbk, "936": gbk, "GB2312": gbk, "EUCCN": gbk,
	"GB18030": {Name: "GB18030", mb: simplifiedchinese.GB18030, trail: trail30},
	"BIG5":    big5, "CP950": big5, "950": big5,
}

var (
	euckr = Encoding{Name: "EUC-KR", mb: korean.EUCKR, trail: trailAlpha}
	cp949 = Encoding{Name: "CP949", mb: korean.EUCKR, trail: trailAlpha}
	sjis  = Encoding{Name: "Shift_JIS", mb: japanese.ShiftJIS, trail: trail40}
	gbk   = Encoding{Name: "GBK", mb: simplifiedchinese.GBK, trail: trail40}
	big5  = Encoding{Name: "Big5", mb: traditionalchinese.Big5, trail: trail40}
)

// LookupEncoding returns the encoding a .cpg or the encoding: setting
// names, case and punctuation aside.
func LookupEncoding(name string) (Encoding, error) {
	n := strings.ToUpper(strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.TrimSpace(name)))
	if e, ok := codePages[n]; ok {
		return e, nil
	}
	return Encoding{}, fmt.Errorf("unknown encoding %q (known: %s)", name, Known)
}

// Known lists the encodings LookupEncoding knows, for messages and the
// docs.
const Known = "UTF-8, ISO-8859-1, -2, -3, -15, windows-1250 to -1254, -1257, CP437, CP850, CP852, CP866, " +
	"EUC-KR and CP949, Shift_JIS (CP932), SHIFT_JISX0213, EUC-JP, GBK (GB2312), GB18030, Big5"

// ldids maps a DBF's language driver id (byte 29 of its header) to the
// code page it stands for, as GDAL's Shapefile driver reads it.
var ldids = map[byte]Encoding{
	0x01: codePages["437"], 0x02: codePages["850"], 0x03: codePages["1252"], 0x57: codePages["88591"], // 0x57: GDAL reads it (and writes it) as ISO-8859-1
	0x64: codePages["852"], 0x65: codePages["866"], 0xC8: codePages["1250"], 0xC9: codePages["1251"],
	0xCA: codePages["1254"], 0xCB: codePages["1253"],
}

// latin1 is GDAL's encoding of a DBF with neither a .cpg nor a language
// driver id.
var latin1 = codePages["88591"]

// resolveEncoding picks the DBF's encoding: the setting, else the .cpg,
// else the language driver id, else ISO-8859-1 (as GDAL). It says where
// the choice came from, for the log.
func resolveEncoding(setting, cpg string, ldid byte) (Encoding, string, error) {
	switch {
	case setting != "":
		e, err := LookupEncoding(setting)
		return e, "encoding setting", err
	case strings.TrimSpace(cpg) != "":
		e, err := LookupEncoding(cpg)
		if err != nil {
			return e, "", fmt.Errorf(".cpg: %w; set encoding: to override it", err)
		}
		return e, ".cpg", nil
	}
	if e, ok := ldids[ldid]; ok {
		return e, fmt.Sprintf("DBF language driver 0x%02X", ldid), nil
	}
	return latin1, "no .cpg nor language driver (GDAL's default)", nil
}
