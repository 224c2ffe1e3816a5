package layertest

import (
	"encoding/json"
	"fmt"
	"os"
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
		return nil, fmt.Errorf("layertest: %w", err)
	}
	var fc struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("layertest: %s: %w", path, err)
	}
	if fc.Type != "FeatureCollection" {
		return nil, fmt.Errorf("layertest: %s: not a FeatureCollection (type %q)", path, fc.Type)
	}
	return Features(fc.Features), nil
}

// MarshalFeature renders a GeoJSON feature with the given id, geometry (a
// GeoJSON geometry object) and properties; a helper for hand-built layers.
func MarshalFeature(id string, geometry json.RawMessage, props map[string]any) json.RawMessage {
	p, err := json.Marshal(props)
	if err != nil {
		panic(err)
	}
	idj, _ := json.Marshal(id)
	return json.RawMessage(`{"type":"Feature","id":` + string(idj) + `,"geometry":` + string(geometry) + `,"properties":` + string(p) + `}`)
}
