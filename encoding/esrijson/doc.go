// Package esrijson streams the features of an ArcGIS REST query response in
// Esri JSON (f=json) into go-geom features, bounded by feature.Limits, like
// package geojson does for GeoJSON.
//
// Esri JSON differs from GeoJSON in ways a faithful reader must honour:
// geometries carry no type (the response's geometryType, or the members
// present, say which it is); polygon rings are not grouped, their winding
// says which are exteriors (clockwise) and which are holes
// (counter-clockwise), and a hole belongs to the exterior that contains it;
// a third ordinate is M, not Z, when the layer has M values and no Z; dates
// are epoch milliseconds, which this package writes as ISO-8601 UTC
// timestamps; and true curves (curveRings, curvePaths, arc segments) exist,
// which this package refuses by name rather than flattens.
package esrijson
