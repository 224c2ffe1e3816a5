// Package wfs is the feed kind wfs: a WFS 2.0 or 1.1 GetFeature layer. It
// owns the kind's settings (Settings: version and output format, parsed
// from the config by Config), builds its requests, pages through a layer,
// classifies every response before trusting its body, and streams the
// features out of it. It also reads GetCapabilities to settle a version,
// format or CRS left to negotiation (Prepare, Negotiate) and
// DescribeFeatureType for the layer's declared schema (Describe). A layer
// fetched in one request sends the validators of the last applied snapshot
// back (conditional GET); a 304 is a fetch that is not modified. The
// geojson, arcgis and ogcapi kinds are packages of their own (geojson,
// arcgis, ogcapi).
//
// Every page request is one logical call to the breaker of its origin
// (breaker.Registry.Do), made through package httpcall, which holds what
// every protocol shares (attempts, timeouts, body limits, gzip, redirects,
// redaction); this package supplies the requests, the paging and the WFS
// rules of classification (OGC exception codes). The call includes reading the body, because a body cut
// short, an OGC exception report or an HTML error page sent with status 200 is
// that call's outcome, not an empty layer. See ClassifyResponse for the rule.
//
// The body's first bytes pick the decoder, whatever the Content-Type says:
// package geojson for JSON, package gml for a wfs:/gml:FeatureCollection
// (GML 2.1.2, 3.1.1, 3.2). The decoders, the Feature they yield and the
// limits they enforce live outside this package (see package feature), so
// that other protocols read the same encodings without importing wfs.
//
// A fetch is complete or it is an error: a total that does not match the
// server's numberMatched, a short page, or an id on two pages is an
// *source.IncompleteError, so that a caller never applies part of a layer as if it
// were all of it.
package wfs
