package wfstest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Features is a layer held in memory as rendered GeoJSON features.
type Features []json.RawMessage

// Len implements Layer.
func (f Features) Len() int { return len(f) }

// AppendFeature implements Layer.
func (f Features) AppendFeature(buf []byte, i int) []byte { return append(buf, f[i]...) }

// LoadFeatureCollection reads a GeoJSON FeatureCollection file as a layer.
func LoadFeatureCollection(path string) (Features, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wfstest: %w", err)
	}
	var fc struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("wfstest: %s: %w", path, err)
	}
	if fc.Type != "FeatureCollection" {
		return nil, fmt.Errorf("wfstest: %s: not a FeatureCollection (type %q)", path, fc.Type)
	}
	return Features(fc.Features), nil
}

// Parcels is a generated layer of n parcel-like polygons (five-vertex rings on a
// grid) with a dozen typed attributes. Feature i is the same on every call, so
// a layer served twice is the same snapshot.
type Parcels struct {
	N int
	// Version changes the attributes of every 100th feature when non-zero, for
	// tests that need a second, slightly different snapshot.
	Version int
}

// Len implements Layer.
func (p Parcels) Len() int { return p.N }

// AppendFeature implements Layer.
func (p Parcels) AppendFeature(buf []byte, i int) []byte {
	const cols = 1000
	x0 := -78.9 + float64(i%cols)*0.0005
	y0 := 35.6 + float64(i/cols)*0.0005
	d := 0.0004
	buf = append(buf, `{"type":"Feature","id":"parcel.`...)
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, `","geometry":{"type":"Polygon","coordinates":[[`...)
	ring := [5][2]float64{{x0, y0}, {x0 + d, y0}, {x0 + d, y0 + d}, {x0, y0 + d}, {x0, y0}}
	for k, c := range ring {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendFloat(buf, round7(c[0]), 'f', -1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, round7(c[1]), 'f', -1, 64)
		buf = append(buf, ']')
	}
	value := 100000 + (i*7919)%900000
	if p.Version != 0 && i%100 == 0 {
		value += p.Version
	}
	buf = append(buf, `]]},"properties":{"pin":"`...)
	buf = fmt.Appendf(buf, "%010d", i)
	buf = append(buf, `","owner":"OWNER `...)
	buf = strconv.AppendInt(buf, int64(i%5000), 10)
	buf = append(buf, `","site_address":"`...)
	buf = strconv.AppendInt(buf, int64(100+i%9000), 10)
	buf = append(buf, ` MAIN ST","zoning":"`...)
	buf = append(buf, zonings[i%len(zonings)]...)
	buf = append(buf, `","land_use":"`...)
	buf = append(buf, landUses[i%len(landUses)]...)
	buf = append(buf, `","acres":`...)
	buf = strconv.AppendFloat(buf, 0.1+float64(i%400)/100, 'f', 2, 64)
	buf = append(buf, `,"assessed_value":`...)
	buf = strconv.AppendInt(buf, int64(value), 10)
	buf = append(buf, `,"year_built":`...)
	buf = strconv.AppendInt(buf, int64(1900+i%125), 10)
	buf = append(buf, `,"bedrooms":`...)
	buf = strconv.AppendInt(buf, int64(i%6), 10)
	buf = append(buf, `,"exempt":`...)
	buf = strconv.AppendBool(buf, i%17 == 0)
	buf = append(buf, `,"deed_date":"20`...)
	buf = fmt.Appendf(buf, "%02d-%02d-%02d", i%25, 1+i%12, 1+i%28)
	buf = append(buf, `","township":"T`...)
	buf = strconv.AppendInt(buf, int64(i%20), 10)
	buf = append(buf, `"}}`...)
	return buf
}

var (
	zonings  = []string{"R-4", "R-6", "R-10", "RX-3", "OX-4", "CX-5", "IX-3", "DX-12", "NX-3", "AP"}
	landUses = []string{"single family", "multi family", "commercial", "industrial", "vacant", "institutional"}
)

func round7(f float64) float64 { return math.Round(f*1e7) / 1e7 }

// LoadDir adds every NAME.geojson FeatureCollection in dir as layer NAME.
func (s *Server) LoadDir(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.geojson"))
	if err != nil {
		return fmt.Errorf("wfstest: %w", err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("wfstest: no .geojson files in %s", dir)
	}
	for _, p := range paths {
		l, err := LoadFeatureCollection(p)
		if err != nil {
			return err
		}
		s.AddLayer(strings.TrimSuffix(filepath.Base(p), ".geojson"), l)
	}
	return nil
}
