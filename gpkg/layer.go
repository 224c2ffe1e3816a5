package gpkg

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/ingestd/ingestd/schema"
)

// ColumnType maps a GeoPackage column's declared SQL type (§1.1.1.1.3,
// Table 1) to the typed view's column type, and reports false for a type
// the specification does not name (its values are then typed by
// inference). INTEGER, MEDIUMINT, SMALLINT, TINYINT and INT are bigint;
// REAL, DOUBLE and FLOAT double precision; TEXT (with or without a maximum
// length) text; DATE date; DATETIME timestamptz; BOOLEAN boolean; BLOB
// text, as its values are written base64 (what GDAL's GeoJSON gives).
func ColumnType(declared string) (schema.Type, bool) {
	t := strings.ToUpper(strings.TrimSpace(declared))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch t {
	case "INTEGER", "MEDIUMINT", "SMALLINT", "TINYINT", "INT":
		return schema.BigInt, true
	case "REAL", "DOUBLE", "FLOAT":
		return schema.Double, true
	case "TEXT", "BLOB":
		return schema.Text, true
	case "DATE":
		return schema.Date, true
	case "DATETIME":
		return schema.Timestamp, true
	case "BOOLEAN":
		return schema.Boolean, true
	}
	return "", false
}

// geometryNames is the view's spelling of gpkg_geometry_columns'
// geometry_type_name; GEOMETRY (any) leaves it open.
var geometryNames = map[string]string{
	"POINT": "Point", "LINESTRING": "LineString", "POLYGON": "Polygon",
	"MULTIPOINT": "MultiPoint", "MULTILINESTRING": "MultiLineString",
	"MULTIPOLYGON": "MultiPolygon", "GEOMETRYCOLLECTION": "GeometryCollection",
}

// checkHeader refuses a file that is not an SQLite database, and one cut
// short: SQLite reads missing pages as zeros, so a truncated file could
// otherwise yield fewer rows without an error. The header's page count is
// trusted only when it is valid (its version-valid-for number matches the
// change counter), as SQLite trusts it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("gpkg: %w", err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fmt.Errorf("gpkg: %w", err)
	}
	if n < len(h) || string(h[:16]) != "SQLite format 3\x00" {
		return fmt.Errorf("gpkg: not a GeoPackage: the file does not start with an SQLite header (%s)", feature.Snippet(h[:min(n, 16)]))
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("gpkg: %w", err)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	valid := binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if valid && pages > 0 && fi.Size() < pages*pageSize {
		return fmt.Errorf("gpkg: the file is cut short: its header counts %d pages of %d bytes (%d bytes) but it has %d bytes",
			pages, pageSize, pages*pageSize, fi.Size())
	}
	return nil
}

// quote quotes an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// prepare reads the layer's description and starts the query of its rows.
func prepare(db *sql.DB, opts Options) (*Reader, error) {
	layer, err := chooseLayer(db, opts.Layer)
	if err != nil {
		return nil, err
	}
	r := &Reader{db: db, layer: layer, limits: opts.Limits.WithDefaults(), idCol: -1}
	fail := func(what string, err error) error {
		return fmt.Errorf("gpkg: layer %s: %s: %w", feature.Snippet(layer), what, feature.Bound(err))
	}
	var geomCol, geomType string
	err = db.QueryRow(`SELECT column_name, geometry_type_name, srs_id FROM gpkg_geometry_columns WHERE table_name = ?`, layer).
		Scan(&geomCol, &geomType, &r.srsID)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("gpkg: layer %s has no row in gpkg_geometry_columns", feature.Snippet(layer))
	}
	if err != nil {
		return nil, fail("reading gpkg_geometry_columns", err)
	}
	if opts.SRID > 0 {
		r.crs = crs.Result{SRID: opts.SRID, Code: fmt.Sprintf("EPSG:%d", opts.SRID), By: crs.BySetting}
	} else {
		r.crs, err = layerCRS(db, r.srsID)
	}
	r.srid = r.crs.SRID
	if err != nil {
		return nil, fmt.Errorf("gpkg: layer %s: %w", feature.Snippet(layer), err)
	}
	// NOCASE: SQLite resolves a table's name in any case, and so do the
	// queries below and GDAL; gpkg_contents may spell it otherwise.
	var kind string
	err = db.QueryRow(`SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')`, layer).Scan(&kind)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("gpkg: layer %s is in gpkg_contents but the file has no table or view of that name", feature.Snippet(layer))
	}
	if err != nil {
		return nil, fail("reading sqlite_master", err)
	}
	r.view = kind == "view"
	pk, err := r.readColumns(db, geomCol, opts.IDProperty)
	if err != nil {
		return nil, fail("reading its columns", err)
	}
	if len(r.cols) > r.limits.Properties {
		return nil, &feature.LimitError{Name: "properties", Max: int64(r.limits.Properties), Where: "gpkg layer " + feature.Snippet(layer)}
	}
	r.declared = &schema.Declared{Geometry: geometryNames[strings.ToUpper(geomType)], Origin: "gpkg column types"}
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.name
		r.declared.Columns = append(r.declared.Columns, schema.Column{Name: c.name, Type: c.typ, Source: schema.FromDeclared})
	}
	r.keys = propjson.NewKeys(names)
	r.rows, err = db.Query(r.query(pk, geomCol))
	if err != nil {
		return nil, fail("querying its rows", err)
	}
	r.vals = make([]any, 3+2*len(r.cols))
	r.ptrs = make([]any, len(r.vals))
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	return r, nil
}

// readColumns reads the table's columns: its integer primary key (the fid;
// a view's column called fid; "" when it has none, and rowid stands in, or
// for a view the row's number) and the attribute columns.
func (r *Reader) readColumns(db *sql.DB, geomCol, idProperty string) (pk string, err error) {
	rows, err := db.Query(`SELECT name, type, pk FROM pragma_table_info(?)`, r.layer)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	found := idProperty == ""
	for rows.Next() {
		var c column
		var isPK int
		if err := rows.Scan(&c.name, &c.declType, &isPK); err != nil {
			return "", err
		}
		// A view has no primary key; GDAL takes its column called fid
		// for one.
		if pk == "" && (isPK == 1 && strings.EqualFold(c.declType, "INTEGER") || r.view && strings.EqualFold(c.name, "fid")) {
			// The fid is the id already; naming it changes nothing.
			pk, found = c.name, found || c.name == idProperty
			continue
		}
		if strings.EqualFold(c.name, geomCol) {
			continue
		}
		if c.name == idProperty {
			r.idCol, found = len(r.cols), true
		}
		c.typ, _ = ColumnType(c.declType)
		r.cols = append(r.cols, c)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no column %s for the feature id", feature.Snippet(idProperty))
	}
	return pk, nil
}

// query selects the fid, then the geometry and each column, each guarded:
// the length of a text or blob comes first, and one longer than its bound
// is not loaded (SQLite's octet_length reads its size from the record).
// Numbers count 0: they are a few bytes each, bounded by Properties.
func (r *Reader) query(pk, geomCol string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	switch {
	case pk == "" && r.view:
		b.WriteString("NULL") // decodeRow numbers the rows
	case pk == "":
		b.WriteString("rowid")
	default:
		b.WriteString(quote(pk))
	}
	guarded := func(name string, max int64) {
		q := quote(name)
		size := fmt.Sprintf("iif(typeof(%s) IN ('text', 'blob'), octet_length(%s), 0)", q, q)
		fmt.Fprintf(&b, ", %s, CASE WHEN %s > %d THEN NULL ELSE %s END", size, size, max, q)
	}
	guarded(geomCol, r.limits.FeatureBytes)
	for _, c := range r.cols {
		guarded(c.name, r.limits.ValueBytes)
	}
	fmt.Fprintf(&b, " FROM %s", quote(r.layer))
	if pk != "" {
		fmt.Fprintf(&b, " ORDER BY %s", quote(pk))
	}
	return b.String()
}

// layerCRS reads the SRS srsID from gpkg_spatial_ref_sys: its EPSG code,
// else the CRS its definition (WKT) is, as package crs identifies it (a
// GeoPackage written with a CRS GDAL could not name has organization
// NONE and the WKT alone).
func layerCRS(db *sql.DB, srsID int32) (crs.Result, error) {
	var org, def string
	var code int64
	err := db.QueryRow(`SELECT organization, organization_coordsys_id, definition FROM gpkg_spatial_ref_sys WHERE srs_id = ?`, srsID).Scan(&org, &code, &def)
	if err == sql.ErrNoRows {
		return crs.Result{}, fmt.Errorf("srs_id %d is not in gpkg_spatial_ref_sys", srsID)
	}
	if err != nil {
		return crs.Result{}, fmt.Errorf("reading gpkg_spatial_ref_sys: %w", feature.Bound(err))
	}
	if strings.EqualFold(org, "EPSG") && code > 0 {
		return crs.Result{SRID: int(code), Code: fmt.Sprintf("EPSG:%d", code), By: crs.ByAuthority}, nil
	}
	res, err := crs.Identify(def)
	if err != nil {
		return crs.Result{}, fmt.Errorf("srs_id %d (%s:%d in gpkg_spatial_ref_sys): %w", srsID, feature.Snippet(org), code, err)
	}
	return res, nil
}

// fidString renders the fid.
func fidString(v any) string {
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprint(v)
}
