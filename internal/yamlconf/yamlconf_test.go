package yamlconf

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"A": "x", "EMPTY": ""}[name]
		return v, ok
	}
	for in, want := range map[string]string{
		"plain":         "plain",
		"${A}":          "x",
		"a${A}b${A}c":   "axbxc",
		"$${A}":         "${A}",
		"$$${A}":        "$${A}", // "$" then the escape "$${"
		"$A $ {A} $$":   "$A $ {A} $$",
		"[${EMPTY}]":    "[]",
		"${A}$${EMPTY}": "x${EMPTY}",
	} {
		got, err := ExpandEnv(in, env)
		if err != nil || got != want {
			t.Errorf("ExpandEnv(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${NOPE}", "${A", "${}", "${A-B}"} {
		if _, err := ExpandEnv(in, env); err == nil {
			t.Errorf("ExpandEnv(%q): want an error", in)
		}
	}
}

// A misspelt key is reported once, with the hint, at its line and column,
// and a required key it stands for is not also reported missing.
func TestMappingTypoHint(t *testing.T) {
	t.Parallel()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: 1\ntype_nme: x\n"), &doc); err != nil {
		t.Fatal(err)
	}
	p := &Parser{File: "f.yaml"}
	m, ok := p.Mapping(doc.Content[0], "feeds[0]", []string{"a", "type_name"})
	if !ok {
		t.Fatal("not a mapping")
	}
	if m.Missing("type_name") || !m.Typo("type_name") {
		t.Errorf("Missing = %v, Typo = %v; want the typo to explain the absence", m.Missing("type_name"), m.Typo("type_name"))
	}
	errs := p.Errors()
	want := `f.yaml:2:1: feeds[0].type_nme: unknown key "type_nme" (did you mean type_name?)`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %v, want %s", errs, want)
	}
	if v, _, ok := p.Integer(m, "a", "feeds[0]"); !ok || v != 1 {
		t.Errorf("Integer = %d, %v", v, ok)
	}
	if _, err := ParseDuration("30"); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("ParseDuration(30) = %v, want a missing unit", err)
	}
}
