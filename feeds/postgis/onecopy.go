package postgis

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/schema"
)

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
// double precision gives nothing back by kind alone (0.10 renders 0.1, and
// 17 digits round): its numbers give back only at the column's scale
// (columnGivesBack, ColumnProfile.DoubleScale). A timestamptz renders in
// its own form, not the source's.
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
// column gives back in type t (givesBack, and a double precision column's
// numbers when they share a scale: layerColumn.scaled): no row needs a
// rest for it.
func columnGivesBack(cp *schema.ColumnProfile, t schema.Type) bool {
	_, scaled := doubleScale(cp, t)
	for k, n := range cp.Kinds {
		kind := schema.ValueKind(k)
		number := kind == schema.KInt || kind == schema.KNum
		if n > 0 && !givesBack(kind, t) && !(scaled && number) {
			return false
		}
	}
	return true
}

// doubleScale is the scale a layer column of type t renders its values at:
// for double precision, the one scale its numbers share
// (ColumnProfile.DoubleScale); for any other type none.
func doubleScale(cp *schema.ColumnProfile, t schema.Type) (int, bool) {
	if t != schema.Double {
		return 0, false
	}
	return cp.DoubleScale()
}

// layerColumn is one typed column of a one-copy layer, as the rest and
// rebuild expressions need it.
type layerColumn struct {
	// name is the property's key, column the layer's column name.
	name, column string
	typ          schema.Type
	// exact: every value the snapshot's profile counted gives back
	// (columnGivesBack), so no row's value of it goes to the rest.
	exact bool
	// scaled: a double precision column renders as numeric rounded to
	// scale (doubleScale), which gives its numbers back as the source
	// wrote them; unscaled, it renders as a double does.
	scaled bool
	scale  int
}

// renderSQL is the SQL of the value expr of column c as the layer renders
// it into the generic row: itself, or a scaled double as numeric.
func renderSQL(c layerColumn, expr string) string {
	if c.scaled {
		return fmt.Sprintf("round((%s)::numeric, %d)", expr, c.scale)
	}
	return expr
}

// castFuncs are the layer's safe casts by column type (the migrations'
// ingestd_as_* functions: a value that does not convert is NULL).
var castFuncs = map[schema.Type]string{
	schema.Text: "ingestd_as_text", schema.BigInt: "ingestd_as_bigint", schema.Numeric: "ingestd_as_numeric",
	schema.Double: "ingestd_as_double", schema.Boolean: "ingestd_as_boolean", schema.Date: "ingestd_as_date",
	schema.Timestamp: "ingestd_as_timestamptz", schema.JSON: "ingestd_as_jsonb",
}

// buildObjectPairs bounds the key/value pairs of one jsonb_build_object
// call: a function takes at most 100 arguments (FUNC_MAX_ARGS).
const buildObjectPairs = 50

// jsonObjectSQL is the SQL of a jsonb object of the pairs (each "key,
// value" SQL), built 50 pairs a call and concatenated.
func jsonObjectSQL(pairs []string) string {
	if len(pairs) == 0 {
		return "'{}'::jsonb"
	}
	var b strings.Builder
	for i := 0; i < len(pairs); i += buildObjectPairs {
		if i > 0 {
			b.WriteString(" || ")
		}
		b.WriteString("jsonb_build_object(")
		b.WriteString(strings.Join(pairs[i:min(i+buildObjectPairs, len(pairs))], ", "))
		b.WriteString(")")
	}
	return b.String()
}

// layerRestSQL is the SQL of a row's ingestd_rest over p, an SQL
// expression of the row's source properties (jsonb): the source's value
// of each inexact column whose typed value does not render back as it
// (text compared: jsonb's = calls 0.1 and 0.10 equal), and, unless
// allKeys says every key of the snapshot is a column (the schema is built
// from the profile of every key), the keys that are no column; NULL when
// there is none. Exact columns cost nothing here, and nothing here
// aggregates or rebuilds the properties for a row that needs no rest.
func layerRestSQL(p string, cols []layerColumn, allKeys bool) string {
	var parts, names []string
	for _, c := range cols {
		key := quoteLiteral(c.name)
		names = append(names, key)
		if c.exact {
			continue
		}
		v := fmt.Sprintf("(%s -> %s)", p, key)
		parts = append(parts, fmt.Sprintf("CASE WHEN coalesce(to_jsonb(%s), 'null')::text <> %s::text THEN jsonb_build_object(%s, %s) END",
			renderSQL(c, fmt.Sprintf("%s(%s)", castFuncs[c.typ], v)), v, key, v))
	}
	if !allKeys {
		if len(names) == 0 {
			parts = append(parts, p)
		} else {
			parts = append(parts, fmt.Sprintf("(%s - ARRAY[%s]::text[])", p, strings.Join(names, ", ")))
		}
	}
	switch {
	case len(parts) == 0:
		return "NULL::jsonb"
	case len(parts) == 1 && allKeys:
		return parts[0]
	}
	for i := range parts {
		parts[i] = fmt.Sprintf("coalesce(%s, '{}')", parts[i])
	}
	return fmt.Sprintf("nullif(%s, '{}')", strings.Join(parts, " || "))
}

// layerAbsentSQL is the SQL of a row's ingestd_absent over p: the columns'
// keys the row's properties lack (an absent key and a null differ in the
// content hash), NULL when it has them all — one ?& test for most rows.
// The profile cannot spare it: it counts an absent key as a null. No
// subquery: one would make the first load's parallel scan of staging
// parallel-restricted, run by the leader alone.
func layerAbsentSQL(p string, cols []layerColumn) string {
	if len(cols) == 0 {
		return "NULL::text[]"
	}
	keys := make([]string, len(cols))
	each := make([]string, len(cols))
	for i, c := range cols {
		keys[i] = quoteLiteral(c.name)
		each[i] = fmt.Sprintf("CASE WHEN NOT %s ? %s THEN %s END", p, keys[i], keys[i])
	}
	return fmt.Sprintf("CASE WHEN %s IS NOT NULL AND NOT %s ?& ARRAY[%s]::text[] THEN array_remove(ARRAY[%s]::text[], NULL) END",
		p, p, strings.Join(keys, ", "), strings.Join(each, ", "))
}

// layerPropertiesSQL is the SQL of a row's properties as the source sent
// them, rebuilt from the layer row l (an alias): every column rendered,
// less the keys the row lacked, with the rest laid over. Properties that
// are no object are their rest (layerRestOfSQL).
func layerPropertiesSQL(l string, cols []layerColumn) string {
	pairs := make([]string, len(cols))
	for i, c := range cols {
		pairs[i] = fmt.Sprintf("%s, %s", quoteLiteral(c.name), renderSQL(c, l+"."+pgx.Identifier{c.column}.Sanitize()))
	}
	return fmt.Sprintf("CASE WHEN %s.ingestd_rest = 'null' THEN NULL WHEN jsonb_typeof(%s.ingestd_rest) = 'array' THEN %s.ingestd_rest -> 0 "+
		"ELSE ((%s) - coalesce(%s.ingestd_absent, '{}')) || coalesce(%s.ingestd_rest, '{}') END",
		l, l, l, jsonObjectSQL(pairs), l, l)
}

// layerRestOfSQL is the SQL of the ingestd_rest of properties p (jsonb),
// rest being layerRestSQL's for an object: properties that are no object
// cannot be split into columns and are kept whole, SQL NULL (a feature
// sent without properties) as JSON null and any other value in a
// one-element array (a rest of an object is an object).
func layerRestOfSQL(p, rest string) string {
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN 'null'::jsonb WHEN jsonb_typeof(%s) <> 'object' THEN jsonb_build_array(%s) ELSE %s END",
		p, p, p, rest)
}
