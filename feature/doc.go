// Package feature is what every source of features shares, whatever its
// kind (WFS, a plain GeoJSON URL, an ArcGIS REST layer, an OGC API –
// Features collection) and its encoding (GeoJSON, GML, Esri JSON): the
// Feature a decoder yields and the FeatureReader that yields it, the
// Repairs made to its text, the Limits that bound it and the *LimitError
// and *DecodeError a decoder fails with, CRS names and their axis order
// (ParseCRS), and the ReaderOption values every decoder takes
// (ReaderConfig).
//
// It imports no ingestd package, so that the decoders (packages geojson,
// gml and esrijson), the kinds' packages and the store depend on it alone.
package feature
