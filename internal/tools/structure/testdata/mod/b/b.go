package b

import (
	"errors"

	"example.com/mod/c"
)

// ErrX is declared here and in c.
var ErrX = errors.New("x")

// B reads a page: this costs 74 MB of heap.
func B() error { return c.C() }

// chunk is 64 KiB: 12 ms a page (BenchmarkB).
const chunk = 64 << 10

// limit keeps a 2 GB string out of memory.
const limit = 1
