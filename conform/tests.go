package conform

import (
	"fmt"
	"slices"
)

// Test is one of OpenAddresses' acceptance tests of a conform: a feature's
// properties and some of the columns they must map to.
type Test struct {
	Description string            `yaml:"description" json:"description"`
	Inputs      map[string]any    `yaml:"inputs" json:"inputs"`
	Expected    map[string]string `yaml:"expected" json:"expected"`
	// Line is the test's line in its YAML document, 0 when unknown; the
	// caller sets it.
	Line int `yaml:"-" json:"-"`
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
// does, and returns every failure (none when all pass): one per column that
// differs, in column order, or one for a test whose inputs the conform
// cannot map. An expected column the layer does not have fails with got "".
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
