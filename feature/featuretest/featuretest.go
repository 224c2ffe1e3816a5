// Package featuretest holds what the tests of every feature decoder share:
// the recorded responses under testdata/wfs, documents wrapping a feature in
// a collection of each encoding, and a reader drained into copies.
package featuretest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/twpayne/go-geom/encoding/wkt"
)

// ReadTestdata returns the recorded response name from the repository's
// testdata/wfs.
func ReadTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(TestdataDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestdataDir is the directory of the recorded responses, found from the
// test's package directory (at any depth) by the module's go.mod.
func TestdataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "wfs")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("featuretest: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// GMLDoc wraps content (a feature's properties) in the collection of a GML
// version: 2 (WFS 1.0), 3.1.1 (WFS 1.1) or 3.2 (WFS 2.0).
func GMLDoc(version, content string) string {
	switch version {
	case "2":
		return `<?xml version="1.0"?><wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml" xmlns:app="http://app"><gml:featureMember><app:f fid="f.1">` +
			content + `</app:f></gml:featureMember></wfs:FeatureCollection>`
	case "3.1.1":
		return `<?xml version="1.0"?><wfs:FeatureCollection numberOfFeatures="1" xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml" xmlns:app="http://app"><gml:featureMembers><app:f gml:id="f.1">` +
			content + `</app:f></gml:featureMembers></wfs:FeatureCollection>`
	}
	return `<?xml version="1.0"?><wfs:FeatureCollection numberMatched="unknown" numberReturned="1" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:app="http://app"><wfs:member><app:f gml:id="f.1">` +
		content + `</app:f></wfs:member></wfs:FeatureCollection>`
}

// GeoJSONDoc wraps features (JSON objects, comma-separated) in a collection.
func GeoJSONDoc(features ...string) string {
	return `{"type":"FeatureCollection","features":[` + strings.Join(features, ",") + `]}`
}

// ReadEvery drains r, returning the features (copies) and the final error
// (nil at io.EOF).
func ReadEvery(t testing.TB, r feature.FeatureReader) ([]feature.Feature, error) {
	t.Helper()
	var out []feature.Feature
	for range 1_000_000 {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, *f)
	}
	t.Fatal("no end")
	return nil, nil
}

// Truncate cuts s to n bytes for a test's message.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// WKTFeature is a feature copied out of a reader, its geometry as WKT, so
// that tests compare features as text.
type WKTFeature struct {
	ID    string
	WKT   string // "" for a null geometry
	SRID  int
	Props string
}

// ReadWKT drains r into WKTFeatures; the error is the reader's (nil at
// io.EOF).
func ReadWKT(t testing.TB, r feature.FeatureReader) ([]WKTFeature, error) {
	t.Helper()
	var out []WKTFeature
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		got := WKTFeature{ID: f.ID, Props: string(f.Properties)}
		if f.Geometry != nil {
			s, err := wkt.Marshal(f.Geometry)
			if err != nil {
				t.Fatal(err)
			}
			got.WKT, got.SRID = s, f.Geometry.SRID()
		}
		out = append(out, got)
	}
}
