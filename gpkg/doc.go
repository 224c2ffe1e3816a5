// Package gpkg reads the features of one layer of a GeoPackage file
// (OGC 12-128r18) as a stream of feature.Feature values, for the file
// kind: the layer's rows in fid order, each geometry blob (GeoPackage
// header + ISO WKB, see DecodeGeometry) into go-geom with the layer's
// SRID (its SRS's EPSG code, else its WKT as package crs identifies it), each row's other columns as the properties object, the fid
// as the feature id, and the columns' declared types as the layer's
// schema.Declared.
//
// The database is read through modernc.org/sqlite (SQLite translated to
// Go, no cgo), opened read-only and immutable: memory stays that of one
// row whatever the file's size, and each value's length is asked of
// SQLite before the value itself, so that a row past limits.value_bytes
// or limits.feature_bytes is refused without being loaded.
//
// Errors name the format ("gpkg: …") and, for a feature, its index and
// fid; the kind that reads the file names the feed.
package gpkg
