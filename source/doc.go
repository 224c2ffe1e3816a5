// Package source is the contract between feeds and the package of each
// feed kind (wfs, and the next ones): the Layer a feed describes, the Page
// a fetch hands over with its features (PageFunc) and the FetchStats it
// sums up to. A kind's package implements fetching against these types, so
// that it imports neither feeds nor any other kind's package.
package source
