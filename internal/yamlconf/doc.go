// Package yamlconf walks a YAML document's node tree for a config loader
// that wants every problem positioned: errors and warnings carry the file,
// line, column and field path ("jurisdictions[1].feeds[0].url"), unknown
// keys get a "did you mean" hint, presence is told from a zero value, and
// ${VAR} is expanded in string values after parsing, without shifting
// positions and without quoting an expanded value in any message.
//
// It knows nothing of ingestd's settings: package feeds walks the common
// feed model with it, and each feed kind's package (wfs, arcgis, ogcapi,
// geojson) reads its own settings with it, so that a kind need not
// import feeds.
package yamlconf
