// Package filegdb reads the layers of an Esri File Geodatabase (a .gdb
// folder, as counties publish it zipped) in pure Go, as GDAL's OpenFileGDB
// driver reads them, following the published description of the format
// (the .gdbtable / .gdbtablx layout, the field descriptors, the geometry
// blobs of varint-packed coordinates, the GDB_Items catalog).
//
// The folder is an io/fs.FS, so that a directory (os.DirFS) and a zip
// (*zip.Reader) share one path; Find locates the *.gdb folder inside.
// Open reads the system catalog (a00000001.gdbtable: table names and
// numbers) and GDB_Items (each layer's definition: its CRS's WKID and
// LatestWKID, which name its EPSG code, else its WKT, identified
// by package crs as a Shapefile's .prj is). GDB.Reader opens one layer.
//
// Rows are read one at a time through the .gdbtablx's offset of each row,
// never by loading the table: memory is bounded by a row
// (limits.feature_bytes) whatever the table's size. A file the fs.FS
// cannot read at offsets (a deflated zip entry) is first copied to a
// temporary file, bounded by limits.body_bytes.
//
// Attributes become the feature's properties object: integers and reals
// as numbers (Float32 in its shortest float32 form), text as strings,
// date-times as RFC 3339 UTC instants to the millisecond, dates as
// YYYY-MM-DD, GUIDs as {XXXXXXXX-…}, blobs as base64; a raster field is
// skipped with a warning. The OBJECTID is the feature id unless
// Options.IDProperty names a field. Geometries come as go-geom values of
// the types GDAL gives them: Point, MultiPoint, MultiLineString and
// MultiPolygon (clockwise rings are shells, counter-clockwise ones holes of
// the shell containing them); Z is kept, M dropped as the Shapefile
// reader drops it. Circular arcs are densified as GDAL densifies them
// (steps of about 4 degrees, at least 7 and an odd number per arc), so
// that a curved lot line has GDAL's vertices; Bézier curves, elliptic
// arcs and multipatches are refused by name (ErrCurves, ErrMultiPatch).
//
// The format is hostile input: every count and offset is checked against
// the bytes that hold it before anything is allocated for it, a varint
// ends within 64 bits, a geometry has at most MaxPoints points, a value
// at most limits.value_bytes; each failure is an *Error naming the table
// and the row (or a *feature.LimitError saying which limit), and a table
// whose index leads to more or fewer rows than its header counts fails at
// its end, never ending in io.EOF as if it were whole.
package filegdb
