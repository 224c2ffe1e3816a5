package wfs

import "github.com/ingestd/ingestd/feature"

// Names that moved to package feature, kept so that feeds/postgis compiles
// while it moves over.

// Feature is feature.Feature.
//
// Deprecated: use feature.Feature; kept while feeds/postgis moves over.
type Feature = feature.Feature

// FeatureReader is feature.FeatureReader.
//
// Deprecated: use feature.FeatureReader; kept while feeds/postgis moves over.
type FeatureReader = feature.FeatureReader

// Limits is feature.Limits.
//
// Deprecated: use feature.Limits; kept while feeds/postgis moves over.
type Limits = feature.Limits

// Repairs made to a feature's text; see feature.Repairs.
//
// Deprecated: use feature.RepairedUTF8 and feature.RepairedSurrogate; kept
// while feeds/postgis moves over.
const (
	RepairedUTF8      = feature.RepairedUTF8
	RepairedSurrogate = feature.RepairedSurrogate
)

// DefaultIDBytes is feature.DefaultIDBytes.
//
// Deprecated: use feature.DefaultIDBytes; kept while feeds/postgis moves over.
const DefaultIDBytes = feature.DefaultIDBytes
