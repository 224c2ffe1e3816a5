package postgis

import (
	"context"
	"fmt"
)

// FeedsByOrigin returns the configured feeds (jurisdiction/feed) of each
// origin, for `ingestd breaker list`, which shows what an origin's verdict
// holds back.
func (s *Store) FeedsByOrigin(ctx context.Context) (map[string][]string, error) {
	rows, err := s.pool.Query(ctx, sqlQuery("FeedsByOrigin"))
	if err != nil {
		return nil, fmt.Errorf("postgis: feeds by origin: %w", err)
	}
	defer rows.Close()
	out := make(map[string][]string)
	for rows.Next() {
		var origin, feed string
		if err := rows.Scan(&origin, &feed); err != nil {
			return nil, fmt.Errorf("postgis: feeds by origin: %w", err)
		}
		out[origin] = append(out[origin], feed)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgis: feeds by origin: %w", err)
	}
	return out, nil
}
