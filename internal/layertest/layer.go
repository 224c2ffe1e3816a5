// Package layertest holds the fixture layers that the fixture servers of
// every protocol serve (wfs/wfstest, ogcapi/ogcapitest) and that the tests,
// benchmarks and the feedserver command build: generated layers whose
// features are computed from their index (Parcels, Points), layers held in
// memory as rendered GeoJSON features (Features, LoadFeatureCollection,
// MarshalFeature), and COPY rows of a generated layer for the benchmarks'
// floor (AppendCopyRow). No protocol owns them: how a layer is answered
// (WFS GetFeature, GML 3.2, OGC API items) stays in each server.
package layertest

// Layer is a feature type a fixture server can serve. Features are rendered on demand,
// so a generated layer of millions of features costs no memory.
type Layer interface {
	// Len is the number of features.
	Len() int
	// AppendFeature appends feature i (0 ≤ i < Len) as a GeoJSON Feature object.
	AppendFeature(buf []byte, i int) []byte
}
