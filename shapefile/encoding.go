package shapefile

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Encoding decodes a DBF's text to UTF-8.
type Encoding struct {
	// Name is what the encoding is called in messages ("UTF-8",
	// "ISO-8859-1", "windows-1252").
	Name string
	cm   *charmap.Charmap // nil: UTF-8
}

// Decode returns b as UTF-8, and whether bytes of invalid UTF-8 were
// replaced by U+FFFD (a UTF-8 file that is not).
func (e Encoding) Decode(b []byte) (string, bool) {
	if e.cm == nil {
		if utf8.Valid(b) {
			return string(b), false
		}
		return strings.ToValidUTF8(string(b), "\uFFFD"), true
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
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for _, c := range b {
		sb.WriteRune(e.cm.DecodeByte(c))
	}
	return sb.String(), false
}

// UTF8 is the encoding of a .cpg that says UTF-8.
var UTF8 = Encoding{Name: "UTF-8"}

// codePages maps the names a .cpg file (or the encoding: setting) uses,
// normalized (upper case, no spaces, dashes or underscores), to encodings.
var codePages = map[string]Encoding{
	"UTF8": UTF8, "65001": UTF8,
	"88591": {"ISO-8859-1", charmap.ISO8859_1}, "ISO88591": {"ISO-8859-1", charmap.ISO8859_1}, "LATIN1": {"ISO-8859-1", charmap.ISO8859_1},
	"88592": {"ISO-8859-2", charmap.ISO8859_2}, "ISO88592": {"ISO-8859-2", charmap.ISO8859_2},
	"885915": {"ISO-8859-15", charmap.ISO8859_15}, "ISO885915": {"ISO-8859-15", charmap.ISO8859_15},
	"1250": {"windows-1250", charmap.Windows1250}, "CP1250": {"windows-1250", charmap.Windows1250}, "WINDOWS1250": {"windows-1250", charmap.Windows1250},
	"1251": {"windows-1251", charmap.Windows1251}, "CP1251": {"windows-1251", charmap.Windows1251}, "WINDOWS1251": {"windows-1251", charmap.Windows1251},
	"1252": {"windows-1252", charmap.Windows1252}, "CP1252": {"windows-1252", charmap.Windows1252}, "WINDOWS1252": {"windows-1252", charmap.Windows1252},
	"ANSI1252": {"windows-1252", charmap.Windows1252},
	"1253":     {"windows-1253", charmap.Windows1253}, "1254": {"windows-1254", charmap.Windows1254},
	"1257": {"windows-1257", charmap.Windows1257},
	"437":  {"IBM437", charmap.CodePage437}, "CP437": {"IBM437", charmap.CodePage437},
	"850": {"IBM850", charmap.CodePage850}, "CP850": {"IBM850", charmap.CodePage850},
	"852": {"IBM852", charmap.CodePage852}, "866": {"IBM866", charmap.CodePage866},
}

// LookupEncoding returns the encoding a .cpg or the encoding: setting
// names, case and punctuation aside.
func LookupEncoding(name string) (Encoding, error) {
	n := strings.ToUpper(strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.TrimSpace(name)))
	if e, ok := codePages[n]; ok {
		return e, nil
	}
	return Encoding{}, fmt.Errorf("unknown encoding %q (known: UTF-8, ISO-8859-1, -2, -15, windows-1250 to -1254, -1257, CP437, CP850, CP852, CP866)", name)
}

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
