package hostile

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
)

// gdbFixture is a zipped File Geodatabase as counties zip it (its
// Parcels.gdb/ folder inside), written by GDAL 3.6's OpenFileGDB driver:
// five parcels (polygons, EPSG:4326) with a NAME of 37 or 38 bytes, in
// table a00000009:
//
//	ogr2ogr -f OpenFileGDB -a_srs EPSG:4326 Parcels.gdb parcels.csv -nln parcels -nlt POLYGON -oo KEEP_GEOM_COLUMNS=NO
//
// Each row of its table is a 4-byte size, one byte of null flags, the
// shape's length (one byte: under 128) and the shape, then the NAME; the
// cases lie in it in place.
const gdbFixture = "file_gdb_parcels.gdb.zip"

// gdbLayerTable is the fixture's layer table, its files in the zip.
const gdbLayerTable = "Parcels.gdb/a00000009"

// gdbEntries are the fixture's entries, in its order.
func gdbEntries(fixture []byte) []zipEntry {
	zr, err := zip.NewReader(bytes.NewReader(fixture), int64(len(fixture)))
	if err != nil {
		panic("hostile: " + gdbFixture + ": " + err.Error())
	}
	var out []zipEntry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			panic("hostile: " + gdbFixture + ": " + err.Error())
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			panic("hostile: " + gdbFixture + ": " + err.Error())
		}
		out = append(out, zipEntry{name: f.Name, body: b})
	}
	return out
}

// gdbMangled serves the fixture after mangle altered its entries (by
// name); mangle may add entries or delete them.
func gdbMangled(mangle func(files map[string][]byte) []zipEntry) Responder {
	return func(w http.ResponseWriter, r *Request) {
		entries := gdbEntries(r.File(gdbFixture))
		files := map[string][]byte{}
		for _, e := range entries {
			files[e.name] = e.body
		}
		extra := mangle(files)
		var out []zipEntry
		for _, e := range entries {
			if b, ok := files[e.name]; ok {
				out = append(out, zipEntry{name: e.name, body: b})
			}
		}
		body := zipBytes(append(out, extra...)...)
		w.Header().Set("Content-Type", ctZip)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// gdbRow is the offset in the layer's .gdbtable of row oid's shape (after
// its length byte) and the shape's length, read through the .gdbtablx.
func gdbRow(files map[string][]byte, oid int) (int, int) {
	tablx, table := files[gdbLayerTable+".gdbtablx"], files[gdbLayerTable+".gdbtable"]
	size := int(binary.LittleEndian.Uint32(tablx[12:]))
	var off [8]byte
	copy(off[:], tablx[16+(oid-1)*size:16+oid*size])
	row := int(binary.LittleEndian.Uint64(off[:]))
	shape := row + 4 + 1
	n := int(table[shape])
	if n >= 128 || table[shape+1] != 5 { // a one-byte length, a polygon
		panic("hostile: " + gdbFixture + " is not the fixture the cases lie in")
	}
	return shape + 1, n
}

// fileGDBs are the File Geodatabase cases: a geodatabase whose counts,
// offsets, varints and shapes lie, a value past the feed's limit, a zip
// bomb among its files, a table without its index. Each fails naming the
// table and the row, the previous snapshot kept.
func fileGDBs() (cs []Case) {
	const class = "file: File Geodatabases"
	add := func(c ...Case) { cs = append(cs, c...) }
	gdb := func(name string, mangle func(map[string][]byte) []zipEntry) Case {
		return fileCase(name, class, "parcels.gdb.zip", gdbMangled(mangle))
	}
	same := func(map[string][]byte) []zipEntry { return nil }
	add(
		loads(gdb("file_gdb_parcels", same), 5),
		// Auto finds the .gdb folder in a zip of any name.
		loads(fileCase("file_gdb_in_data_zip", class, "data.zip", gdbMangled(same)), 5),
		// The header counts nine rows; the index leads to five.
		fails(gdb("file_gdb_row_count_lies", func(f map[string][]byte) []zipEntry {
			binary.LittleEndian.PutUint32(f[gdbLayerTable+".gdbtable"][4:], 9)
			return nil
		}), `layer "parcels" (a00000009.gdbtable): its header counts 9 rows, its index leads to 5`),
		// Row 3's offset points 1 TB past the table's end.
		fails(gdb("file_gdb_offset_past_file", func(f map[string][]byte) []zipEntry {
			tablx := f[gdbLayerTable+".gdbtablx"]
			size := int(binary.LittleEndian.Uint32(tablx[12:]))
			for i := range size {
				tablx[16+2*size+i] = 0
			}
			tablx[16+2*size+size-1] = 0x10
			return nil
		}), `a00000009.gdbtable): row 3:`),
		// Row 2's shape is 0xFF bytes: a varint that never ends.
		fails(gdb("file_gdb_endless_varint", func(f map[string][]byte) []zipEntry {
			at, n := gdbRow(f, 2)
			copy(f[gdbLayerTable+".gdbtable"][at:at+n], bytes.Repeat([]byte{0xFF}, n))
			return nil
		}), `a00000009.gdbtable): row 2: geometry: geometry type: a variable-length integer runs over 64 bits`),
		// Row 4's polygon claims 2^31 points.
		fails(gdb("file_gdb_2g_points", func(f map[string][]byte) []zipEntry {
			at, _ := gdbRow(f, 4)
			copy(f[gdbLayerTable+".gdbtable"][at+1:], []byte{0x80, 0x80, 0x80, 0x80, 0x08})
			return nil
		}), `a00000009.gdbtable): row 4: geometry: claims 2147483648 points`),
		// A NAME longer than the feed allows a value.
		withLimits(fails(gdb("file_gdb_value_past_limit", same), "limits.value_bytes"), "value_bytes", 32),
		// 64 MiB of zeros among the geodatabase's files, past the feed's
		// body_bytes once inflated.
		withLimits(fails(gdb("file_gdb_zip_bomb", func(f map[string][]byte) []zipEntry {
			delete(f, gdbLayerTable+".spx")
			return []zipEntry{{name: "Parcels.gdb/a00000009.spx", raw: deflated(0, 64<<20), declared: 64 << 20}}
		}), "zip bomb"), "body_bytes", 16*mib),
		// The layer's table without its .gdbtablx.
		fails(gdb("file_gdb_no_tablx", func(f map[string][]byte) []zipEntry {
			delete(f, gdbLayerTable+".gdbtablx")
			return nil
		}), `a00000009.gdbtable): its .gdbtablx is missing`),
	)
	return cs
}
