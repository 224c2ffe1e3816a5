package postgis

import (
	"context"
	"fmt"
)

// Freshness is one feed's row of feed_freshness as `ingestd status` shows
// it.
type Freshness struct {
	// Feed is "jurisdiction/feed".
	Feed string
	// Status is feed_freshness.status: fresh, stale, failing, never,
	// parked, held or removed.
	Status string
	// Features is the feed's feature count (0 if never applied).
	Features int64
	// Age is the time since the last success, formatted by the database
	// as "3d 04:05:06", or "-" if the feed never succeeded.
	Age string
	// Why is the hold reason of a held feed and the last error of any
	// other ("" if none). It is stored text: redact it before showing it.
	Why string
}

// Freshness returns every feed's freshness, the feeds that are not fresh
// first (grouped by status), then the fresh ones. It reads the database, so
// it sees the whole cluster, not one process.
func (s *Store) Freshness(ctx context.Context) ([]Freshness, error) {
	rows, err := s.pool.Query(ctx, sqlQuery("Freshness"))
	if err != nil {
		return nil, fmt.Errorf("postgis: freshness: %w", err)
	}
	defer rows.Close()
	var out []Freshness
	for rows.Next() {
		var f Freshness
		if err := rows.Scan(&f.Feed, &f.Status, &f.Features, &f.Age, &f.Why); err != nil {
			return nil, fmt.Errorf("postgis: freshness: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgis: freshness: %w", err)
	}
	return out, nil
}
