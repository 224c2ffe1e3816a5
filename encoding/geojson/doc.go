// Package geojson streams the features of a GeoJSON document: a
// FeatureCollection (RFC 7946, with the legacy 2008 "crs" member and the
// WFS paging members numberMatched and numberReturned) or a lone Feature.
//
// Memory grows with the largest feature, never with the number of features:
// Reader splits one feature at a time out of the stream (jsonscan.go) and
// decodes its geometry with a fast path for the common shapes, handing the
// rest to go-geom (geometry.go). It imports only package feature, go-geom
// and the standard library, so that every protocol can use it.
package geojson
