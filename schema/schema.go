// Package schema owns the typed model of a feed's attributes: the column
// types ingestd maps values to, the profile of a snapshot's values from
// which a schema is inferred (with the widening rules written down on
// Infer), the Declared schema a kind reads from its server (FromXSD for a
// WFS DescribeFeatureType; the arcgis and ogcapi packages map an ArcGIS
// layer's fields and an OGC API JSON Schema themselves), the typing of a
// text encoding's values by their declared type (Typer), the view's column
// names, the Memo of each layer's last declared schema, and the drift
// between two schemas.
//
// It imports no ingestd package: kinds fill a Declared, the store
// profiles what it stages and builds the Schema it keeps in SQL.
package schema

import (
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"
)

// Type is a column's PostgreSQL type in a feed's typed view.
type Type string

// The column types, by their PostgreSQL names.
const (
	Text      Type = "text"
	BigInt    Type = "bigint"
	Numeric   Type = "numeric"
	Double    Type = "double precision"
	Boolean   Type = "boolean"
	Date      Type = "date"
	Timestamp Type = "timestamptz"
	JSON      Type = "jsonb"
)

// Valid reports whether t is one of the column types.
func (t Type) Valid() bool {
	switch t {
	case Text, BigInt, Numeric, Double, Boolean, Date, Timestamp, JSON:
		return true
	}
	return false
}

// Numberish reports whether values of t are JSON numbers in properties.
func (t Type) Numberish() bool { return t == BigInt || t == Numeric || t == Double }

// Source says where a column's type came from.
type Source string

const (
	// FromDeclared: the protocol's own description of the layer (WFS
	// DescribeFeatureType; ArcGIS fields and OGC API queryables by adapter).
	FromDeclared Source = "declared"
	// FromInferred: the snapshot's values (Infer).
	FromInferred Source = "inferred"
)

// Column is one attribute of a feed.
type Column struct {
	Name   string
	Type   Type
	Source Source
	// NonNull counts the snapshot's features with a non-null value;
	// Unconverted those whose value does not convert to Type (NULL in the
	// typed view).
	NonNull, Unconverted int64
	// Loose marks a declared column whose declaration admits a narrower
	// type the values may prove (JSON Schema "number" or "string" without
	// a format, which tipg gives every integer and date): see Build.
	Loose bool
	// DeclaredType is the type the protocol declared when every value
	// proved a narrower one, which Type then is (Source FromInferred):
	// feed_columns.declared_type records the disagreement. "" otherwise.
	DeclaredType Type
}

// Declared is a layer's schema as its protocol declares it: the columns
// in the source's order and, when known, the geometry type.
//
// A kind's fetcher reports one in source.FetchStats.Declared, with one
// small adapter from its own description: WFS's DescribeFeatureType
// through FromXSD, ArcGIS REST's layer `fields` (arcgis.FieldType:
// esriFieldType* → Type), OGC API – Features' collection schema or
// queryables through ogcapi.FromJSONSchema.
type Declared struct {
	// Columns in the source's order. A column with no Type keeps its
	// place, its type inferred from the values (a property the description
	// names without a usable type).
	Columns []Column
	// ID names the property the description declares as the feature id
	// (an OGC API schema's x-ogc-role id), listed in Columns at its place:
	// a column when the features carry it among their properties, none
	// when the server keeps it out of them.
	ID string
	// Geometry is the declared geometry type (GeometryName's spelling,
	// e.g. "MultiPolygon"), "" when the protocol leaves it open.
	Geometry string
	// Origin names the description, e.g. "wfs DescribeFeatureType".
	Origin string
}

// Lookup returns the declared type of the column name.
func (d *Declared) Lookup(name string) (Type, bool) {
	if d == nil {
		return "", false
	}
	for _, c := range d.Columns {
		if c.Name == name {
			return c.Type, true
		}
	}
	return "", false
}

// Schema is a feed's schema as of one snapshot.
type Schema struct {
	Columns []Column
	// Geometry is the view's geometry type: one type ("MultiPolygon"),
	// "Geometry" when mixed, "" when the layer has no geometry.
	Geometry string
	// Features is how many features the snapshot profiled.
	Features int64
}

// Column returns the column named name.
func (s *Schema) Column(name string) (Column, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// NonNullShare is the share of features with a non-null value of c.
func (s *Schema) NonNullShare(c Column) float64 {
	if s.Features == 0 {
		return 0
	}
	return float64(c.NonNull) / float64(s.Features)
}

// Build returns the schema of a snapshot: the declared columns first, in
// their declared order with their declared types (a declared column the
// snapshot never carries stays, all null; but the id and a column declared
// without a type are columns only when the values carry them), then the
// columns only the values show, in the order they first appear, with
// inferred types. A Loose declared type that every non-null value
// contradicts gives way to the narrower type the values prove (integers
// declared number: bigint; ISO dates declared string: date or
// timestamptz), the declared type kept in DeclaredType.
// keep are the stored columns: one whose type a previous poll took from a
// declaration keeps it when this poll has none (the description could not
// be read), and one that holds only nulls now keeps its type, instead of
// flapping to text.
func Build(p *Profile, d *Declared, keep []Column) Schema {
	s := Schema{Features: p.Features, Geometry: p.GeometryType()}
	if d != nil && d.Geometry != "" && s.Geometry == "" {
		s.Geometry = d.Geometry
	}
	seen := make(map[string]bool)
	add := func(c Column) {
		if cp := p.column(c.Name); cp != nil {
			c.NonNull = cp.nonNull()
			c.Unconverted = cp.unconverted(c.Type)
		}
		s.Columns = append(s.Columns, c)
		seen[c.Name] = true
	}
	if d != nil {
		for _, c := range d.Columns {
			cp := p.column(c.Name)
			switch {
			case seen[c.Name]:
			case cp == nil && (c.Type == "" || c.Name == d.ID):
				// The id kept out of the properties; a type left to
				// values that never came.
			case c.Type == "":
				add(inferred(cp, d, keep))
			default:
				add(declaredColumn(c, cp))
			}
		}
	}
	for i := range p.Columns {
		if !seen[p.Columns[i].Name] {
			add(inferred(&p.Columns[i], d, keep))
		}
	}
	return s
}

// inferred is the column of the values cp: their inferred type, or the
// stored one (keep) where it outlives this poll.
func inferred(cp *ColumnProfile, d *Declared, keep []Column) Column {
	c := Column{Name: cp.Name, Type: Infer(cp.Kinds), Source: FromInferred}
	for _, k := range keep {
		// A declared type outlives a poll that could not read the
		// declaration; any type outlives a poll where the column holds
		// only nulls (nothing to infer from).
		if k.Name == cp.Name && ((d == nil && k.Source == FromDeclared) || cp.nonNull() == 0) {
			c.Type, c.Source, c.DeclaredType = k.Type, k.Source, k.DeclaredType
		}
	}
	return c
}

// declaredColumn is the declared column c with the values cp (nil: none):
// its declared type, or a Loose one's narrower type the values prove.
func declaredColumn(c Column, cp *ColumnProfile) Column {
	out := Column{Name: c.Name, Type: c.Type, Source: FromDeclared}
	if !c.Loose || cp == nil || cp.nonNull() == 0 {
		return out
	}
	if v := Infer(cp.Kinds); narrows(c.Type, v) {
		out.Type, out.Source, out.DeclaredType = v, FromInferred, c.Type
	}
	return out
}

// narrows reports whether v is a narrower type than the loosely declared
// t that holds every value t would: a whole number for a number, a date
// or a timestamp for a string.
func narrows(t, v Type) bool {
	switch t {
	case Numeric, Double:
		return v == BigInt
	case Text:
		return v == Date || v == Timestamp
	}
	return false
}

// Change is one difference between a feed's stored schema and a snapshot's.
type Change struct {
	Column string
	// What: "added", "removed", "retyped" or "null_collapse".
	What             string
	OldType, NewType Type
	// OldShare and NewShare are the non-null shares (null_collapse).
	OldShare, NewShare float64
}

// Kinds of Change.
const (
	Added        = "added"
	Removed      = "removed"
	Retyped      = "retyped"
	NullCollapse = "null_collapse"
)

// CollapseFrom is the non-null share above which a column that becomes
// all null is a null collapse: a field that was mostly filled and is now
// never filled is a broken export, not a quiet attribute.
const CollapseFrom = 0.5

// Diff lists the changes from old (the stored schema) to cur (the
// snapshot's): columns added, removed, retyped, and those whose non-null
// share collapsed from above CollapseFrom to 0. A snapshot with no
// features collapses nothing (the empty guard judges it).
func Diff(old, cur Schema) []Change {
	var out []Change
	for _, c := range cur.Columns {
		o, ok := old.Column(c.Name)
		switch {
		case !ok:
			out = append(out, Change{Column: c.Name, What: Added, NewType: c.Type})
		case o.Type != c.Type && !(o.Source == FromInferred && o.NonNull == 0):
			// (A column that held only nulls had no type to change.)
			out = append(out, Change{Column: c.Name, What: Retyped, OldType: o.Type, NewType: c.Type})
		}
		if ok && cur.Features > 0 && c.NonNull == 0 && old.NonNullShare(o) > CollapseFrom {
			out = append(out, Change{Column: c.Name, What: NullCollapse, OldType: o.Type, NewType: c.Type,
				OldShare: old.NonNullShare(o), NewShare: 0})
		}
	}
	for _, o := range old.Columns {
		if _, ok := cur.Column(o.Name); !ok {
			out = append(out, Change{Column: o.Name, What: Removed, OldType: o.Type})
		}
	}
	return out
}

// String describes c for a hold reason and a log.
func (c Change) String() string {
	switch c.What {
	case Added:
		return fmt.Sprintf("%q added (%s)", c.Column, c.NewType)
	case Removed:
		return fmt.Sprintf("%q removed (was %s)", c.Column, c.OldType)
	case Retyped:
		return fmt.Sprintf("%q retyped %s → %s", c.Column, c.OldType, c.NewType)
	case NullCollapse:
		return fmt.Sprintf("%q null collapse: non-null %.0f%% → %.0f%%", c.Column, 100*c.OldShare, 100*c.NewShare)
	}
	return c.Column + " " + c.What
}

// Describe joins changes for a hold reason: "schema: …; …".
func Describe(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return "schema: " + strings.Join(parts, "; ")
}

// viewOwnColumns are the typed view's columns that are not attributes.
var viewOwnColumns = map[string]bool{"feature_id": true, "geom": true, "jurisdiction": true, "feed": true,
	"first_seen_at": true, "changed_at": true,
	// The one-copy layer table's bookkeeping (docs/decisions/0200), and
	// the columns its first load counts with before dropping them.
	"ingestd_poll": true, "ingestd_hash": true, "ingestd_rest": true, "ingestd_absent": true,
	"ingestd_geom_single": true, "ingestd_geom": true, "ingestd_load_invalid": true,
	"ingestd_load_out_of_range": true, "ingestd_load_skip": true, "ingestd_load_named": true}

// ViewColumn is the typed view's column for the property name: the name
// itself, unless it is one of the view's own columns (feature_id, geom,
// jurisdiction, feed, first_seen_at, changed_at, and the layer table's
// bookkeeping columns ingestd_…: then name_attr) or
// longer than PostgreSQL's 63 bytes (then its first bytes and a hash of
// the whole, so that two long names that share a prefix stay apart).
func ViewColumn(name string) string {
	if name == "" {
		return "_"
	}
	if viewOwnColumns[name] {
		return name + "_attr"
	}
	if len(name) <= 63 {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	cut := 54
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%s_%08x", name[:cut], h.Sum32())
}

// ViewColumns maps names (a schema's columns, in order) to distinct view
// columns: ViewColumn's, and for a name whose column an earlier name took
// (a property "feed_attr" beside one "feed"), that column with _2, _3….
// The same names in the same order always get the same columns.
func ViewColumns(names []string) []string {
	out := make([]string, len(names))
	used := make(map[string]bool, len(names))
	for i, n := range names {
		c := ViewColumn(n)
		for k := 2; used[c] || viewOwnColumns[c]; k++ {
			c = fmt.Sprintf("%s_%d", ViewColumn(n), k)
		}
		used[c] = true
		out[i] = c
	}
	return out
}
