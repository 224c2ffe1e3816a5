package postgis

import (
	"context"
	"fmt"
)

// KnownSRID reports whether PostGIS knows srid (it is in spatial_ref_sys),
// so that geometries in it can be transformed to EPSG:4326 at the apply.
// A poll hands it to its kind (source.Layer.KnownSRID), which names a CRS
// PostGIS does not know before anything is staged, instead of the apply
// failing with PostGIS's "Invalid reserved SRID" or "Cannot find SRID".
func (s *Store) KnownSRID(ctx context.Context, srid int) (bool, error) {
	var known bool
	if err := s.pool.QueryRow(ctx, sqlQuery("KnownSRID"), srid).Scan(&known); err != nil {
		return false, fmt.Errorf("postgis: looking up srid %d in spatial_ref_sys: %w", srid, err)
	}
	return known, nil
}

// RecordCRS records the CRS a succeeded poll read its layer in and how it
// was identified (polls.crs, polls.crs_identified_by).
func (s *Store) RecordCRS(ctx context.Context, pollID int64, code, by string) error {
	if _, err := s.pool.Exec(ctx, sqlQuery("RecordCRS"), pollID, code, by); err != nil {
		return fmt.Errorf("postgis: record the CRS of poll %d: %w", pollID, err)
	}
	return nil
}
