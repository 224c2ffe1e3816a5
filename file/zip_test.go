package file_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/source"
)

func writeZip(t *testing.T, w io.Writer, name, body string) {
	t.Helper()
	zw := zip.NewWriter(w)
	f, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, body)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// pointShapefile writes a Shapefile of n points with one character field,
// name: its .shp, .shx and .dbf.
func pointShapefile(n int) (shp, shx, dbf []byte) {
	header := func(size int) []byte {
		h := make([]byte, 100)
		binary.BigEndian.PutUint32(h[0:], 9994)
		binary.BigEndian.PutUint32(h[24:], uint32(size/2))
		binary.LittleEndian.PutUint32(h[28:], 1000)
		binary.LittleEndian.PutUint32(h[32:], 1)
		return h
	}
	shp, shx = header(100+28*n), header(100+8*n)
	for i := range n {
		shx = binary.BigEndian.AppendUint32(shx, uint32((100+28*i)/2))
		shx = binary.BigEndian.AppendUint32(shx, 10)
		shp = binary.BigEndian.AppendUint32(shp, uint32(i+1))
		shp = binary.BigEndian.AppendUint32(shp, 10)
		shp = binary.LittleEndian.AppendUint32(shp, 1)
		shp = binary.LittleEndian.AppendUint64(shp, math.Float64bits(float64(i)))
		shp = binary.LittleEndian.AppendUint64(shp, math.Float64bits(1))
	}
	dbf = make([]byte, 32, 32+32+1+11*n+1)
	dbf[0] = 3
	binary.LittleEndian.PutUint32(dbf[4:], uint32(n))
	binary.LittleEndian.PutUint16(dbf[8:], 65)
	binary.LittleEndian.PutUint16(dbf[10:], 11)
	fd := make([]byte, 32)
	copy(fd, "name")
	fd[11], fd[16] = 'C', 10
	dbf = append(append(dbf, fd...), 0x0D)
	for i := range n {
		dbf = append(dbf, ' ')
		dbf = append(dbf, []byte(strings.Repeat(string(rune('a'+i)), 10))...)
	}
	return shp, shx, append(dbf, 0x1A)
}

// zipEntries zips name → body in order; an entry named in badCRC is
// stored with a CRC-32 its bytes do not have.
func zipEntries(t *testing.T, badCRC string, kv ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(kv); i += 2 {
		name, body := kv[i], []byte(kv[i+1])
		var w io.Writer
		var err error
		if name == badCRC {
			w, err = zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(body) ^ 1,
				CompressedSize64: uint64(len(body)), UncompressedSize64: uint64(len(body))})
		} else {
			w, err = zw.Create(name)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDamagedZips: an entry whose CRC-32 fails (any part of a Shapefile,
// the .dbf and .shx included, which the reader does not read to their
// ends), an encrypted entry, an entry that inflates past its declared
// size, a directory that places an entry outside the file and an empty
// zip each fail naming the entry and the fault in ingestd's words, with
// no archive/zip or flate message and no temporary path.
func TestDamagedZips(t *testing.T) {
	t.Parallel()
	shp, shx, dbf := pointShapefile(3)
	const prj = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`
	layer := func(bad string) string {
		return string(zipEntries(t, bad, "pts.shp", string(shp), "pts.shx", string(shx), "pts.dbf", string(dbf), "pts.prj", prj))
	}
	csv := "WKT,name\n\"POINT (1 2)\",a\n"
	var raw bytes.Buffer
	zw := zip.NewWriter(&raw)
	var bomb bytes.Buffer
	flw, _ := flate.NewWriter(&bomb, flate.BestSpeed)
	flw.Write(bytes.Repeat([]byte("a"), 1<<20))
	flw.Close()
	fw, _ := zw.CreateRaw(&zip.FileHeader{Name: "big.csv", Method: zip.Deflate, CompressedSize64: uint64(bomb.Len()), UncompressedSize64: 100})
	fw.Write(bomb.Bytes())
	ew, _ := zw.CreateRaw(&zip.FileHeader{Name: "secret.csv", Method: zip.Deflate, Flags: 1, CompressedSize64: 20, UncompressedSize64: 20})
	ew.Write(bytes.Repeat([]byte{0x5a}, 20))
	zw.Close()
	whole := raw.Bytes()
	// The directory's offset moved on: every entry seems to begin before
	// the file does.
	moved := zipEntries(t, "", "pts.csv", csv)
	end := bytes.LastIndex(moved, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint32(moved[end+16:], binary.LittleEndian.Uint32(moved[end+16:])+4096)

	files := map[string]string{
		"good.zip": layer(""), "dbf.zip": layer("pts.dbf"), "shx.zip": layer("pts.shx"), "shp.zip": layer("pts.shp"),
		"prj.zip": layer("pts.prj"), "csv.zip": string(zipEntries(t, "pts.csv", "pts.csv", csv)),
		"moved.zip": string(moved), "empty.zip": string(zipEntries(t, "")), "raw.zip": string(whole),
	}
	srv := serveFiles(t, files)
	dir := t.TempDir()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(dir))
	var col collect
	if _, err := c.Fetch(t.Context(), layer0(srv.URL+"/good.zip", ""), 0, col.handle); err != nil || len(col.props) != 3 {
		t.Fatalf("the good zip: %d features, %v", len(col.props), err)
	}
	for _, tc := range []struct{ file, layer, want string }{
		{"dbf.zip", "", "pts.dbf in the zip is damaged: its CRC-32 does not match its bytes"},
		{"shx.zip", "", "pts.shx in the zip is damaged: its CRC-32 does not match its bytes"},
		{"shp.zip", "", "pts.shp in the zip is damaged: its CRC-32 does not match its bytes"},
		{"prj.zip", "", "pts.prj in the zip is damaged: its CRC-32 does not match its bytes"},
		{"csv.zip", "", "pts.csv in the zip is damaged: its CRC-32 does not match its bytes"},
		{"moved.zip", "", "pts.csv in the zip is damaged: the zip's directory places it outside the file"},
		{"empty.zip", "", "it is empty"},
		{"raw.zip", "big", "big.csv in the zip is damaged: it inflates to more than the 100 bytes its directory declares"},
		{"raw.zip", "secret", "secret.csv in the zip is encrypted"},
	} {
		_, err := c.Fetch(t.Context(), layer0(srv.URL+"/"+tc.file, tc.layer), 0, (&collect{}).handle)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v\nwant %q", tc.file, tc.layer, err, tc.want)
			continue
		}
		for _, leak := range []string{"zip: checksum", "zip: not a valid", "flate:", "readat", dir} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s %s: %q in %v", tc.file, tc.layer, leak, err)
			}
		}
	}
	noDownloadsLeft(t, dir)
}

func layer0(url, name string) source.Layer { return layer(url, file.Settings{Layer: name}) }
