package flatgeobuf_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/flatgeobuf"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/interoptest"
)

// ncFGB writes nc.gpkg's counties as FlatGeobuf (GDAL's -f FlatGeobuf,
// with its spatial index, so features come in Hilbert order).
func ncFGB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nc.fgb")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", path, interoptest.NCGpkg(t), "-nln", "counties")
	return path
}

func TestMatchesGDAL(t *testing.T) {
	path := ncFGB(t)
	layers, err := flatgeobuf.Layers(path)
	if err != nil || !slices.Equal(layers, []string{"counties"}) {
		t.Fatalf("Layers: %v, %v", layers, err)
	}
	r, err := flatgeobuf.Open(path, flatgeobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.SRID() != 4267 {
		t.Errorf("SRID %d, want 4267", r.SRID())
	}
	gdaltest.CheckDeclared(t, r.Declared(), path, "counties")
	if n := gdaltest.Compare(t, r, path, "counties", 4267); n != 100 {
		t.Errorf("%d features, want 100", n)
	}
	if _, err := flatgeobuf.Open(path, flatgeobuf.Options{Layer: "parcels"}); err == nil || !strings.Contains(err.Error(), `its one layer is "counties"`) {
		t.Errorf("another layer: %v", err)
	}
}

// readAll reads every feature and returns the first error.
func readAll(path string, opts flatgeobuf.Options) error {
	return gdaltest.ReadAll(flatgeobuf.Open(path, opts))
}

// open opens path with the default options.
func open(path string) (gdaltest.Reader, error) { return flatgeobuf.Open(path, flatgeobuf.Options{}) }

func TestHostile(t *testing.T) {
	good := ncFGB(t)
	whole, _ := os.ReadFile(good)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Counties of many more vertices than their header has bytes (the CRS
	// WKT is most of it).
	slim := filepath.Join(dir, "slim.fgb")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", slim, good, "-select", "NAME", "-segmentize", "0.002")
	slimBytes, _ := os.ReadFile(slim)
	header := int64(binary.LittleEndian.Uint32(slimBytes[8:]))
	// A CRS GDAL knows no EPSG code for: the header has its WKT, code 0.
	noEPSG := filepath.Join(dir, "noepsg.fgb")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", noEPSG, gdaltest.Mixed(t, dir), "-nln", "mixed",
		"-a_srs", "+proj=tmerc +lat_0=33.1 +lon_0=-79.1 +k=0.9991 +x_0=60 +y_0=0 +ellps=GRS80 +units=m +no_defs")
	if r, err := flatgeobuf.Open(noEPSG, flatgeobuf.Options{SRID: 2264}); err != nil || r.SRID() != 2264 {
		t.Errorf("crs override: %v", err)
	} else {
		r.Close()
	}
	for _, c := range []struct {
		name, path string
		opts       flatgeobuf.Options
		want       string
	}{
		{"CRS not identified", noEPSG, flatgeobuf.Options{}, `flatgeobuf: its CRS: the projected CRS "unknown" (projection "Transverse Mercator", datum "Unknown based on GRS80 ellipsoid", unit "metre" = 1 m) matches no EPSG or ESRI CRS`},
		{"text file", write("a.fgb", []byte("not a flatgeobuf at all")), flatgeobuf.Options{}, "not a FlatGeobuf file"},
		{"version 2", write("v2.fgb", append([]byte("fgb\x02fgb\x00"), whole[8:]...)), flatgeobuf.Options{}, "major version 2 is not supported"},
		{"cut in the header", write("h.fgb", whole[:40]), flatgeobuf.Options{}, "cut short in its"},
		{"cut in the features", write("f.fgb", whole[:len(whole)-1000]), flatgeobuf.Options{}, "the file is cut short"},
		{"cut at a feature's end", write("e.fgb", cutAtFeature(t, whole)), flatgeobuf.Options{}, "its header counts 100 features, it holds 99"},
		{"feature_bytes", slim, flatgeobuf.Options{Limits: feature.Limits{FeatureBytes: header}}, "flatgeobuf feature "},
		{"feature_bytes of the header", good, flatgeobuf.Options{Limits: feature.Limits{FeatureBytes: 2000}}, "limits.feature_bytes exceeded (2000 bytes): flatgeobuf header of 2340 bytes"},
		{"value_bytes", good, flatgeobuf.Options{Limits: feature.Limits{ValueBytes: 4}}, "limits.value_bytes exceeded (4 bytes): flatgeobuf feature 0, column \"NAME\""},
		{"properties", good, flatgeobuf.Options{Limits: feature.Limits{Properties: 3}}, "limits.properties exceeded (3)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := readAll(c.path, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// cutAtFeature returns the file without its last feature: a file that
// ends on a feature's boundary, which only the header's count shows.
func cutAtFeature(t *testing.T, whole []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.fgb")
	os.WriteFile(path, whole, 0o600)
	r, err := flatgeobuf.Open(path, flatgeobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ends := []int64{}
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		ends = append(ends, r.Offset())
	}
	return whole[:ends[len(ends)-2]]
}

// FuzzReader: no file makes the reader panic or hang; each ends in io.EOF
// or an error.
func FuzzReader(f *testing.F) {
	whole, err := os.ReadFile(filepath.Join("testdata", "seed.fgb"))
	if err == nil {
		f.Add(whole)
	}
	f.Add([]byte("fgb\x03fgb\x00\x04\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.fgb")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := flatgeobuf.Open(path, flatgeobuf.Options{Limits: feature.Limits{FeatureBytes: 1 << 20}})
		if err != nil {
			return
		}
		defer r.Close()
		for range len(b) + 1 {
			if _, err := r.Next(); err != nil {
				return
			}
		}
		t.Fatal("more features than bytes")
	})
}

// TestMixedMatchesGDAL: every geometry and property type GDAL writes to
// FlatGeobuf (a layer of mixed geometry types: each feature's own type)
// reads as GDAL reads it.
func TestMixedMatchesGDAL(t *testing.T) {
	// GDAL's writer leaves out the feature without a geometry when it
	// builds the spatial index (its default): 7 of Mixed's 8.
	gdaltest.MixedMatchesGDAL(t, "FlatGeobuf", "mixed.fgb", open, 7)
}

// TestCRSFromWKT: a header whose CRS GDAL could not name (its WKT 2 alone)
// is read in the CRS the WKT's parameters identify. The file has one
// feature, whose index is two nodes (a leaf and the root).
func TestCRSFromWKT(t *testing.T) {
	r, err := flatgeobuf.Open(gdaltest.RenamedCRSFile(t, "FlatGeobuf", "renamed.fgb"), flatgeobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if c := r.CRS(); c.SRID != 6396 || c.Code != "EPSG:6396" || c.By != "parameters" {
		t.Errorf("CRS %+v, want EPSG:6396 by parameters", c)
	}
	if f, err := r.Next(); err != nil || f.Geometry.SRID() != 6396 {
		t.Errorf("first feature: %v", err)
	}
}

// TestOneFeature: a file of one feature, whose spatial index is two nodes
// (the leaf and the root above it), is read as GDAL reads it.
func TestOneFeature(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "one.geojson")
	if err := os.WriteFile(src, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"n":1},"geometry":{"type":"Point","coordinates":[-78.6,35.7]}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "one.fgb")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", path, src, "-nln", "one")
	r, err := flatgeobuf.Open(path, flatgeobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := gdaltest.Compare(t, r, path, "one", 4326); n != 1 {
		t.Errorf("%d features, want 1", n)
	}
}
