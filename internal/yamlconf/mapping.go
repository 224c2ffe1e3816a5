package yamlconf

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mapping is a YAML mapping with its keys checked and merge keys applied.
type Mapping struct {
	// Node is the mapping itself, where a missing key is reported.
	Node *yaml.Node
	vals map[string]*yaml.Node
	// typos holds the known keys suggested for unknown ones, so that a misspelt
	// required key is reported once (as the typo) rather than also as missing.
	typos map[string]bool
}

// Missing reports whether a required key is absent and not already
// explained by a typo.
func (m *Mapping) Missing(key string) bool {
	_, ok := m.vals[key]
	return !ok && !m.typos[key]
}

// Typo reports whether key was suggested for a misspelt key, which was
// reported: a caller then says nothing more of key's absence.
func (m *Mapping) Typo(key string) bool { return m.typos[key] }

// Get returns the value of key, if set.
func (m *Mapping) Get(key string) (*yaml.Node, bool) {
	n, ok := m.vals[key]
	return n, ok
}

// Mapping checks that n is a mapping with known keys, each at most once, and
// reports unknown keys with the closest known one.
func (p *Parser) Mapping(n *yaml.Node, path string, known []string) (*Mapping, bool) {
	n = Resolve(n)
	if n.Kind != yaml.MappingNode {
		p.Errorf(n, path, "expected a mapping of %s, found %s", strings.Join(known, ", "), Describe(n))
		return nil, false
	}
	m := &Mapping{Node: n, vals: map[string]*yaml.Node{}, typos: map[string]bool{}}
	keys := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.Errorf(k, path, "expected a key, found %s", Describe(k))
			continue
		}
		field := Join(path, k.Value)
		if first, dup := keys[k.Value]; dup {
			p.Errorf(k, field, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		keys[k.Value] = k
		if !slices.Contains(known, k.Value) {
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := Closest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
				m.typos[s] = true
			}
			p.Errorf(k, field, "%s", msg)
			continue
		}
		m.vals[k.Value] = v
	}
	p.merge(m, merges, path, known)
	return m, true
}

// merge applies merge keys (<<: *anchor): they fill in what the mapping
// does not set itself.
func (p *Parser) merge(m *Mapping, merges []*yaml.Node, path string, known []string) {
	for _, mv := range merges {
		mv = Resolve(mv)
		srcs := []*yaml.Node{mv}
		if mv.Kind == yaml.SequenceNode {
			srcs = mv.Content
		}
		for _, src := range srcs {
			sub, ok := p.Mapping(src, path, known)
			if !ok {
				continue
			}
			for k, v := range sub.vals {
				if _, set := m.vals[k]; !set {
					m.vals[k] = v
				}
			}
		}
	}
}
