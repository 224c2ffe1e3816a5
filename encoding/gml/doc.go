// Package gml streams the features of a WFS GetFeature response in GML
// (2.1.2, 3.1.1, 3.2) into feature.Features with go-geom geometries.
//
// Memory grows with the largest feature, never with the number of features.
// UTF-8 documents are tokenized by a small XML tokenizer of its own
// (xmltok.go), which costs a fraction of encoding/xml's time; others go
// through encoding/xml. CRSs are named with feature.ParseSRSName; positions
// in the URN/URI form of a latitude-first geographic CRS are swapped to x/y,
// and geometries carry the SRID the document declared. It imports only
// package feature, go-geom and the standard library.
package gml
