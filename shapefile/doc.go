// Package shapefile reads an Esri Shapefile (ESRI Shapefile Technical
// Description, July 1998) as a stream of features: the .shp and .dbf
// records read side by side, one record of each at a time, so that memory
// is bounded by a feature whatever the file's size. The .shx is read for
// its record count only (a completeness check), the .prj names the CRS
// (package crs identifies it) and the .cpg, else the DBF's language driver id, the
// encoding of the DBF's text.
//
// Geometries come as go-geom values the way GDAL's Shapefile driver reads
// them: a polygon record's clockwise rings are shells and its
// counter-clockwise rings holes of the shell that contains them (one shell:
// a Polygon, several: a MultiPolygon); a polyline of one part is a
// LineString, of several a MultiLineString; Z types are XYZ, M values are
// dropped. DBF field types map to the declared schema as GDAL maps them to
// OGR types: N/F without decimals and narrower than 10 digits Integer, than
// 19 Integer64 (both bigint), else Real (double precision); C text, D
// date, L boolean.
//
// The reader checks the file is whole: the .shp's header length is the
// bytes it holds, the .shx's record count and the .dbf's are the .shp's.
package shapefile
