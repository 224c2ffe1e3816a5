// Package flatgeobuf reads a FlatGeobuf file (flatgeobuf.org, version 3)
// as a stream of feature.Feature values, for the file kind: the magic
// bytes, the header (a FlatBuffers table: geometry type, dimensions,
// columns, feature count, index node size, CRS), the packed R-tree
// index skipped by its computed size, then each size-prefixed feature
// decoded in turn, so that memory is one feature whatever the file's
// size. The header's columns are the layer's schema.Declared and its CRS
// (its EPSG code, else its WKT as package crs identifies it) the SRID of
// every geometry.
//
// FlatGeobuf's own Go module is not served here, and it reads a whole
// file into memory (or maps it); this package reads the format from its
// schema (header.fbs, feature.fbs) through github.com/google/flatbuffers'
// table accessors. FlatBuffers' Go runtime has no verifier, so every
// vector's length is checked against the feature's bytes before anything
// is allocated for it, and a malformed table (an offset out of range)
// fails the feature instead of the process.
//
// A file whose header counts its features must hold exactly that many: a
// file cut short is an error, never a shorter layer.
package flatgeobuf
