package shapefile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/shapefile"
)

// points writes a Point shapefile of n records (x = i, y = -i) with one
// character field NAME (names[i]) and one numeric field N (width 5).
func points(n int, names []string) (shp, shx, dbf []byte) {
	be, le := binary.BigEndian, binary.LittleEndian
	header := func(words int) []byte {
		h := make([]byte, 100)
		be.PutUint32(h[0:], 9994)
		be.PutUint32(h[24:], uint32(words))
		le.PutUint32(h[28:], 1000)
		le.PutUint32(h[32:], 1) // Point
		return h
	}
	shp = header((100 + n*28) / 2)
	shx = header((100 + n*8) / 2)
	for i := 0; i < n; i++ {
		off := len(shp)
		rec := make([]byte, 28)
		be.PutUint32(rec[0:], uint32(i+1))
		be.PutUint32(rec[4:], 10)
		le.PutUint32(rec[8:], 1)
		le.PutUint64(rec[12:], math.Float64bits(float64(i)))
		le.PutUint64(rec[20:], math.Float64bits(-float64(i)))
		shp = append(shp, rec...)
		idx := make([]byte, 8)
		be.PutUint32(idx[0:], uint32(off/2))
		be.PutUint32(idx[4:], 10)
		shx = append(shx, idx...)
	}
	h := make([]byte, 32)
	h[0] = 3
	le.PutUint32(h[4:], uint32(n))
	le.PutUint16(h[8:], 32+2*32+1)
	le.PutUint16(h[10:], 1+20+5)
	field := func(name string, typ byte, length int) []byte {
		f := make([]byte, 32)
		copy(f, name)
		f[11], f[16] = typ, byte(length)
		return f
	}
	dbf = append(h, field("NAME", 'C', 20)...)
	dbf = append(dbf, field("N", 'N', 5)...)
	dbf = append(dbf, 0x0D)
	for i := 0; i < n; i++ {
		dbf = append(dbf, ' ')
		name := make([]byte, 20)
		copy(name, names[i])
		for j := len(names[i]); j < 20; j++ {
			name[j] = ' '
		}
		dbf = append(dbf, name...)
		dbf = append(dbf, []byte("   42")...)
	}
	return shp, shx, dbf
}

func files(shp, shx, dbf []byte, prj, cpg string) shapefile.Files {
	f := shapefile.Files{SHP: bytes.NewReader(shp), SHX: bytes.NewReader(shx), DBF: bytes.NewReader(dbf),
		SHPSize: int64(len(shp)), SHXSize: int64(len(shx)), PRJ: []byte(prj)}
	if cpg != "" {
		f.CPG = []byte(cpg)
	}
	return f
}

const wgs84 = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

func readAll(r *shapefile.Reader) ([]string, error) {
	var out []string
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(f.Properties))
	}
}

// TestPointsAndEncoding: the records come in order with their fields
// typed, a Latin-1 name decoded by its .cpg, the .prj's CRS named.
func TestPointsAndEncoding(t *testing.T) {
	shp, shx, dbf := points(2, []string{"Pe\xf1asco", "Ca\xf1on"})
	r, err := shapefile.NewReader(files(shp, shx, dbf, wgs84, "ISO-8859-1"), shapefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.SRID() != 4326 {
		t.Errorf("SRID %d, want 4326", r.SRID())
	}
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := f.Geometry.(*geom.Point); !ok || p.X() != 0 || p.SRID() != 4326 {
		t.Errorf("geometry %#v", f.Geometry)
	}
	if got := string(f.Properties); got != `{"NAME":"Peñasco","N":42}` {
		t.Errorf("properties %s", got)
	}
	if d := r.Declared(); len(d.Columns) != 2 || d.Columns[1].Type != "bigint" || d.Geometry != "Point" {
		t.Errorf("declared %+v", d)
	}
	rest, err := readAll(r)
	if err != nil || len(rest) != 1 {
		t.Errorf("rest %v, %v", rest, err)
	}
}

// TestIncomplete: files that do not agree, or one cut short, fail naming
// which; nothing ends in io.EOF.
func TestIncomplete(t *testing.T) {
	names := []string{"a", "b", "c"}
	shp, shx, dbf := points(3, names)
	dbfFewer := bytes.Clone(dbf)
	binary.LittleEndian.PutUint32(dbfFewer[4:], 2)
	_, shx2, _ := points(2, names)
	for _, tc := range []struct {
		name  string
		files shapefile.Files
		want  string
	}{
		{"dbf counts fewer", files(shp, shx, dbfFewer, wgs84, ""), "more records than the 2 of its .dbf"},
		{"dbf counts more", func() shapefile.Files {
			d := bytes.Clone(dbf)
			binary.LittleEndian.PutUint32(d[4:], 4)
			return files(shp, shx, d, wgs84, "")
		}(), ".shp holds 3 records, its .dbf 4"},
		{"shx of another file", files(shp, shx2, dbf, wgs84, ""), "more records than the 2 of its .shx"},
		{"shp cut short", files(shp[:len(shp)-28], shx, dbf, wgs84, ""), "header says"},
		{"no prj", files(shp, shx, dbf, "", ""), "no .prj"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no prj" {
				tc.files.PRJ = nil
			}
			r, err := shapefile.NewReader(tc.files, shapefile.Options{})
			if err == nil {
				_, err = readAll(r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLimits: a record longer than feature_bytes fails by name.
func TestLimits(t *testing.T) {
	shp, shx, dbf := points(1, []string{"a"})
	r, err := shapefile.NewReader(files(shp, shx, dbf, wgs84, ""), shapefile.Options{Limits: feature.Limits{FeatureBytes: 8}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "feature_bytes" {
		t.Errorf("err %v, want limits.feature_bytes", err)
	}
}

// TestPRJ: Esri's and GDAL's dialects of the common CRSs, as the reader
// takes them from a .prj (package crs identifies them; its tests and
// cmd/ingestd's TestESRIPrjPlacement try every dialect at length).
func TestPRJ(t *testing.T) {
	for prj, want := range map[string]int{
		`GEOGCS["GCS_North_American_1927",DATUM["D_North_American_1927",SPHEROID["Clarke_1866",6378206.4,294.978698213898]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`: 4267,
		wgs84: 4326,
		`PROJCS["NAD_1983_StatePlane_North_Carolina_FIPS_3200_Feet",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],UNIT["Foot_US",0.3048006096012192]]`: 2264,
		`PROJCS["WGS_1984_UTM_Zone_17N",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]]],PROJECTION["Transverse_Mercator"]]`:                                                                                                                                                    32617,
		`PROJCS["NAD83 / UTM zone 18N",GEOGCS["NAD83",AUTHORITY["EPSG","4269"]],AUTHORITY["EPSG","26918"]]`:                                                                                                                                                                                                            26918,
		`PROJCS["NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",984250.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-74.0],PARAMETER["Standard_Parallel_1",41.03333333333333],PARAMETER["Standard_Parallel_2",40.66666666666666],PARAMETER["Latitude_Of_Origin",40.16666666666666],UNIT["Foot_US",0.3048006096012192]]`: 2263,
	} {
		shp, shx, dbf := points(1, []string{"a"})
		r, err := shapefile.NewReader(files(shp, shx, dbf, prj, ""), shapefile.Options{})
		if err != nil || r.SRID() != want {
			t.Errorf("%.40s…: %v; want %d", prj, err, want)
			continue
		}
	}
	shp, shx, dbf := points(1, []string{"a"})
	_, err := shapefile.NewReader(files(shp, shx, dbf, `PROJCS["Some_Local_Grid",GEOGCS["GCS_WGS_1984"]]`, ""), shapefile.Options{})
	if err == nil || !strings.Contains(err.Error(), ".prj: ") || !strings.Contains(err.Error(), "set the feed's crs:") {
		t.Errorf("an unknown CRS: %v, want an error asking for crs:", err)
	}
	shp, shx, dbf = points(1, []string{"a"})
	r, err := shapefile.NewReader(files(shp, shx, dbf, `nonsense`, ""), shapefile.Options{SRID: 2264})
	if err != nil || r.SRID() != 2264 || r.CRS().By != "setting" {
		t.Errorf("crs: 2264 over a nonsense .prj: %v, %+v", err, r.CRS())
	}
}

// TestDuplicateFieldNames: a DBF with two fields called NAME keeps both,
// the second as NAME2 (GDAL's name for it when it writes the layer), in
// the properties and the declared schema alike.
func TestDuplicateFieldNames(t *testing.T) {
	shp, shx, dbf := points(2, []string{"a", "b"})
	copy(dbf[64:75], "NAME\x00\x00\x00\x00\x00\x00\x00") // the second field, N, renamed NAME
	r, err := shapefile.NewReader(files(shp, shx, dbf, wgs84, ""), shapefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	props, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"NAME":"a","NAME2":42}`; len(props) != 2 || props[0] != want {
		t.Errorf("properties %q, want %s first", props, want)
	}
	if d := r.Declared(); len(d.Columns) != 2 || d.Columns[1].Name != "NAME2" {
		t.Errorf("declared %+v", d)
	}
}
