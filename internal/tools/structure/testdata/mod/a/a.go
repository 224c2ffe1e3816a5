// Package a is the top of the chain a -> b -> c.
package a

import "example.com/mod/b"

// Base is a contract's type left open.
type Base any

// Other is the same, spelled the old way.
type Other = interface{}

// Closed is not open: it has a method.
type Closed interface{ M() }

// Incremental refresh (issue 27).
// A colour #ffcc00, an entity &#43;, epsg.xml#4326 and MapServer#6613 are no
// issue of this project.
func A() error { return b.B() }

// C is exported.
const C = 1

var x = 2
