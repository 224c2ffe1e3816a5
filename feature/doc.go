// Package feature is what every source of features shares, whatever its
// protocol (WFS, a plain GeoJSON URL, and the next kinds) and its encoding:
// the Feature a decoder yields and the FeatureReader that yields it, the
// Repairs made to its text, the Limits that bound it and the *LimitError
// and *DecodeError a decoder fails with, CRS names and their axis order
// (ParseSRSName), and the ReaderOptions every decoder takes.
//
// It imports no ingestd protocol package, so that the decoders (packages
// geojson and gml) and the store depend on it alone.
package feature
