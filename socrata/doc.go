// Package socrata is the socrata feed kind: one dataset of a Socrata open
// data portal, read through its SODA 2.1 API (/resource/<4x4>.json) in
// pages of $limit rows at $offset, ordered by the system field :id, and
// proven whole by the dataset's count(*) and the :id of every row. The
// dataset's metadata (/api/views/<4x4>.json) names its geometry column and
// types its columns, and its rowsUpdatedAt (or max(:updated_at)) with the
// count makes an unchanged dataset a cheap refresh: two small requests,
// no rows read. Package socratatest serves datasets as the documentation
// describes, and the ways portals misbehave.
package socrata
