package schema

import (
	"bytes"
	"strings"
)

// AppendTyped appends text (a value a text encoding such as GML carries
// as characters) as the JSON value its declared type t makes it: a number
// for bigint, numeric and double precision when the trimmed text is a
// number (StringKind KStrInt or KStrNum), leading zeros dropped so that
// the JSON is valid; true or false for boolean ("true", "1", "false",
// "0"). It returns false when t does not type text (text, dates, a value
// that does not read as t): the caller writes a JSON string as before.
//
// The migration that typed stored GML values (ingestd_typed_value) applies
// the same rules in SQL, so that a feature unchanged at its source keeps
// its content hash.
func AppendTyped(dst []byte, t Type, text []byte) ([]byte, bool) {
	s := string(bytes.Trim(text, " \t\r\n"))
	switch {
	case t.Numberish():
		k := StringKind(s)
		if k != KStrInt && k != KStrNum {
			return dst, false
		}
		return append(dst, canonicalNumber(s)...), true
	case t == Boolean:
		switch s {
		case "true", "1":
			return append(dst, "true"...), true
		case "false", "0":
			return append(dst, "false"...), true
		}
	}
	return dst, false
}

// canonicalNumber drops the leading zeros of a number's integer part
// (JSON allows none): "-007.5" is "-7.5".
func canonicalNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	i := 0
	for i < len(s)-1 && s[i] == '0' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
	}
	s = s[i:]
	if neg {
		return "-" + s
	}
	return s
}

// Typer returns the function a text decoder calls to type property
// values by d's declared columns (AppendTyped), or nil when d declares
// nothing it would type.
func Typer(d *Declared) func(dst []byte, name string, text []byte) ([]byte, bool) {
	if d == nil {
		return nil
	}
	types := make(map[string]Type)
	for _, c := range d.Columns {
		if c.Type.Numberish() || c.Type == Boolean {
			types[c.Name] = c.Type
		}
	}
	if len(types) == 0 {
		return nil
	}
	return func(dst []byte, name string, text []byte) ([]byte, bool) {
		t, ok := types[name]
		if !ok {
			return dst, false
		}
		return AppendTyped(dst, t, text)
	}
}
