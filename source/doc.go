// Package source is the contract between feeds and the package of each
// feed kind (wfs, geojson, arcgis, ogcapi, socrata, file): the Layer a feed describes
// (the common fields, and the kind's own Settings), the Page a fetch hands over with its
// features (PageFunc), the FetchStats it sums up to (with the Validators of
// a conditional fetch), and Named, which leads a fetch's error with its
// kind's name once. A kind's package implements fetching against these
// types, so that it imports neither feeds nor any other kind's package.
package source
