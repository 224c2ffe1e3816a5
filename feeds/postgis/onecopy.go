package postgis

import "github.com/ingestd/ingestd/schema"

// One copy of each layer (docs/decisions/0200-one-copy-of-each-layer.md):
// the layer table keeps a feed's values in typed columns and, per row, only
// the source values the columns do not give back. Whether a column gives a
// value back depends on the column's type and the value's kind alone, so
// the snapshot's profile decides per column whether any row can need the
// rest; computing it row by row in SQL costs more than the first load.

// givesBack reports whether a value of kind k, held in a layer column of
// type t and rendered back as the layer renders its columns
// (jsonb_build_object of the typed value), is the source's own jsonb text.
// A null is null in any column. Strings stay strings in text columns,
// whatever they look like; a number in a text column comes back a string.
// double precision gives nothing back for sure (0.10 renders 0.1, and 17
// digits round): it needs the column's scale, which the profile does not
// count. A timestamptz renders in its own form, not the source's.
func givesBack(k schema.ValueKind, t schema.Type) bool {
	if k == schema.KNull {
		return true
	}
	switch t {
	case schema.JSON:
		return true
	case schema.Text:
		switch k {
		case schema.KString, schema.KStrInt, schema.KStrNum, schema.KStrBool, schema.KDate, schema.KTimestamp:
			return true
		}
	case schema.BigInt:
		return k == schema.KInt
	case schema.Numeric:
		return k == schema.KInt || k == schema.KNum
	case schema.Boolean:
		return k == schema.KBool
	case schema.Date:
		return k == schema.KDate
	}
	return false
}

// columnGivesBack reports whether every value the profile counted for a
// column gives back in type t (givesBack): no row needs a rest for it.
func columnGivesBack(cp *schema.ColumnProfile, t schema.Type) bool {
	for k, n := range cp.Kinds {
		if n > 0 && !givesBack(schema.ValueKind(k), t) {
			return false
		}
	}
	return true
}
