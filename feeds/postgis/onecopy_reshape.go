package postgis

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A reshape whose new shape only adds columns (a snapshot brought new
// keys) copies the stored rows rather than rebuilding each in the generic
// form and typing every column anew (OneCopyReshapeAdd): a stored row
// keeps every key that was no column in its ingestd_rest, so a new
// column's value, and whether the row lacks the key, are read from there,
// and every other value is already what the rebuild would give it back
// (same column, type and scale). The copy still writes every row (the
// rows that lack a new key record it in ingestd_absent, and the columns
// keep the snapshot's order), but at the cost of a copy: see
// docs/decisions/0224-reshape-adds-columns.md.

// addedColumns reports whether l is old with columns added: the same
// geometry type, and each of old's columns in l under the same name,
// column, type and scale. added names l's columns that old lacks.
func addedColumns(old, l oneCopyLayer) (added map[string]bool, ok bool) {
	if old.geometry != l.geometry {
		return nil, false
	}
	byName := make(map[string]layerColumn, len(l.cols))
	for _, c := range l.cols {
		byName[c.name] = c
	}
	for _, x := range old.cols {
		y, found := byName[x.name]
		if !found || x.column != y.column || x.typ != y.typ || x.scaled != y.scaled || (x.scaled && x.scale != y.scale) {
			return nil, false
		}
		delete(byName, x.name)
	}
	added = make(map[string]bool, len(byName))
	for name := range byName {
		added[name] = true
	}
	return added, true
}

// copyRowSQL is the select list of OneCopyReshapeAdd: the layer row of l
// from the stored row o, the columns in added read from o.ingestd_rest
// as OneCopyReshape types them (the safe cast, every column inexact:
// layerRestSQL), the others copied. A new column's key leaves the rest
// when its typed value renders back as the source wrote it; a row whose
// properties are an object and lack the key gets it in ingestd_absent,
// in the order of l's columns (layerAbsentSQL). Properties that are no
// object have no keys: their rest ('null' or a one-element array) stays.
func (l oneCopyLayer) copyRowSQL(added map[string]bool) string {
	out := []string{"o.feature_id"}
	var gone, absent []string
	for _, c := range l.cols {
		col := pgx.Identifier{c.column}.Sanitize()
		key := quoteLiteral(c.name)
		if !added[c.name] {
			out = append(out, "o."+col+" AS "+col)
			absent = append(absent, fmt.Sprintf("CASE WHEN %s = ANY(o.ingestd_absent) THEN %s END", key, key))
			continue
		}
		out = append(out, typedSQL(c, "o.ingestd_rest", false)+" AS "+col)
		v := fmt.Sprintf("(o.ingestd_rest -> %s)", key)
		gone = append(gone, fmt.Sprintf("CASE WHEN coalesce(to_jsonb(%s), 'null')::text = %s::text THEN %s END",
			renderSQL(c, fmt.Sprintf("%s(%s)", castFuncs[c.typ], v)), v, key))
		absent = append(absent, fmt.Sprintf("CASE WHEN NOT coalesce(o.ingestd_rest ? %s, false) THEN %s END", key, key))
	}
	if l.hasGeom() {
		out = append(out, fmt.Sprintf("o.geom::geometry(%s, 4326) AS geom", l.geometry))
	}
	object := "(o.ingestd_rest IS NULL OR jsonb_typeof(o.ingestd_rest) = 'object')"
	rest := "o.ingestd_rest"
	if len(gone) > 0 {
		rest = fmt.Sprintf("CASE WHEN jsonb_typeof(o.ingestd_rest) = 'object' THEN nullif(o.ingestd_rest - array_remove(ARRAY[%s]::text[], NULL), '{}') ELSE o.ingestd_rest END",
			strings.Join(gone, ", "))
	}
	absentSQL := "NULL::text[]"
	if len(absent) > 0 {
		absentSQL = fmt.Sprintf("CASE WHEN %s THEN nullif(array_remove(ARRAY[%s]::text[], NULL), '{}') END",
			object, strings.Join(absent, ", "))
	}
	return strings.Join(append(out, "o.first_seen_at", "o.changed_at", "o.ingestd_poll", "o.ingestd_hash",
		rest+" AS ingestd_rest", absentSQL+" AS ingestd_absent",
		"o.ingestd_geom_single", "o.ingestd_geom"), ",\n\t")
}
