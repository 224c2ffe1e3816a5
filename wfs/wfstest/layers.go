package wfstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
