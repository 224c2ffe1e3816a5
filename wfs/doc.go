// Package wfs talks to the servers ingestd mirrors: it builds WFS GetFeature
// and plain GeoJSON requests, pages through a layer, classifies every response
// before trusting its body, and streams the features out of it.
//
// Every page request is one logical call to the breaker of its origin
// (breaker.Registry.Do). The call includes reading the body, because a body cut
// short, an OGC exception report or an HTML error page sent with status 200 is
// that call's outcome, not an empty layer. See ClassifyResponse for the rule.
//
// Decoders stream: memory grows with the largest feature, never with the
// number of features in a page. The body's first bytes pick the decoder,
// whatever the Content-Type says: GeoJSONReader for JSON, GMLReader for a
// wfs:/gml:FeatureCollection (GML 2.1.2, 3.1.1, 3.2). Both name CRSs with
// ParseSRSName; GML in the URN/URI form of a latitude-first geographic CRS
// is swapped to x/y, and geometries carry the SRID the document declared.
//
// A fetch is complete or it is an error: a total that does not match the
// server's numberMatched, a short page, or an id on two pages is an
// *IncompleteError, so that a caller never applies part of a layer as if it
// were all of it.
package wfs
