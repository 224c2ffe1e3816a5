// Package file fetches feeds of kind "file": a downloadable file at a
// URL (a zipped Shapefile, a GeoPackage, FlatGeobuf, GeoJSON, GML or CSV), as
// counties publish them on their websites and open-data hubs.
//
// The file is downloaded in one request through package httpcall (the
// origin's breaker and pacing, limits.body_bytes, redirects, redaction;
// its ETag and Last-Modified make the next poll conditional, and a 304 is
// not_modified) into a temporary file on disk, because a zip's directory
// is at its end and a GeoPackage is a database. The file is then read as a
// stream of features by its format's reader (the Formats table: a name, a
// sniff of its first bytes and name, an Open over a local path) and
// removed, on success, failure or panic alike. Memory is bounded by a
// feature, not by the file.
//
// A zip is read in place: its entries must uncompress, all together, to
// at most limits.body_bytes (a zip bomb fails by name), a Shapefile's parts
// are streamed from it side by side, in a folder or not, and a zip of
// several layers needs the feed's layer: (without it, the error lists
// them). A zip that holds one GeoPackage, FlatGeobuf, GeoJSON, GML or CSV file
// and no Shapefile is that file, copied out within the same bound.
//
// Its errors name the kind once: "file: …".
package file
