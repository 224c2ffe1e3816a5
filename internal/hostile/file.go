package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // GeoPackages of the corpus are written with it
)

// A file case (kind File) is a feed of kind file whose URL ends with the
// file's name (FileFeed.Name), so that the kind tells its format by the
// name as a county's download link tells it. Its good phase is the good
// layer as a GeoJSON document, which the kind reads whatever the name (it
// sniffs a JSON object first); its hostile phase is a file the corpus
// generates here: Shapefiles in zips, DBFs, CSVs, GeoPackages.

// FileFeed is a file case's feed settings: the name its URL ends with and
// the settings of kind file the case sets ("" leaves one out).
type FileFeed struct {
	// Name is the file's name, the URL's last segment (default data.zip).
	Name string
	// Format, Layer, X, Y, WKT, CRS and Encoding are the feed's settings.
	Format, Layer, X, Y, WKT, CRS, Encoding string
}

// fileName is the case's file name with the default resolved.
func (f FileFeed) fileName() string {
	if f.Name == "" {
		return "data.zip"
	}
	return f.Name
}

// Content types of file downloads.
const (
	ctZip  = "application/zip"
	ctCSV  = "text/csv"
	ctGPKG = "application/geopackage+sqlite3"
	ctOct  = "application/octet-stream"
)

// generated serves the bytes gen makes, made once (on the first request)
// and kept: the corpus's files are small, a few hundred kilobytes at most
// compressed.
func generated(contentType string, gen func() []byte) Responder {
	once := sync.OnceValue(gen)
	return func(w http.ResponseWriter, r *Request) {
		body := once()
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// wgs84PRJ is the .prj ArcGIS writes for EPSG:4326.
const wgs84PRJ = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

// Shape types of the .shp the corpus writes.
const (
	shpNull  = 0
	shpPoint = 1
)

// dbfField is a DBF field descriptor: name (at most 10 bytes), type (C,
// N, D, L) and length.
type dbfField struct {
	name   string
	typ    byte
	length int
}

// shapefile is a point Shapefile to write: its points (nil: a null
// shape), its DBF fields and rows (each row's values in field order, as
// the bytes to store), its language driver id and its .prj and .cpg
// ("" leaves the file out). The mutators, when set, damage the bytes
// written.
type shapefile struct {
	points   []*[2]float64
	fields   []dbfField
	rows     [][]string
	ldid     byte
	prj, cpg string

	shp, shx, dbf func([]byte) []byte
}

// pointsShapefile is a Shapefile of n points with fields id (N) and name
// (C), in WGS 84.
func pointsShapefile(n int) shapefile {
	s := shapefile{fields: []dbfField{{"id", 'N', 9}, {"name", 'C', 40}}, prj: wgs84PRJ, ldid: 0x57}
	for i := range n {
		s.points = append(s.points, &[2]float64{-78.9 + float64(i)*0.001, 35.6 + float64(i%10)*0.001})
		s.rows = append(s.rows, []string{strconv.Itoa(i + 1), "point " + strconv.Itoa(i+1)})
	}
	return s
}

// files writes the .shp, .shx and .dbf.
func (s shapefile) files() (shp, shx, dbf []byte) {
	shapeType := int32(shpPoint)
	var recs [][]byte
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range s.points {
		var c []byte
		if p == nil {
			c = binary.LittleEndian.AppendUint32(nil, shpNull)
		} else {
			c = binary.LittleEndian.AppendUint32(nil, shpPoint)
			c = binary.LittleEndian.AppendUint64(c, math.Float64bits(p[0]))
			c = binary.LittleEndian.AppendUint64(c, math.Float64bits(p[1]))
			minX, minY, maxX, maxY = min(minX, p[0]), min(minY, p[1]), max(maxX, p[0]), max(maxY, p[1])
		}
		recs = append(recs, c)
	}
	if math.IsInf(minX, 0) {
		minX, minY, maxX, maxY = 0, 0, 0, 0
	}
	header := func(bytes int) []byte {
		h := make([]byte, 100)
		binary.BigEndian.PutUint32(h[0:], 9994)
		binary.BigEndian.PutUint32(h[24:], uint32(bytes/2))
		binary.LittleEndian.PutUint32(h[28:], 1000)
		binary.LittleEndian.PutUint32(h[32:], uint32(shapeType))
		for i, v := range []float64{minX, minY, maxX, maxY} {
			binary.LittleEndian.PutUint64(h[36+8*i:], math.Float64bits(v))
		}
		return h
	}
	size := 100
	for _, c := range recs {
		size += 8 + len(c)
	}
	shp = header(size)
	shx = header(100 + 8*len(recs))
	off := 100
	for i, c := range recs {
		shx = binary.BigEndian.AppendUint32(shx, uint32(off/2))
		shx = binary.BigEndian.AppendUint32(shx, uint32(len(c)/2))
		shp = binary.BigEndian.AppendUint32(shp, uint32(i+1))
		shp = binary.BigEndian.AppendUint32(shp, uint32(len(c)/2))
		shp = append(shp, c...)
		off += 8 + len(c)
	}
	dbf = s.dbfBytes()
	if s.shp != nil {
		shp = s.shp(shp)
	}
	if s.shx != nil {
		shx = s.shx(shx)
	}
	if s.dbf != nil {
		dbf = s.dbf(dbf)
	}
	return shp, shx, dbf
}

// dbfBytes writes the DBF: dBASE III, the fields, the rows (padded or cut
// to their field's length), the end-of-file byte.
func (s shapefile) dbfBytes() []byte {
	recLen := 1
	for _, f := range s.fields {
		recLen += f.length
	}
	headerLen := 32 + 32*len(s.fields) + 1
	b := make([]byte, 32, headerLen+recLen*len(s.rows)+1)
	b[0] = 0x03
	b[1], b[2], b[3] = 126, 1, 1
	binary.LittleEndian.PutUint32(b[4:], uint32(len(s.rows)))
	binary.LittleEndian.PutUint16(b[8:], uint16(headerLen))
	binary.LittleEndian.PutUint16(b[10:], uint16(recLen))
	b[29] = s.ldid
	for _, f := range s.fields {
		d := make([]byte, 32)
		copy(d[:10], f.name)
		d[11] = f.typ
		d[16] = byte(f.length)
		b = append(b, d...)
	}
	b = append(b, 0x0D)
	for _, row := range s.rows {
		b = append(b, ' ')
		for i, f := range s.fields {
			v := ""
			if i < len(row) {
				v = row[i]
			}
			cell := []byte(v)
			if len(cell) > f.length {
				cell = cell[:f.length]
			}
			if f.typ == 'N' {
				b = append(b, bytes.Repeat([]byte{' '}, f.length-len(cell))...)
				b = append(b, cell...)
			} else {
				b = append(b, cell...)
				b = append(b, bytes.Repeat([]byte{' '}, f.length-len(cell))...)
			}
		}
	}
	return append(b, 0x1A)
}

// zipEntry is one entry of a zip the corpus writes: stored or deflated
// as archive/zip writes it, unless raw gives the bytes as they are to be
// stored (with method, and the uncompressed size the directory declares).
type zipEntry struct {
	name string
	body []byte
	// badCRC stores the entry with a CRC-32 that its bytes do not have.
	badCRC bool
	// encrypted flags the entry as encrypted (traditional PKWARE): its
	// bytes are noise no key was given for.
	encrypted bool
	// raw, when set, is stored as the entry's compressed bytes (Deflate,
	// or method when set), its directory declaring declared bytes
	// uncompressed.
	raw      []byte
	declared uint64
	method   uint16
}

// zipBytes writes a zip of entries.
func zipBytes(entries ...zipEntry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		var err error
		switch {
		case e.raw != nil:
			var w interface{ Write([]byte) (int, error) }
			method := e.method
			if method == 0 {
				method = zip.Deflate
			}
			w, err = zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: method, CRC32: 0x12345678,
				CompressedSize64: uint64(len(e.raw)), UncompressedSize64: e.declared})
			if err == nil {
				_, err = w.Write(e.raw)
			}
		case e.badCRC:
			var w interface{ Write([]byte) (int, error) }
			w, err = zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(e.body) ^ 0xffff,
				CompressedSize64: uint64(len(e.body)), UncompressedSize64: uint64(len(e.body))})
			if err == nil {
				_, err = w.Write(e.body)
			}
		case e.encrypted:
			noise := make([]byte, 12+len(e.body))
			for i := range noise {
				noise[i] = byte(i*151 + 17)
			}
			var w interface{ Write([]byte) (int, error) }
			w, err = zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, Flags: 0x1, CRC32: crc32.ChecksumIEEE(e.body),
				CompressedSize64: uint64(len(noise)), UncompressedSize64: uint64(len(e.body))})
			if err == nil {
				_, err = w.Write(noise)
			}
		default:
			var w interface{ Write([]byte) (int, error) }
			w, err = zw.Create(e.name)
			if err == nil {
				_, err = w.Write(e.body)
			}
		}
		if err != nil {
			panic("hostile: writing a zip: " + err.Error())
		}
	}
	if err := zw.Close(); err != nil {
		panic("hostile: writing a zip: " + err.Error())
	}
	return buf.Bytes()
}

// shapefileZip zips s as layer name: its .shp, .shx, .dbf, and its .prj
// and .cpg when it has them; bad names the part (".dbf") stored with a
// CRC-32 its bytes do not have.
func shapefileZip(name string, s shapefile, bad string) []byte {
	shp, shx, dbf := s.files()
	entries := []zipEntry{{name: name + ".shp", body: shp}, {name: name + ".shx", body: shx}, {name: name + ".dbf", body: dbf}}
	if s.prj != "" {
		entries = append(entries, zipEntry{name: name + ".prj", body: []byte(s.prj)})
	}
	if s.cpg != "" {
		entries = append(entries, zipEntry{name: name + ".cpg", body: []byte(s.cpg)})
	}
	for i := range entries {
		entries[i].badCRC = strings.HasSuffix(entries[i].name, bad) && bad != ""
	}
	return zipBytes(entries...)
}

// deflated is n bytes of c, deflated: a bomb's payload (n of zeros
// deflates a thousandfold).
func deflated(c byte, n int) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestSpeed)
	chunk := bytes.Repeat([]byte{c}, 64<<10)
	for left := n; left > 0; left -= len(chunk) {
		_, _ = fw.Write(chunk[:min(left, len(chunk))])
	}
	_ = fw.Close()
	return buf.Bytes()
}

// lieDirectoryOffset moves the zip's end-of-central-directory record's
// offset of the directory by delta, leaving the directory where it is: a
// reader that trusts both places every entry delta bytes before where it
// is (before the file's start, for the first).
func lieDirectoryOffset(z []byte, delta uint32) []byte {
	i := bytes.LastIndex(z, []byte("PK\x05\x06"))
	if i < 0 {
		panic("hostile: no end of central directory")
	}
	off := binary.LittleEndian.Uint32(z[i+16:])
	binary.LittleEndian.PutUint32(z[i+16:], off+delta)
	return z
}

// csvPoints is a CSV of n points: id, name, WKT.
func csvPoints(n int) []byte {
	var b bytes.Buffer
	b.WriteString("id,name,WKT\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,point %d,POINT (%.4f 35.6)\n", i+1, i+1, -78.9+float64(i)*0.001)
	}
	return b.Bytes()
}

// gpkgFile writes a GeoPackage with the modernc SQLite driver (the one
// ingestd reads it with): build runs the statements after the GeoPackage's
// own tables (gpkg_spatial_ref_sys with EPSG:4326, gpkg_contents,
// gpkg_geometry_columns) exist.
func gpkgFile(build ...string) []byte {
	return sqliteFile(append([]string{
		`PRAGMA application_id = 1196444487`,
		`CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY KEY, organization TEXT NOT NULL,
			organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT)`,
		`INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84', 4326, 'EPSG', 4326, 'GEOGCS["WGS 84"]', NULL)`,
		`CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE,
			description TEXT DEFAULT '', last_change DATETIME, min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER)`,
		`CREATE TABLE gpkg_geometry_columns (table_name TEXT NOT NULL, column_name TEXT NOT NULL, geometry_type_name TEXT NOT NULL,
			srs_id INTEGER NOT NULL, z TINYINT NOT NULL, m TINYINT NOT NULL, PRIMARY KEY (table_name, column_name))`,
	}, build...)...)
}

// sqliteFile writes an SQLite database made by the statements stmts.
func sqliteFile(stmts ...string) []byte {
	dir, err := os.MkdirTemp("", "hostile-gpkg-*")
	if err != nil {
		panic("hostile: " + err.Error())
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "g.gpkg")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		panic("hostile: " + err.Error())
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			panic("hostile: " + s + ": " + err.Error())
		}
	}
	if err := db.Close(); err != nil {
		panic("hostile: " + err.Error())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		panic("hostile: " + err.Error())
	}
	return b
}

// gpkgPoints are the statements of a features table name of n points
// (fid, geom, name), registered as a layer.
func gpkgPoints(name string, n int) []string {
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE %q (fid INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, geom POINT, name TEXT)`, name),
		fmt.Sprintf(`INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('%s', 'features', '%s', 4326)`, name, name),
		fmt.Sprintf(`INSERT INTO gpkg_geometry_columns VALUES ('%s', 'geom', 'POINT', 4326, 0, 0)`, name),
	}
	for i := range n {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO %q (geom, name) VALUES (X'%X', 'point %d')`, name, gpkgPoint(-78.9+float64(i)*0.001, 35.6), i+1))
	}
	return stmts
}

// gpkgView registers view (over table, as select says) as a layer.
func gpkgView(view, sel string) []string {
	return []string{
		fmt.Sprintf(`CREATE VIEW %q AS %s`, view, sel),
		fmt.Sprintf(`INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('%s', 'features', '%s', 4326)`, view, view),
		fmt.Sprintf(`INSERT INTO gpkg_geometry_columns VALUES ('%s', 'geom', 'POINT', 4326, 0, 0)`, view),
	}
}

// gpkgPoint is a GeoPackage geometry blob: the header (no envelope, SRS
// 4326, little endian), then the point as WKB.
func gpkgPoint(x, y float64) []byte {
	b := []byte{'G', 'P', 0, 0x01}
	b = binary.LittleEndian.AppendUint32(b, 4326)
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

// fgbFeatures returns the offsets of the features of the FlatGeobuf file
// b (written without a spatial index): each is a size-prefixed table
// after the magic bytes and the size-prefixed header.
func fgbFeatures(b []byte) []int {
	var offs []int
	i := 8 + 4 + int(binary.LittleEndian.Uint32(b[8:]))
	for i+4 <= len(b) {
		offs = append(offs, i)
		i += 4 + int(binary.LittleEndian.Uint32(b[i:]))
	}
	return offs
}

// fgbMangled serves the corpus file name (a FlatGeobuf) after mangle
// altered a copy.
func fgbMangled(name string, mangle func([]byte) []byte) Responder {
	return func(w http.ResponseWriter, r *Request) {
		body := mangle(bytes.Clone(r.File(name)))
		w.Header().Set("Content-Type", ctOct)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}
