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

// read keeps a 2 GB string out of memory.
func read() {}

// idChunk is how many ids one chunk holds (512 KiB).
const idChunk = 1 << 16

const limit = 1 << 30 // 1 GiB

// size reads "64MiB" or "1 GB": a syntax, no figure.
func size() {}

// wrapped keeps a string of any size, even a
// 2 GB one, out of memory.
func wrapped() {}
