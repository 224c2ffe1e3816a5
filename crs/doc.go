// Package crs identifies the CRS of a layer whose file describes it in
// WKT without an EPSG code: a Shapefile's .prj as ArcGIS and GDAL write
// it (ESRI's WKT 1, "NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet"),
// a GeoPackage's or FlatGeobuf's WKT of a CRS it names no code for.
//
// Identify tries, in order, the WKT's own authority code, its name among
// the names PROJ's database gives EPSG and ESRI CRSs (ESRI's names of EPSG
// CRSs among them) when that CRS's definition agrees with the WKT's, and
// the WKT's projection, parameters, datum and unit against every EPSG and
// ESRI definition on that datum, within a millimetre on the ground. Its
// Result says which way it identified the CRS, for the poll's record.
//
// The table it matches against (proj.tsv.gz) is generated from PROJ's
// proj.db by cmd gen (go generate ./crs) and embedded: the readers
// identify a CRS without a database round trip, and `ingestd discover`
// and the tests the same way. The data is PROJ's, under the MIT-style
// licence in PROJ-DATA-LICENSE; see docs/decisions/0101-crs-from-proj-db.md.
package crs
