package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/internal/yamlconf"
)

// CommonLayer is a layer that many feeds fill through their conform: one
// of OpenAddresses' four built in (addresses, parcels, buildings,
// centerlines) or one declared by the config's top-level layers: list.
type CommonLayer struct {
	Name string
	// Geometry is the layer's geometry type: point, linestring, polygon,
	// multipoint, multilinestring, multipolygon or geometry (any).
	Geometry string
	// Columns are the layer's own columns in order; the store adds
	// jurisdiction, feed, feature_id and geom.
	Columns []LayerColumn
	// Builtin is true for OpenAddresses' four layers.
	Builtin bool
	// Line is where the config declares it (0 for a built-in layer).
	Line int
}

// LayerColumn is one typed column of a common layer.
type LayerColumn struct {
	Name string
	// Type is text, integer, numeric, boolean or date.
	Type string
}

// ColumnNames returns the names of l's columns, in order.
func (l CommonLayer) ColumnNames() []string {
	out := make([]string, len(l.Columns))
	for i, c := range l.Columns {
		out[i] = c.Name
	}
	return out
}

// FeedConform is what a feed's conform: and tests: keys say: the common
// layer its features fill, the compiled mapping and the acceptance tests
// `ingestd validate` runs.
type FeedConform struct {
	// Layer is the common layer's name, Common the layer itself.
	Layer  string
	Common CommonLayer
	// Spec is the conform as written, Conform the same compiled.
	Spec    *conform.Spec
	Conform *conform.Conform
	// Tests are OpenAddresses-style acceptance tests of Conform.
	Tests []conform.Test
	// Line is the line of the conform: key.
	Line int
}

// builtinGeometry is the geometry type of OpenAddresses' layers as
// batch-machine writes them: addresses as points (a polygon's point on
// surface), parcels and buildings as polygons, centerlines as lines.
var builtinGeometry = map[string]string{
	"addresses":   "point",
	"parcels":     "multipolygon",
	"buildings":   "multipolygon",
	"centerlines": "multilinestring",
}

// geometryTypes are the geometry types a declared layer may take.
var geometryTypes = []string{"point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometry"}

// columnTypes are the column types a declared layer may take; a conform
// maps strings, which the store casts.
var columnTypes = []string{"text", "integer", "numeric", "boolean", "date"}

// storeColumns are the columns every common layer's table has besides its
// own; a declared layer may not name one of them.
var storeColumns = []string{"jurisdiction", "feed", "feature_id", "geom"}

// BuiltinLayers returns OpenAddresses' four common layers, sorted by name,
// their columns text.
func BuiltinLayers() []CommonLayer {
	var out []CommonLayer
	for _, name := range conform.LayerNames() {
		cols, _ := conform.LayerColumns(name)
		l := CommonLayer{Name: name, Geometry: builtinGeometry[name], Builtin: true}
		for _, c := range cols {
			l.Columns = append(l.Columns, LayerColumn{Name: c, Type: "text"})
		}
		out = append(out, l)
	}
	return out
}

// CommonLayer finds a common layer by name: a built-in one or one the
// config declares.
func (c *Config) CommonLayer(name string) (CommonLayer, bool) {
	for _, l := range c.Layers {
		if l.Name == name {
			return l, true
		}
	}
	for _, l := range BuiltinLayers() {
		if l.Name == name {
			return l, true
		}
	}
	return CommonLayer{}, false
}

// commonLayerNames lists the built-in and declared layers' names for
// messages.
func (c *Config) commonLayerNames() []string {
	names := conform.LayerNames()
	for _, l := range c.Layers {
		names = append(names, l.Name)
	}
	return names
}

var columnPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// layers reads the top-level layers: list.
func (p *parser) layers(root *yaml.Node, cfg *Config) {
	n := rawGet(root, "layers")
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return
	}
	items, ok := p.Sequence(n, "layers")
	if !ok {
		return
	}
	seen := map[string]int{}
	for i, item := range items {
		path := fmt.Sprintf("layers[%d]", i)
		m, ok := p.Mapping(item, path, []string{"name", "geometry", "columns"})
		if !ok {
			continue
		}
		l := CommonLayer{Line: item.Line, Geometry: "geometry"}
		if s, present := p.Str(m, "name", path); !present {
			p.Errorf(item, path+".name", "required: the common layer's name")
			continue
		} else if s.OK {
			switch {
			case !identPattern.MatchString(s.Val) || len(s.Val) > maxIdentifier:
				p.Errorf(s.Node, path+".name", "bad layer name %q: a plain SQL identifier (lowercase letters, digits, '_')", s.Raw)
				continue
			case slices.Contains(conform.LayerNames(), s.Val):
				p.Errorf(s.Node, path+".name", "%q is a built-in common layer; declare another name", s.Val)
				continue
			case seen[s.Val] > 0:
				p.Errorf(s.Node, path+".name", "layer %q declared twice (first at line %d)", s.Val, seen[s.Val])
				continue
			}
			l.Name = s.Val
			seen[s.Val] = s.Node.Line
		} else {
			continue
		}
		if s, present := p.Str(m, "geometry", path); present && s.OK {
			if !slices.Contains(geometryTypes, strings.ToLower(s.Val)) {
				p.Errorf(s.Node, path+".geometry", "unknown geometry type %q: one of %s", s.Raw, strings.Join(geometryTypes, ", "))
			} else {
				l.Geometry = strings.ToLower(s.Val)
			}
		}
		l.Columns = p.layerColumns(m, path)
		cfg.Layers = append(cfg.Layers, l)
	}
}

// layerColumns reads a declared layer's columns: a mapping of column name
// to type, in order.
func (p *parser) layerColumns(m *yamlconf.Mapping, path string) []LayerColumn {
	field := path + ".columns"
	n, ok := m.Get("columns")
	if !ok {
		p.Errorf(m.Node, field, "required: a mapping of column names to types (%s)", strings.Join(columnTypes, ", "))
		return nil
	}
	n = yamlconf.Resolve(n)
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		p.Errorf(n, field, "expected a mapping of column names to types (%s), found %s", strings.Join(columnTypes, ", "), yamlconf.Describe(n))
		return nil
	}
	var out []LayerColumn
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlconf.Resolve(n.Content[i+1])
		cf := field + "." + k.Value
		switch {
		case !columnPattern.MatchString(k.Value) || len(k.Value) > maxIdentifier || reservedWords[k.Value]:
			p.Errorf(k, cf, "bad column name %q: a plain SQL identifier, not a reserved word", k.Value)
			continue
		case slices.Contains(storeColumns, k.Value):
			p.Errorf(k, cf, "every common layer has a %s column already", k.Value)
			continue
		case slices.ContainsFunc(out, func(c LayerColumn) bool { return c.Name == k.Value }):
			p.Errorf(k, cf, "column %q declared twice", k.Value)
			continue
		}
		if v.Kind != yaml.ScalarNode || !slices.Contains(columnTypes, v.Value) {
			p.Errorf(v, cf, "unknown column type %s: one of %s", yamlconf.Describe(v), strings.Join(columnTypes, ", "))
			continue
		}
		out = append(out, LayerColumn{Name: k.Value, Type: v.Value})
	}
	return out
}

// conforms reads each feed's conform: and tests: (after layers, so that a
// conform may name a declared layer) and compiles the conform: an unknown
// function or a bad pattern is an error at its line.
func (p *parser) conforms(root *yaml.Node, cfg *Config) {
	if cfg == nil || root == nil {
		return
	}
	columns := func(name string) ([]string, bool) {
		l, ok := cfg.CommonLayer(name)
		return l.ColumnNames(), ok
	}
	for i, jn := range rawSeq(rawGet(root, "jurisdictions")) {
		path := fmt.Sprintf("jurisdictions[%d]", i)
		j := cfg.jurisdiction(rawScalar(rawGet(jn, "id")))
		for k, fn := range rawSeq(rawGet(jn, "feeds")) {
			fpath := fmt.Sprintf("%s.feeds[%d]", path, k)
			fc := p.feedConform(fn, fpath, cfg, columns)
			if f := j.feed(rawScalar(rawGet(fn, "id"))); f != nil && fc != nil {
				f.Conform = fc
			}
		}
	}
}

// feedConform reads one feed's conform: and tests:, nil when it has no
// conform or the conform is bad (and reported).
func (p *parser) feedConform(fn *yaml.Node, path string, cfg *Config, columns conform.ColumnsFunc) *FeedConform {
	cn, tn := rawGet(fn, "conform"), rawGet(fn, "tests")
	if tn != nil && tn.Tag == "!!null" {
		tn = nil
	}
	if cn == nil || cn.Tag == "!!null" {
		if tn != nil {
			p.Errorf(tn, path+".tests", "tests need a conform: on the feed to test")
		}
		return nil
	}
	field := path + ".conform"
	if cn.Kind != yaml.MappingNode {
		p.Errorf(cn, field, "expected a mapping with layer: and the layer's columns, found %s", yamlconf.Describe(cn))
		return nil
	}
	if rawGet(cn, "layer") == nil {
		p.Errorf(cn, field+".layer", "required: the common layer the feed fills (%s)", strings.Join(cfg.commonLayerNames(), ", "))
		return nil
	}
	spec, err := conform.ParseSpecNode(cn, columns)
	if err != nil {
		p.Errorf(cn, field, "%s", strings.TrimPrefix(err.Error(), "conform: "))
		return nil
	}
	common, ok := cfg.CommonLayer(spec.Layer)
	if !ok {
		p.Errorf(rawGet(cn, "layer"), field+".layer", "unknown common layer %q: one of %s, or declare it under layers:", spec.Layer, strings.Join(cfg.commonLayerNames(), ", "))
		return nil
	}
	for _, key := range spec.Ignored {
		p.Warnf(rawKey(cn, key), field+"."+key, "not a column of %s: ignored", spec.Layer)
	}
	c, err := conform.Compile(spec)
	if err != nil {
		var ce *conform.Error
		if errors.As(err, &ce) {
			at := &yaml.Node{Line: ce.Line}
			if ce.Line == 0 {
				at = cn
			}
			msg := ce.Msg
			if ce.Function != "" {
				msg = ce.Function + ": " + msg
			}
			p.Errorf(at, yamlconf.Join(field, ce.Column), "%s", msg)
		} else {
			p.Errorf(cn, field, "%s", strings.TrimPrefix(err.Error(), "conform: "))
		}
		return nil
	}
	fc := &FeedConform{Layer: spec.Layer, Common: common, Spec: spec, Conform: c, Line: cn.Line}
	if tn != nil {
		items, ok := p.Sequence(tn, path+".tests")
		if !ok {
			return fc
		}
		for i, item := range items {
			var t conform.Test
			if item.Kind != yaml.MappingNode {
				p.Errorf(item, fmt.Sprintf("%s.tests[%d]", path, i), "expected {description, inputs, expected}, found %s", yamlconf.Describe(item))
				continue
			}
			if err := item.Decode(&t); err != nil {
				p.Errorf(item, fmt.Sprintf("%s.tests[%d]", path, i), "expected {description, inputs, expected}: %s", strings.TrimPrefix(err.Error(), "yaml: "))
				continue
			}
			if t.Inputs == nil || rawGet(item, "expected") == nil {
				p.Errorf(item, fmt.Sprintf("%s.tests[%d]", path, i), "a test needs inputs: and expected:")
				continue
			}
			numbersAsWritten(rawGet(item, "inputs"), t.Inputs)
			fc.Tests = append(fc.Tests, t)
		}
	}
	return fc
}

// numbersAsWritten replaces the numbers of a test's inputs by their text
// as written (a json.Number): batch-machine prints 12 and 12.0
// differently, and a float64 cannot tell them apart.
func numbersAsWritten(n *yaml.Node, inputs map[string]any) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := yamlconf.Resolve(n.Content[i+1])
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
			continue
		}
		if _, err := strconv.ParseFloat(v.Value, 64); err == nil {
			inputs[n.Content[i].Value] = json.Number(v.Value)
		}
	}
}

// rawKey is the key node of key in the mapping n, n itself when absent.
func rawKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return n
}
