package conform

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Test is one of OpenAddresses' acceptance tests of a conform: a feature's
// properties and some of the columns they must map to.
type Test struct {
	Description string            `yaml:"description" json:"description"`
	Inputs      map[string]any    `yaml:"inputs" json:"inputs"`
	Expected    map[string]string `yaml:"expected" json:"expected"`
	// Line is the test's line in its YAML document, 0 when unknown.
	Line int `yaml:"-" json:"-"`
}

// UnmarshalYAML reads a Test and notes its line, for validate's messages.
func (t *Test) UnmarshalYAML(n *yaml.Node) error {
	type plain Test
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = Test(p)
	t.Line = n.Line
	return nil
}

// Failure is one way a Test failed: a column that came out other than
// expected, or the conform's error on the inputs.
type Failure struct {
	Index       int // the test's position in the list, from 0
	Description string
	Line        int
	Column      string // empty when Err is set
	Got, Want   string
	Err         error
}

// String is the failure as validate prints it after the feed's name:
// test N "description": column: got "…", want "…", counting from 1.
func (f Failure) String() string {
	name := fmt.Sprintf("test %d", f.Index+1)
	if f.Description != "" {
		name += fmt.Sprintf(" %q", f.Description)
	}
	if f.Err != nil {
		return fmt.Sprintf("%s: %s", name, f.Err)
	}
	return fmt.Sprintf("%s: %s: got %q, want %q", name, f.Column, f.Got, f.Want)
}

// RunTests runs tests against c, as batch-machine's check_source_tests
// does, and returns every failure (none when all pass) where batch-machine
// stops at the first: one per column that differs, in column order, or one
// for a test whose inputs the conform cannot map. An expected column the
// layer does not have fails with got "".
func RunTests(c *Conform, tests []Test) []Failure {
	var out []Failure
	for i, t := range tests {
		got, err := c.Apply(t.Inputs)
		if err != nil {
			out = append(out, Failure{Index: i, Description: t.Description, Line: t.Line, Err: err})
			continue
		}
		cols := make([]string, 0, len(t.Expected))
		for k := range t.Expected {
			cols = append(cols, k)
		}
		slices.SortFunc(cols, func(a, b string) int {
			ia, ib := slices.Index(c.columns, a), slices.Index(c.columns, b)
			if ia < 0 {
				ia = len(c.columns)
			}
			if ib < 0 {
				ib = len(c.columns)
			}
			if ia != ib {
				return ia - ib
			}
			if a < b {
				return -1
			}
			if a > b {
				return 1
			}
			return 0
		})
		for _, col := range cols {
			want := t.Expected[col]
			g, has := got[col]
			if !has || g != want {
				out = append(out, Failure{Index: i, Description: t.Description, Line: t.Line, Column: col, Got: g, Want: want})
			}
		}
	}
	return out
}
