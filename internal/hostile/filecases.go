package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The cases of kind File: downloaded files that lie in their containers
// (zips), their headers (.shp, .shx, .dbf, GeoPackage, FlatGeobuf), their
// text (CSV, GeoJSON) or their transfer (HTTP).

// fileCase is a case of kind File served by r from a URL ending in name.
func fileCase(name, class, fileName string, r Responder) Case {
	return Case{Name: name, Class: class, Kind: File, File: FileFeed{Name: fileName}, Respond: r}
}

// loads makes c a case that loads n features.
func loads(c Case, n int) Case {
	c.Load, c.Features = true, n
	return c
}

// noWrite says that c's poll must create none of paths.
func noWrite(c Case, paths ...string) Case {
	c.NoWrite = paths
	return c
}

// fails makes c a case that fails naming one of errs.
func fails(c Case, errs ...string) Case {
	c.Errors = errs
	return c
}

// heldNoGeometry is what a snapshot whose features all lack a geometry
// ends as: held, like a shrink, by the geometry guard.
const heldNoGeometry = "held: geometry:"

// zipped serves the zip of entries.
func zipped(entries ...zipEntry) Responder {
	return generated(ctZip, func() []byte { return zipBytes(entries...) })
}

// shpZip serves s zipped as layer "pts" (bad: the part stored with a
// CRC-32 its bytes do not have).
func shpZip(s shapefile, bad string) Responder {
	return generated(ctZip, func() []byte { return shapefileZip("pts", s, bad) })
}

// fileZips are the zip cases: bombs, slips, damage, encryption.
func fileZips() (cs []Case) {
	const class = "file: zips (bombs, slips, damage)"
	add := func(c ...Case) { cs = append(cs, c...) }
	csv3 := csvPoints(3)
	add(
		loads(fileCase("file_zip_shapefile", class, "pts.zip", shpZip(pointsShapefile(5), "")), 5),
		loads(fileCase("file_zip_csv", class, "pts.zip", zipped(zipEntry{name: "pts.csv", body: csv3})), 3),
		// Entries that declare more than limits.body_bytes all together.
		withLimits(fails(fileCase("file_zip_bomb_declared", class, "pts.zip", generated(ctZip, func() []byte {
			return zipBytes(zipEntry{name: "pts.csv", body: append(csv3, bytes.Repeat([]byte("#"), 6<<20)...)})
		})), "zip bomb"), "body_bytes", 4*mib),
		// An entry that declares 1000 bytes and inflates to 32 MiB.
		fails(fileCase("file_zip_bomb_lying_size", class, "pts.zip", generated(ctZip, func() []byte {
			return zipBytes(zipEntry{name: "pts.csv", raw: deflated('a', 32<<20), declared: 1000})
		})), "more than the 1000 bytes its directory declares"),
		// A zip slip: entries named to be written above the folder a
		// careless reader extracts into. ingestd writes no entry under
		// its name, so the data loads and nothing is written there.
		noWrite(loads(fileCase("file_zip_slip_csv", class, "pts.zip", zipped(zipEntry{name: "../../../../../tmp/ingestd-zip-slip.csv", body: csv3})), 3),
			"/tmp/ingestd-zip-slip.csv"),
		noWrite(loads(fileCase("file_zip_slip_shapefile", class, "pts.zip", generated(ctZip, func() []byte {
			return shapefileZip("../../../../tmp/ingestd-zip-slip/pts", pointsShapefile(4), "")
		})), 4), "/tmp/ingestd-zip-slip"),
		noWrite(loads(fileCase("file_zip_absolute_path", class, "pts.zip", zipped(zipEntry{name: "/tmp/ingestd-zip-abs.csv", body: csv3})), 3),
			"/tmp/ingestd-zip-abs.csv"),
		fails(fileCase("file_zip_encrypted", class, "pts.zip", zipped(zipEntry{name: "pts.csv", body: csv3, encrypted: true})), "encrypted"),
		fails(fileCase("file_zip_dbf_bad_crc", class, "pts.zip", shpZip(pointsShapefile(5), ".dbf")), "pts.dbf in the zip is damaged"),
		fails(fileCase("file_zip_shp_bad_crc", class, "pts.zip", shpZip(pointsShapefile(5), ".shp")), "pts.shp in the zip is damaged"),
		fails(fileCase("file_zip_shx_bad_crc", class, "pts.zip", shpZip(pointsShapefile(5), ".shx")), "pts.shx in the zip is damaged"),
		fails(fileCase("file_zip_csv_bad_crc", class, "pts.zip", zipped(zipEntry{name: "pts.csv", body: csv3, badCRC: true})), "pts.csv in the zip is damaged"),
		// The directory's own offset lies: every entry seems to start
		// before the file does.
		fails(fileCase("file_zip_negative_offset", class, "pts.zip", generated(ctZip, func() []byte {
			return lieDirectoryOffset(zipBytes(zipEntry{name: "pts.csv", body: csv3}), 4096)
		})), "pts.csv in the zip is damaged"),
		// bzip2 (method 12), which Go's archive/zip does not read.
		fails(fileCase("file_zip_method_bzip2", class, "pts.zip", zipped(zipEntry{name: "pts.csv", raw: []byte("BZh91AY&SY"), declared: 100, method: 12})),
			"pts.csv in the zip cannot be read: it is compressed with method 12"),
		// The data file's local header (the second entry's) overwritten.
		fails(fileCase("file_zip_local_header_broken", class, "pts.zip", generated(ctZip, func() []byte {
			z := zipBytes(zipEntry{name: "readme.txt", body: []byte("parcels")}, zipEntry{name: "pts.csv", body: csv3})
			copy(z[bytes.Index(z[4:], []byte("PK\x03\x04"))+4:], "XX")
			return z
		})), "pts.csv in the zip is damaged: its local header is broken"),
		loads(fileCase("file_zip_geojson_bom", class, "pts.zip", zipped(zipEntry{name: "pts.geojson",
			body: []byte("\xef\xbb\xbf" + `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[-78.9,35.6]}}]}`)})), 1),
		fails(fileCase("file_zip_cut_short", class, "pts.zip", generated(ctZip, func() []byte {
			z := shapefileZip("pts", pointsShapefile(5), "")
			return z[:len(z)/2]
		})), "the zip is damaged or cut short"),
		fails(fileCase("file_zip_empty", class, "pts.zip", zipped()), "it is empty"),
		fails(fileCase("file_zip_in_zip", class, "pts.zip", generated(ctZip, func() []byte {
			return zipBytes(zipEntry{name: "inner.zip", body: shapefileZip("pts", pointsShapefile(2), "")})
		})), "holds no Shapefile"),
		fails(fileCase("file_zip_two_layers", class, "pts.zip", generated(ctZip, func() []byte {
			shp, shx, dbf := pointsShapefile(2).files()
			return zipBytes(zipEntry{name: "a.shp", body: shp}, zipEntry{name: "a.shx", body: shx}, zipEntry{name: "a.dbf", body: dbf},
				zipEntry{name: "a.prj", body: []byte(wgs84PRJ)}, zipEntry{name: "b.shp", body: shp}, zipEntry{name: "b.shx", body: shx},
				zipEntry{name: "b.dbf", body: dbf}, zipEntry{name: "b.prj", body: []byte(wgs84PRJ)})
		})), "choose one with layer:"),
		fails(fileCase("file_zip_no_dbf", class, "pts.zip", generated(ctZip, func() []byte {
			shp, shx, _ := pointsShapefile(2).files()
			return zipBytes(zipEntry{name: "pts.shp", body: shp}, zipEntry{name: "pts.shx", body: shx}, zipEntry{name: "pts.prj", body: []byte(wgs84PRJ)})
		})), "has no .dbf beside it"),
	)
	return cs
}

// withShapefile is pointsShapefile(5) changed by set.
func withShapefile(set func(*shapefile)) shapefile {
	s := pointsShapefile(5)
	set(&s)
	return s
}

// putU32 sets b's little-endian uint32 at i (big-endian when be).
func putU32(b []byte, i int, v uint32, be bool) []byte {
	if be {
		binary.BigEndian.PutUint32(b[i:], v)
	} else {
		binary.LittleEndian.PutUint32(b[i:], v)
	}
	return b
}

// fileShapefiles are the Shapefile cases: lying .shp, .shx and .dbf
// headers, duplicate field names, code pages, missing geometries.
func fileShapefiles() (cs []Case) {
	const class = "file: Shapefile headers and fields"
	add := func(c ...Case) { cs = append(cs, c...) }
	shp := func(name string, set func(*shapefile)) Case {
		return fileCase(name, class, "pts.zip", shpZip(withShapefile(set), ""))
	}
	add(
		fails(shp("file_shx_length_lie", func(s *shapefile) {
			s.shx = func(b []byte) []byte { return putU32(b, 24, 5000, true) }
		}), ".shx: its header says"),
		// A .shx of four records (a whole one) for a .shp of five.
		fails(shp("file_shx_fewer_records", func(s *shapefile) {
			s.shx = func(b []byte) []byte { b = b[:len(b)-8]; return putU32(b, 24, uint32(len(b)/2), true) }
		}), "more records than the 4 of its .shx"),
		fails(shp("file_shp_length_lie", func(s *shapefile) {
			s.shp = func(b []byte) []byte { return putU32(b, 24, 99999, true) }
		}), ".shp: its header says"),
		fails(shp("file_shp_record_huge", func(s *shapefile) {
			s.shp = func(b []byte) []byte { return putU32(b, 100+4, 0x7ffffff0, true) }
		}), "limits.feature_bytes", ".shp"),
		fails(shp("file_dbf_records_more", func(s *shapefile) {
			s.dbf = func(b []byte) []byte { return putU32(b, 4, 9, false) }
		}), "its .dbf 9"),
		fails(shp("file_dbf_records_fewer", func(s *shapefile) {
			s.dbf = func(b []byte) []byte { return putU32(b, 4, 3, false) }
		}), "more records than the 3 of its .dbf"),
		fails(shp("file_dbf_header_length_lie", func(s *shapefile) {
			s.dbf = func(b []byte) []byte { binary.LittleEndian.PutUint16(b[8:], 20); return b }
		}), "not a dBASE file"),
		fails(shp("file_dbf_record_length_lie", func(s *shapefile) {
			s.dbf = func(b []byte) []byte { binary.LittleEndian.PutUint16(b[10:], 7); return b }
		}), "the header is damaged"),
		fails(shp("file_dbf_deletion_flag", func(s *shapefile) {
			s.dbf = func(b []byte) []byte { b[32+2*32+1+50] = 'Z'; return b }
		}), "out of step"),
		// Two fields called NAME: both kept, the second as NAME2 (as
		// GDAL names it when it writes the layer anywhere).
		func() Case {
			c := loads(shp("file_dbf_duplicate_names", func(s *shapefile) {
				s.fields = []dbfField{{"id", 'N', 9}, {"NAME", 'C', 20}, {"NAME", 'C', 20}}
				for i := range s.rows {
					s.rows[i] = []string{strconv.Itoa(i + 1), "first " + strconv.Itoa(i+1), "second " + strconv.Itoa(i+1)}
				}
			}), 5)
			c.Contains = `{"NAME": "first 1", "NAME2": "second 1"}`
			return c
		}(),
		// Windows-1252 by the DBF's language driver (0x57): é is 0xE9.
		func() Case {
			c := loads(shp("file_dbf_codepage_ldid", func(s *shapefile) { s.rows[0][1] = "Caf\xe9" }), 5)
			c.Contains = `{"name": "Café"}`
			return c
		}(),
		// A .cpg that says UTF-8 over Latin-1 bytes: repaired, not dropped.
		func() Case {
			c := loads(shp("file_dbf_cpg_lies", func(s *shapefile) { s.cpg = "UTF-8"; s.rows[0][1] = "Caf\xe9" }), 5)
			c.Repaired = true
			return c
		}(),
		fails(shp("file_dbf_cpg_unknown", func(s *shapefile) { s.cpg = "CP99999" }), ".cpg"),
		fails(shp("file_shp_no_prj", func(s *shapefile) { s.prj = "" }), "no .prj beside the .shp"),
		fails(shp("file_shp_all_null", func(s *shapefile) {
			for i := range s.points {
				s.points[i] = nil
			}
		}), heldNoGeometry),
	)
	return cs
}

// csvFile serves body as a CSV (text/csv, with its Content-Length).
func csvFile(body string) Responder {
	return generated(ctCSV, func() []byte { return []byte(body) })
}

// fileCSVs are the CSV cases: duplicate names, BOMs, long lines, many
// columns, bad WKT, records over several lines, code pages, missing
// geometries.
func fileCSVs() (cs []Case) {
	const class = "file: CSV"
	add := func(c ...Case) { cs = append(cs, c...) }
	csv := func(name, body string) Case { return fileCase(name, class, "pts.csv", csvFile(body)) }
	multiline := func() string {
		var b strings.Builder
		b.WriteString("id,name,WKT\n")
		for i := 1; i <= 6; i++ {
			fmt.Fprintf(&b, "%d,point %d,POINT (-78.9 35.6)\n", i, i)
		}
		// Line 8 opens a quoted field that runs on, and a stray quote on
		// line 31 breaks it.
		b.WriteString("7,\"a note\n")
		for range 22 {
			b.WriteString("that goes on\n")
		}
		b.WriteString("and \"ends\" badly\",POINT (-78.9 35.6)\n")
		return b.String()
	}
	add(
		loads(csv("file_csv_points", string(csvPoints(3))), 3),
		func() Case {
			c := loads(csv("file_csv_duplicate_names", "id,NAME,NAME,WKT\n1,first 1,second 1,POINT (-78.9 35.6)\n2,first 2,second 2,POINT (-78.8 35.6)\n"), 2)
			c.Contains = `{"NAME": "first 1", "NAME2": "second 1"}`
			return c
		}(),
		func() Case {
			c := loads(csv("file_csv_duplicate_names_taken", "id,NAME,NAME2,NAME,WKT\n1,a,b,c,POINT (-78.9 35.6)\n2,a,b,c,POINT (-78.8 35.6)\n"), 2)
			c.Contains = `{"NAME": "a", "NAME2": "b", "NAME3": "c"}`
			return c
		}(),
		loads(csv("file_csv_bom_content_length", "\xef\xbb\xbf"+string(csvPoints(3))), 3),
		// One line of 100 MB (the test's server stops at MaxGenerated).
		fails(fileCase("file_csv_line_100mb", class, "pts.csv", stream(ctCSV, false,
			text("id,name,WKT\n1,"), repeatBytes('a', 100*mib), text(",POINT (-78.9 35.6)\n"))), "limits.feature_bytes", "limits.value_bytes"),
		fails(fileCase("file_csv_100k_columns", class, "pts.csv", stream(ctCSV, false,
			text("WKT"), generator{n: 100_000, item: func(b []byte, i int64) []byte {
				return strconv.AppendInt(append(b, ",c"...), i, 10)
			}}, text("\nPOINT (-78.9 35.6)\n"))), "limits.properties"),
		fails(csv("file_csv_wkt_invalid", "id,WKT\n1,POINT (-78.9 35.6)\n2,POINT (-78.9\n"), "line 3, column WKT"),
		fails(csv("file_csv_wkt_ring_open", "id,WKT\n1,POINT (-78.9 35.6)\n2,\"POLYGON ((0 0, 1 0, 1 1))\"\n"), "line 3, column WKT"),
		fails(csv("file_csv_record_over_lines", multiline()), "record starting on line 8"),
		fails(csv("file_csv_ragged", "id,name,WKT\n1,a,POINT (-78.9 35.6)\n2,POINT (-78.8 35.6)\n"), "line 3: 2 fields"),
		func() Case {
			c := loads(csv("file_csv_latin1", "id,name,WKT\n1,Caf\xe9,POINT (-78.9 35.6)\n2,b,POINT (-78.8 35.6)\n"), 2)
			c.Repaired = true
			return c
		}(),
		func() Case {
			c := loads(csv("file_csv_nul_bytes", "id,name,WKT\n1,a\x00b,POINT (-78.9 35.6)\n2,b,POINT (-78.8 35.6)\n"), 2)
			c.Repaired = true
			return c
		}(),
		fails(csv("file_csv_no_geometry_column", "id,name\n1,a\n2,b\n"), "no geometry column"),
		fails(csv("file_csv_header_only", "id,name,WKT\n"), "held: empty"),
		fails(csv("file_csv_all_geometry_missing", "id,name,WKT\n1,a,\n2,b,\n3,c,\n"), heldNoGeometry),
		fails(csv("file_csv_all_geometry_empty", "id,name,WKT\n1,a,POINT EMPTY\n2,b,POLYGON EMPTY\n3,c,POINT EMPTY\n"), heldNoGeometry),
		fails(csv("file_csv_bad_xy", "id,x,y\n1,-78.9,35.6\n2,east,35.6\n"), "is not a point"),
	)
	return cs
}

// fileGeoJSONs are the GeoJSON files: BOMs, missing geometries, wrong
// coordinates.
func fileGeoJSONs() (cs []Case) {
	const class = "file: GeoJSON"
	add := func(c ...Case) { cs = append(cs, c...) }
	gj := func(name, body string) Case {
		return fileCase(name, class, "pts.geojson", generated(ctGeo, func() []byte { return []byte(body) }))
	}
	feat := func(id int, geometry string) string {
		return fmt.Sprintf(`{"type":"Feature","id":%d,"properties":{"n":%d},"geometry":%s}`, id, id, geometry)
	}
	fc := func(geoms ...string) string {
		parts := make([]string, len(geoms))
		for i, g := range geoms {
			parts[i] = feat(i+1, g)
		}
		return `{"type":"FeatureCollection","features":[` + strings.Join(parts, ",") + `]}`
	}
	pt := `{"type":"Point","coordinates":[-78.9,35.6]}`
	add(
		loads(gj("file_geojson_bom_content_length", "\xef\xbb\xbf"+fc(pt, pt, pt)), 3),
		fails(gj("file_geojson_all_geometry_null", fc("null", "null", "null")), heldNoGeometry),
		fails(gj("file_geojson_all_geometry_empty", fc(`{"type":"Point","coordinates":[]}`, `{"type":"MultiPolygon","coordinates":[]}`,
			`{"type":"GeometryCollection","geometries":[]}`)), heldNoGeometry),
		fails(gj("file_geojson_coordinate_string", fc(pt, `{"type":"Point","coordinates":["-78.9",35.6]}`)), "feature 1"),
		fails(gj("file_geojson_coordinates_1d", fc(pt, `{"type":"Point","coordinates":[-78.9]}`)), "feature 1"),
		fails(gj("file_geojson_type_number", fc(pt, `{"type":5,"coordinates":[-78.9,35.6]}`)), "a JSON number where GeoJSON wants a string"),
		// A legacy crs member nested past encoding/json's depth.
		fails(gj("file_geojson_crs_deep", fc(pt, `{"type":"Point","coordinates":[-78.9,35.6],"crs":`+
			strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`)), "nested too deeply"),
		fails(fileCase("file_geojson_deep_coordinates", class, "pts.geojson", stream(ctGeo, false,
			text(`{"type":"FeatureCollection","features":[{"type":"Feature","id":1,"properties":{},"geometry":{"type":"Polygon","coordinates":`),
			generator{n: 100_000, item: func(b []byte, _ int64) []byte { return append(b, '[') }},
			generator{n: 100_000, item: func(b []byte, _ int64) []byte { return append(b, ']') }},
			text(`}}]}`))), "nested"),
	)
	return cs
}

// fileGeoPackages are the GeoPackage cases.
func fileGeoPackages() (cs []Case) {
	const class = "file: GeoPackages"
	add := func(c ...Case) { cs = append(cs, c...) }
	gp := func(name string, gen func() []byte) Case {
		return fileCase(name, class, "pts.gpkg", generated(ctGPKG, gen))
	}
	add(
		loads(gp("file_gpkg_points", func() []byte { return gpkgFile(gpkgPoints("pts", 3)...) }), 3),
		fails(gp("file_gpkg_not_a_database", func() []byte {
			return append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte("not a database "), 300)...)
		}), "not a GeoPackage"),
		fails(gp("file_gpkg_plain_sqlite", func() []byte { return sqliteFile(`CREATE TABLE parcels (id INTEGER PRIMARY KEY, geom BLOB)`) }),
			"not a GeoPackage"),
		fails(gp("file_gpkg_no_layers", func() []byte { return gpkgFile() }), "no features table"),
		fails(gp("file_gpkg_cut_short", func() []byte {
			b := gpkgFile(gpkgPoints("pts", 300)...)
			return b[:len(b)/2]
		}), "cut short"),
		fails(gp("file_gpkg_two_layers", func() []byte {
			return gpkgFile(append(gpkgPoints("a", 2), gpkgPoints("b", 2)...)...)
		}), "say which one with layer:"),
		// Views as layers, as GDAL reads them: by their fid column, or
		// numbered in order without one.
		withLayer(loads(gp("file_gpkg_view_fid", func() []byte {
			return gpkgFile(append(gpkgPoints("base", 3), gpkgView("pts", `SELECT fid, geom, name FROM base`)...)...)
		}), 3), "pts"),
		withLayer(loads(gp("file_gpkg_view_no_fid", func() []byte {
			return gpkgFile(append(gpkgPoints("base", 3), gpkgView("pts", `SELECT geom, name FROM base`)...)...)
		}), 3), "pts"),
		withLimits(fails(gp("file_gpkg_huge_blob", func() []byte {
			return gpkgFile(append(gpkgPoints("pts", 2), `ALTER TABLE pts ADD COLUMN blob BLOB`,
				`UPDATE pts SET blob = zeroblob(614400) WHERE fid = 2`)...)
		}), "limits.value_bytes"), "value_bytes", 256<<10),
		fails(gp("file_gpkg_blob_garbage", func() []byte {
			return gpkgFile(append(gpkgPoints("pts", 3), `UPDATE pts SET geom = X'0102030405' WHERE fid = 2`)...)
		}), "fid 2"),
		fails(gp("file_gpkg_all_geometry_null", func() []byte {
			return gpkgFile(append(gpkgPoints("pts", 3), `UPDATE pts SET geom = NULL`)...)
		}), heldNoGeometry),
	)
	return cs
}

// withLayer sets c's layer: setting.
func withLayer(c Case, layer string) Case {
	c.File.Layer = layer
	return c
}

// fileFlatGeobufs are the FlatGeobuf cases, over a file GDAL wrote
// (testdata/hostile/points.fgb: three points, no spatial index).
func fileFlatGeobufs() (cs []Case) {
	const class = "file: FlatGeobuf"
	add := func(c ...Case) { cs = append(cs, c...) }
	fgb := func(name string, mangle func([]byte) []byte) Case {
		return fileCase(name, class, "pts.fgb", fgbMangled("points.fgb", mangle))
	}
	add(
		loads(fgb("file_fgb_points", func(b []byte) []byte { return b }), 3),
		// The last feature left out: only the header's count tells.
		fails(fgb("file_fgb_count_lie", func(b []byte) []byte { offs := fgbFeatures(b); return b[:offs[len(offs)-1]] }),
			"its header counts 3 features, it holds 2"),
		fails(fgb("file_fgb_cut_short", func(b []byte) []byte { return b[:len(b)-10] }), "cut short"),
		// A feature whose table's offsets point anywhere.
		fails(fgb("file_fgb_feature_garbage", func(b []byte) []byte {
			offs := fgbFeatures(b)
			for i := offs[1] + 4; i < offs[2]; i++ {
				b[i] = 0xff
			}
			return b
		}), "feature 1: damaged"),
		fails(fgb("file_fgb_header_size_lie", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0x7fffff00); return b }),
			"header", "limits.feature_bytes"),
		fails(fgb("file_fgb_not", func(b []byte) []byte { return append([]byte("fgb\x03fgb\x00"), bytes.Repeat([]byte{0xff}, 64)...) }),
			"flatgeobuf"),
	)
	return cs
}

// fileTransfers are the file cases of HTTP: redirects, slow-loris, sizes,
// pages that are no file.
func fileTransfers() (cs []Case) {
	const class = "file: HTTP (redirects, slow-loris, sizes)"
	add := func(c ...Case) { cs = append(cs, c...) }
	slowCase := func(name string, r Responder) Case {
		c := fails(fileCase(name, class, "pts.zip", r), "timed out", "deadline", "timeout")
		c.RequestTimeout, c.Within = 2*time.Second, 15*time.Second
		return c
	}
	add(
		loads(fileCase("file_redirect_same_origin", class, "pts.zip", redirect(302, "{self}/data.geojson")), 2),
		fails(fileCase("file_redirect_cross_origin", class, "pts.zip", redirect(302, "{peer}/data.zip")), "redirect"),
		fails(fileCase("file_redirect_loop", class, "pts.zip", redirect(302, "{self}/hostile/file_redirect_loop/pts.zip")), "redirect"),
		slowCase("file_slow_body", slow(ctZip, "base.geojson", 100*time.Millisecond)),
		slowCase("file_slow_headers", hang()),
		withLimits(fails(fileCase("file_body_1gb", class, "pts.zip", stream(ctOct, false, text("PK\x03\x04"), repeatBytes(0, gib))),
			"limits.body_bytes"), "body_bytes", 16*mib),
		fails(fileCase("file_content_length_lie", class, "pts.csv", func(w http.ResponseWriter, r *Request) {
			writeCut(w, ctCSV, csvPoints(50), -200, cutFIN)
		}), "shorter than its Content-Length", "EOF"),
		fails(fileCase("file_html_200", class, "pts.zip", file(ctHTML, "html_200.html")), "HTML"),
		fails(fileCase("file_unknown_format", class, "pts.bin", generated(ctOct, func() []byte {
			return bytes.Repeat([]byte{0, 1, 2, 3, 0xfe}, 100)
		})), "cannot tell the format"),
	)
	return cs
}
