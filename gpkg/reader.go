package gpkg

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/ingestd/ingestd/schema"
	"github.com/twpayne/go-geom"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options say which layer to read and how far a feature may go.
type Options struct {
	// Layer is the features table to read; "" reads the file's only one
	// (a file with several is an error listing them).
	Layer string
	// IDProperty names the column whose value is the feature id; "" means
	// the table's primary key (the fid).
	IDProperty string
	// SRID, when positive, is the SRID of the geometries whatever the
	// file declares (the feed's crs:, for a file whose CRS is missing or
	// not one package crs identifies); 0 reads the file's own and fails
	// without one.
	SRID int
	// Limits bound each feature (FeatureBytes, ValueBytes, Properties,
	// IDBytes); zero fields are the defaults.
	Limits feature.Limits
}

// Reader streams the features of one GeoPackage layer. It implements
// feature.FeatureReader; Close releases the database.
type Reader struct {
	db       *sql.DB
	rows     *sql.Rows
	layer    string
	limits   feature.Limits
	srid     int
	crs      crs.Result
	srsID    int32
	declared *schema.Declared
	cols     []column
	keys     propjson.Keys
	idCol    int // index in cols of Options.IDProperty, -1: the fid
	// view: the layer is a view, which has no rowid; without a fid
	// column its rows are numbered from 0 in the order they come, as
	// GDAL numbers them.
	view bool

	vals  []any
	ptrs  []any
	index int
	obj   propjson.Object
	f     feature.Feature
	err   error
}

// column is one attribute column of the layer.
type column struct {
	name, declType string
	typ            schema.Type
}

// Layers lists the features tables of the GeoPackage at path, in the order
// of gpkg_contents.
func Layers(path string) ([]string, error) {
	db, err := open(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return layers(db)
}

// Open opens the GeoPackage at path read-only and prepares to read the
// layer opts.Layer: its geometry column, SRS (an EPSG code, else an
// error), columns and their declared types.
func Open(path string, opts Options) (*Reader, error) {
	db, err := open(path)
	if err != nil {
		return nil, err
	}
	r, err := prepare(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// open checks that path is a whole SQLite database with the GeoPackage
// tables, and opens it.
func open(path string) (*sql.DB, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	// immutable: the file is the kind's own temporary copy; SQLite then
	// takes no lock and writes no -shm or journal beside it.
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("gpkg: %w", err)
	}
	db.SetMaxOpenConns(1)
	var n int
	err = db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type IN ('table','view')
		AND name IN ('gpkg_contents','gpkg_spatial_ref_sys','gpkg_geometry_columns')`).Scan(&n)
	if err != nil {
		db.Close()
		// SQLite's words ("file is not a database (26)") add nothing.
		return nil, errors.New("gpkg: not a GeoPackage: the file starts with an SQLite header but SQLite cannot read it as a database (it is damaged, or another format)")
	}
	if n != 3 {
		db.Close()
		return nil, errors.New("gpkg: an SQLite database but not a GeoPackage: it lacks the gpkg_contents, gpkg_spatial_ref_sys or gpkg_geometry_columns table")
	}
	return db, nil
}

func layers(db *sql.DB) ([]string, error) {
	rows, err := db.Query(`SELECT table_name FROM gpkg_contents WHERE lower(data_type) = 'features' ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("gpkg: reading gpkg_contents: %w", feature.Bound(err))
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("gpkg: reading gpkg_contents: %w", feature.Bound(err))
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("gpkg: reading gpkg_contents: %w", feature.Bound(err))
	}
	return names, nil
}

// chooseLayer picks want among the file's features tables.
func chooseLayer(db *sql.DB, want string) (string, error) {
	names, err := layers(db)
	if err != nil {
		return "", err
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		if n == want {
			return n, nil
		}
		quoted[i] = strconv.Quote(n)
	}
	switch {
	case len(names) == 0:
		return "", errors.New("gpkg: the GeoPackage has no features table in gpkg_contents")
	case want == "" && len(names) == 1:
		return names[0], nil
	case want == "":
		return "", fmt.Errorf("gpkg: the GeoPackage has %d layers (%s): say which one with layer:", len(names), strings.Join(quoted, ", "))
	}
	return "", fmt.Errorf("gpkg: no layer %s in the GeoPackage; its layers: %s", feature.Snippet(want), strings.Join(quoted, ", "))
}

// Declared is the layer's schema as the GeoPackage declares it: its
// attribute columns in table order (the fid and the geometry column are
// not properties) typed by their declared SQL types (ColumnType), and its
// geometry type.
func (r *Reader) Declared() *schema.Declared { return r.declared }

// SRID is the EPSG code of the layer's SRS, which every geometry carries.
func (r *Reader) SRID() int { return r.srid }

// CRS is the layer's CRS and how it was identified: the SRS's EPSG code,
// its WKT (package crs), or Options.SRID (crs.BySetting).
func (r *Reader) CRS() crs.Result { return r.crs }

// Layer is the name of the table being read.
func (r *Reader) Layer() string { return r.layer }

// Close ends the read and closes the database.
func (r *Reader) Close() error {
	var err error
	if r.rows != nil {
		err = r.rows.Close()
	}
	return errors.Join(err, r.db.Close())
}

// Next returns the next feature, or io.EOF after the last. The feature and
// its geometry are the reader's until the next call; its Properties are
// the caller's.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

func (r *Reader) next() (*feature.Feature, error) {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return nil, r.fail(r.index, "reading the table", err)
		}
		return nil, io.EOF
	}
	index := r.index
	r.index++
	if err := r.rows.Scan(r.ptrs...); err != nil {
		return nil, r.fail(index, "reading the row", err)
	}
	return r.decodeRow(index)
}

func (r *Reader) fail(index int, msg string, err error) error {
	if _, ok := err.(*feature.LimitError); ok {
		return err
	}
	if err != nil && strings.Contains(err.Error(), "malformed") {
		msg += " (the file is damaged or cut short)"
	}
	return &feature.DecodeError{Format: "gpkg", Index: index, Msg: feature.BoundMessage(msg), Err: feature.Bound(err)}
}

// setSRID gives g and, in a collection, each member the SRID.
func setSRID(g geom.T, srid int) (geom.T, error) {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		for _, m := range gc.Geoms() {
			if _, err := setSRID(m, srid); err != nil {
				return nil, err
			}
		}
		feature.SetCollectionLayout(gc)
	}
	return geom.SetSRID(g, srid)
}

// Compile-time check.
var _ feature.FeatureReader = (*Reader)(nil)
