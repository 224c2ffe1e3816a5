package conform

import (
	"maps"
	"slices"
	"testing"
)

// TestFunctionNamesMatchCompilers holds functionNames, which the errors
// list, to the functions funcCompilers compiles.
func TestFunctionNamesMatchCompilers(t *testing.T) {
	compiled := slices.Sorted(maps.Keys(funcCompilers))
	if !slices.Equal(compiled, functionNames) {
		t.Errorf("funcCompilers has %v, functionNames %v", compiled, functionNames)
	}
}
