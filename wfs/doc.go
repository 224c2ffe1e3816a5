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
// number of features in a page.
package wfs
