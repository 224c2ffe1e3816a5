package filegdb

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
)

// systemLimits bound the rows of the system tables (the catalog,
// GDB_Items), whose layer definitions are XML documents no feed's limits
// speak of.
var systemLimits = feature.Limits{FeatureBytes: 64 << 20, ValueBytes: 64 << 20}

// catalogTable is the table every File Geodatabase starts from: the
// system catalog naming each table by its number.
const catalogTable = "a00000001"

// Options say which layer to read and how far a feature may go.
type Options struct {
	// Layer is the layer to read; "" reads the geodatabase's only one (one
	// with several is an error listing them).
	Layer string
	// IDProperty names the field whose value is the feature id; "" means
	// the OBJECTID.
	IDProperty string
	// SRID, when positive, is the SRID of the geometries whatever the
	// geodatabase declares (the feed's crs:); 0 reads the layer's own.
	SRID int
	// Limits bound each feature (FeatureBytes: a row; ValueBytes,
	// Properties, IDBytes) and each file of the geodatabase spooled from
	// a compressed zip (BodyBytes); zero fields are the defaults.
	Limits feature.Limits
	// TempDir is where a table of a compressed zip is copied to be read
	// at offsets ("": the system's temporary directory).
	TempDir string
	// Logger receives the warnings (a raster field skipped); nil discards
	// them.
	Logger *slog.Logger
}

// LayerInfo describes one layer (a feature class or a table) of the
// geodatabase, as its catalog and GDB_Items say.
type LayerInfo struct {
	Name string
	// Table is the layer's table file without its extension, e.g.
	// "a00000009".
	Table string
	// SRID is the EPSG code of the layer's CRS (its LatestWKID, else its
	// WKID, else its WKT identified by package crs), 0 when it has
	// none or ingestd cannot name it (SRIDError says why).
	SRID      int
	SRIDError error
	// CRS is the layer's CRS and how it was identified (crs.ByAuthority
	// for a WKID), what a poll records.
	CRS crs.Result
	// WKT is the CRS as the layer declares it ("" for a table).
	WKT string
}

// GDB is an opened File Geodatabase folder: its catalog and the
// definitions of its layers. It holds no table open between reads.
type GDB struct {
	fsys   fs.FS
	dir    string
	layers []LayerInfo
	spool  spool
}

// Open finds the File Geodatabase in fsys (at its root, or the one
// `*.gdb` folder inside, as counties zip it) and reads its catalog and
// the layers' definitions. fsys is any fs.FS: an *zip.Reader and
// os.DirFS share this one path. Of opts, Open reads Limits.BodyBytes
// (the largest table it copies out of a compressed zip) and TempDir.
func Open(fsys fs.FS, opts Options) (*GDB, error) {
	g := &GDB{fsys: fsys, spool: spool{dir: opts.TempDir, limit: opts.Limits.WithDefaults().BodyBytes}}
	var err error
	if g.dir, err = Find(fsys); err != nil {
		return nil, err
	}
	if err := g.readCatalog(); err != nil {
		return nil, err
	}
	return g, nil
}

// Find returns the folder of fsys holding a File Geodatabase: "." when
// its root does, else the only folder named *.gdb (at any depth) that
// holds a00000001.gdbtable.
func Find(fsys fs.FS) (string, error) {
	if _, err := fs.Stat(fsys, catalogTable+".gdbtable"); err == nil {
		return ".", nil
	}
	var found []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == "." {
			return nil
		}
		if strings.HasSuffix(strings.ToLower(p), ".gdb") {
			if _, err := fs.Stat(fsys, path.Join(p, catalogTable+".gdbtable")); err == nil {
				found = append(found, p)
			}
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("filegdb: looking for the .gdb folder: %w", err)
	}
	switch len(found) {
	case 0:
		return "", errors.New("filegdb: no File Geodatabase: neither a00000001.gdbtable nor a *.gdb folder holding one")
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("filegdb: %d File Geodatabases (%s): the file must hold one", len(found), strings.Join(found, ", "))
}

// Layers lists the geodatabase's layers in the catalog's order.
func (g *GDB) Layers() []LayerInfo { return slices.Clone(g.layers) }

// catalogRow is one table of the system catalog.
type catalogRow struct {
	id   int64
	name string
}

func (g *GDB) readCatalog() error {
	t, err := openTable(g.fsys, g.dir, catalogTable, "the system catalog ("+catalogTable+".gdbtable)", g.spool)
	if err != nil {
		return err
	}
	defer t.close()
	nameIdx := t.fieldIndex("Name")
	if nameIdx < 0 || t.fields[nameIdx].Type != String {
		return t.errorf("no Name field: not a File Geodatabase catalog")
	}
	var rows []catalogRow
	err = t.scan(systemLimits, func(oid int64, vals []value) error {
		if !vals[nameIdx].null {
			rows = append(rows, catalogRow{id: oid, name: string(vals[nameIdx].b)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	defs := map[string]itemDef{}
	for _, r := range rows {
		if r.name == "GDB_Items" {
			if defs, err = g.readItems(tableFile(r.id)); err != nil {
				return err
			}
		}
	}
	for _, r := range rows {
		if strings.HasPrefix(r.name, "GDB_") {
			continue
		}
		base := tableFile(r.id)
		if _, err := fs.Stat(g.fsys, path.Join(g.dir, base+".gdbtable")); err != nil {
			continue // a catalog entry of a table not in the folder
		}
		info := LayerInfo{Name: r.name, Table: base}
		def, ok := defs[strings.ToLower(r.name)]
		if ok {
			info.WKT = def.SRS.WKT
			info.CRS, info.SRIDError = sridOf(def.SRS.LatestWKID, def.SRS.WKID, def.SRS.WKT)
			info.SRID = info.CRS.SRID
		}
		g.layers = append(g.layers, info)
	}
	return nil
}

func tableFile(id int64) string { return fmt.Sprintf("a%08x", id) }

// itemDef is what ingestd reads of a layer's definition in GDB_Items.
type itemDef struct {
	XMLName     xml.Name
	CatalogPath string `xml:"CatalogPath"`
	Name        string `xml:"Name"`
	SRS         struct {
		WKT        string `xml:"WKT"`
		WKID       int    `xml:"WKID"`
		LatestWKID int    `xml:"LatestWKID"`
	} `xml:"SpatialReference"`
}

// readItems reads the definitions of the feature classes and tables in
// GDB_Items, by lower-cased name.
func (g *GDB) readItems(base string) (map[string]itemDef, error) {
	t, err := openTable(g.fsys, g.dir, base, "GDB_Items ("+base+".gdbtable)", g.spool)
	if err != nil {
		return nil, err
	}
	defer t.close()
	defIdx := t.fieldIndex("Definition")
	if defIdx < 0 {
		return nil, t.errorf("no Definition field")
	}
	defs := map[string]itemDef{}
	err = t.scan(systemLimits, func(oid int64, vals []value) error {
		v := vals[defIdx]
		if v.null || len(v.b) == 0 {
			return nil
		}
		var d itemDef
		if err := xml.Unmarshal(v.b, &d); err != nil {
			return &Error{Table: t.label, Row: oid, Msg: "its Definition is not XML", Err: feature.Bound(err)}
		}
		switch d.XMLName.Local {
		case "DEFeatureClassInfo", "DETableInfo":
		default:
			return nil
		}
		name := d.Name
		if i := strings.LastIndexByte(d.CatalogPath, '\\'); i >= 0 && d.CatalogPath[i+1:] != "" {
			name = d.CatalogPath[i+1:]
		}
		defs[strings.ToLower(name)] = d
		return nil
	})
	return defs, err
}

// sridOf names a layer's CRS by its code: its LatestWKID or WKID when
// it is an EPSG code (Esri's own codes, 100000 and above, are not: 102100
// is the WKID of what EPSG calls 3857), else its WKT identified by
// package crs as a Shapefile's .prj is (which finds Esri's codes that
// PostGIS knows too).
func sridOf(latest, wkid int, wkt string) (crs.Result, error) {
	for _, id := range []int{latest, wkid} {
		if id > 0 && id < 100000 {
			return crs.Result{SRID: id, Code: fmt.Sprintf("EPSG:%d", id), By: crs.ByAuthority}, nil
		}
	}
	if strings.TrimSpace(wkt) == "" {
		return crs.Result{}, errors.New("the layer declares no CRS; set crs: (e.g. EPSG:4326)")
	}
	res, err := crs.Identify(wkt)
	if err != nil && wkid > 0 {
		return crs.Result{}, fmt.Errorf("Esri WKID %d: %w", wkid, err)
	}
	return res, err
}

// fieldIndex is the index of the field named name (case-insensitively),
// -1 when there is none.
func (t *table) fieldIndex(name string) int {
	for i, f := range t.fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// scan reads every row of a (small, system) table in OBJECTID order.
func (t *table) scan(limits feature.Limits, fn func(oid int64, vals []value) error) error {
	var buf []byte
	vals := make([]value, len(t.fields))
	var n uint32
	for i := t.skipAbsent(0); i < t.slots; i = t.skipAbsent(i + 1) {
		blob, ok, err := t.readRow(i, buf, limits.FeatureBytes)
		buf = blob
		if err != nil {
			return t.rowError(i+1, err)
		}
		if !ok {
			continue
		}
		n++
		if err := t.splitRow(blob, vals, limits.ValueBytes); err != nil {
			return t.rowError(i+1, err)
		}
		if err := fn(i+1, vals); err != nil {
			return err
		}
	}
	if n != t.validRows {
		return t.errorf("its header counts %d rows, its index leads to %d: the file is damaged", t.validRows, n)
	}
	return nil
}

// rowError names the table and the row in err, a LimitError staying one.
func (t *table) rowError(oid int64, err error) error {
	var le *feature.LimitError
	if errors.As(err, &le) {
		if !strings.Contains(le.Where, t.label) {
			le.Where = t.label + ", row " + strconv.FormatInt(oid, 10) + ": " + le.Where
		}
		return le
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	return &Error{Table: t.label, Row: oid, Err: err}
}
