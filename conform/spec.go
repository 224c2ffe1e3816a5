package conform

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// optionKeys are the keys of OpenAddresses' schema-2 conform object that
// say how to read a source rather than how to map it. A Spec keeps them for
// the reader of a file; they map no column.
var optionKeys = []string{"layer", "format", "addrtype", "srs", "file", "encoding", "csvsplit", "headers", "skiplines", "notes", "size", "lon", "lat"}

// Spec is a conform object as written in a feed's configuration: the common
// layer it fills and, in the order written, its attributes, each mapping a
// column of that layer to the feed's properties. It is OpenAddresses'
// schema-2 conform with one difference: there, "layer" picks a layer inside
// a downloaded file; here it names the common layer.
type Spec struct {
	// Layer is the common layer: addresses, parcels, buildings or centerlines.
	Layer string
	// Attributes are the keys naming a column of Layer, in document order:
	// batch-machine applies them in that order and a later one may read
	// what an earlier one wrote.
	Attributes []Attribute
	// Options holds OpenAddresses' reading options (format, srs, file,
	// encoding, csvsplit, headers, skiplines, lat, lon, …) as written, for
	// a later import to hand to a file reader.
	Options map[string]any
	// Ignored lists the keys that are neither a column of Layer nor an
	// option; batch-machine ignores them too, and validate may warn.
	Ignored []string
	// Line is the line of the conform object in its YAML document, 0 when
	// unknown.
	Line int

	// columns are Layer's columns when the layer is declared by the
	// configuration rather than built in (ParseSpecNode); nil otherwise.
	columns []string
}

// Attribute is one column's mapping: a field name, a list of field names
// joined with a space, or a function object.
type Attribute struct {
	Column string
	// Value is the mapping as decoded: a string, a []any of strings or a
	// map[string]any with a "function" key.
	Value any
	Line  int
}

// Option returns the option key as a string, and false when it is absent
// or not a string.
func (s *Spec) Option(key string) (string, bool) {
	v, ok := s.Options[key].(string)
	return v, ok
}

// ParseSpec reads a conform object from YAML or JSON.
func ParseSpec(data []byte) (*Spec, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("conform: %s", yamlMessage(err))
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return specFromNode(n.Content[0], "")
	}
	return specFromNode(&n, "")
}

// ParseOpenAddresses reads a conform object of OpenAddresses' catalog, in
// JSON or YAML, for the common layer given: its "layer" key, which there
// picks a layer inside a downloaded file, is kept in Options.
func ParseOpenAddresses(data []byte, layer string) (*Spec, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("conform: %s", yamlMessage(err))
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return specFromNode(n.Content[0], layer)
	}
	return specFromNode(&n, layer)
}

// ColumnsFunc returns the columns of a common layer, and false when there
// is no such layer.
type ColumnsFunc func(layer string) ([]string, bool)

// ParseSpecNode reads a conform mapping of ingestd's configuration whose
// layer may be one the configuration declares: columns returns the
// columns of such a layer (nil: built-in layers only). Compile then checks
// the attributes against those columns.
func ParseSpecNode(n *yaml.Node, columns ColumnsFunc) (*Spec, error) {
	return specFromNodeCols(n, "", columns)
}

// UnmarshalYAML lets a Spec sit in ingestd's YAML configuration.
func (s *Spec) UnmarshalYAML(n *yaml.Node) error {
	sp, err := specFromNode(n, "")
	if err != nil {
		return err
	}
	*s = *sp
	return nil
}

// UnmarshalJSON reads a Spec from JSON, keeping the order of its keys.
func (s *Spec) UnmarshalJSON(data []byte) error {
	sp, err := ParseSpec(data)
	if err != nil {
		return err
	}
	*s = *sp
	return nil
}

// yamlMessage is the YAML parser's complaint without its package's name.
func yamlMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// specFromNode reads a conform mapping; oaLayer, when set, is the common
// layer and the mapping is OpenAddresses' own.
func specFromNode(n *yaml.Node, oaLayer string) (*Spec, error) {
	return specFromNodeCols(n, oaLayer, nil)
}

// specFromNodeCols is specFromNode with the columns of declared layers.
func specFromNodeCols(n *yaml.Node, oaLayer string, columns ColumnsFunc) (*Spec, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("conform: line %d: want a mapping of columns to fields", n.Line)
	}
	s := &Spec{Layer: oaLayer, Options: map[string]any{}, Line: n.Line}
	type kv struct {
		key  string
		val  any
		line int
	}
	var kvs []kv
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return nil, fmt.Errorf("conform: line %d: key %q given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		var val any
		if err := v.Decode(&val); err != nil {
			return nil, fmt.Errorf("conform: line %d: %s: %s", v.Line, k.Value, yamlMessage(err))
		}
		if k.Value == "layer" && oaLayer == "" {
			name, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("conform: line %d: layer: want the name of a common layer (%v)", v.Line, LayerNames())
			}
			s.Layer = name
			continue
		}
		kvs = append(kvs, kv{k.Value, normalize(val), k.Line})
	}
	cols, builtin := layers[s.Layer]
	if !builtin && columns != nil {
		if c, ok := columns(s.Layer); ok {
			cols, s.columns = c, slices.Clone(c)
		}
	}
	for _, e := range kvs {
		switch {
		case slices.Contains(optionKeys, e.key):
			s.Options[e.key] = e.val
		case slices.Contains(cols, e.key):
			s.Attributes = append(s.Attributes, Attribute{Column: e.key, Value: e.val, Line: e.line})
		default:
			s.Ignored = append(s.Ignored, e.key)
		}
	}
	return s, nil
}

// normalize turns YAML's decoded maps into map[string]any throughout.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}
