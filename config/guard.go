package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/internal/yamlconf"

	"go.yaml.in/yaml/v3"
)

// BBox is an extent in EPSG:4326, longitude first.
type BBox struct {
	MinX, MinY, MaxX, MaxY float64
}

// String formats b as the YAML writes it.
func (b BBox) String() string {
	return fmt.Sprintf("[%g, %g, %g, %g]", b.MinX, b.MinY, b.MaxX, b.MaxY)
}

// Values of schema_change.
const (
	SchemaEvolve = "evolve"
	SchemaHold   = "hold"
)

// schemaChange reads schema_change: evolve or hold (typed layers).
func (p *parser) schemaChange(m *yamlconf.Mapping, path string) (string, bool) {
	return p.choice(m, "schema_change", path, SchemaEvolve, SchemaHold)
}

// What a poll does with a feature whose geometry is invalid (self-intersecting
// rings, too few points, a ring that does not close): repair it with
// ST_MakeValid (a geometry PostGIS cannot even parse becomes NULL), or skip
// the feature's update. Either way the poll counts them and goes on: one bad
// feature never aborts a layer.
const (
	InvalidRepair = "repair"
	InvalidSkip   = "skip"
)

// invalidGeometry reads invalid_geometry: repair or skip.
func (p *parser) invalidGeometry(m *yamlconf.Mapping, path string) (string, bool) {
	s, present := p.Str(m, "invalid_geometry", path)
	if !present || !s.OK {
		return "", false
	}
	switch v := strings.TrimSpace(s.Val); v {
	case InvalidRepair, InvalidSkip:
		return v, true
	}
	p.Errorf(s.Node, yamlconf.Join(path, "invalid_geometry"), "expected repair or skip, found %q", s.Raw)
	return "", false
}

// maxShrink reads max_shrink: a fraction in (0, 1]. 0 is refused rather than
// taken as "hold any shrink", because a layer losing one parcel would then
// wait for an operator on every poll.
func (p *parser) maxShrink(m *yamlconf.Mapping, path string) (float64, bool) {
	s, present := p.Str(m, "max_shrink", path)
	if !present || !s.OK {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s.Val), 64)
	if err != nil || !(v > 0 && v <= 1) {
		p.Errorf(s.Node, yamlconf.Join(path, "max_shrink"),
			"expected a fraction above 0 and at most 1 (the share of features a snapshot may lose), found %q", s.Raw)
		return 0, false
	}
	return v, true
}

// bbox reads a jurisdiction's `bbox: [minx, miny, maxx, maxy]` in EPSG:4326,
// longitude first. nil when absent or invalid (and reported).
func (p *parser) bbox(m *yamlconf.Mapping, path string) *BBox {
	n, present := m.Get("bbox")
	if !present {
		return nil
	}
	n = yamlconf.Resolve(n)
	field := yamlconf.Join(path, "bbox")
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) != 4 {
		p.Errorf(n, field, "expected [minx, miny, maxx, maxy] in EPSG:4326 (longitude first), found %s", yamlconf.Describe(n))
		return nil
	}
	var v [4]float64
	for i, c := range n.Content {
		c = yamlconf.Resolve(c)
		s, err := yamlconf.ExpandEnv(c.Value, p.Env)
		if err == nil && c.Kind == yaml.ScalarNode {
			v[i], err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		}
		if c.Kind != yaml.ScalarNode || err != nil {
			p.Errorf(c, field, "expected a number, found %s", yamlconf.Describe(c))
			return nil
		}
	}
	b := BBox{MinX: v[0], MinY: v[1], MaxX: v[2], MaxY: v[3]}
	switch {
	case b.MinX < -180 || b.MaxX > 180 || b.MinY < -90 || b.MaxY > 90:
		p.Errorf(n, field, "%s is not in EPSG:4326: longitudes lie in [-180, 180], latitudes in [-90, 90]", b)
		return nil
	case b.MinX >= b.MaxX || b.MinY >= b.MaxY:
		p.Errorf(n, field, "%s is empty: want [minx, miny, maxx, maxy] with minx < maxx and miny < maxy", b)
		return nil
	}
	return &b
}
