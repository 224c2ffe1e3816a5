package postgis

import (
	"context"
	"fmt"
	"time"
)

// LastSuccess implements feeds.Store.
func (s *Store) LastSuccess(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, sqlQuery("LastSuccess"))
	if err != nil {
		return nil, fmt.Errorf("postgis: reading last successes: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var key string
		var t time.Time
		if err := rows.Scan(&key, &t); err != nil {
			return nil, fmt.Errorf("postgis: reading last successes: %w", err)
		}
		out[key] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgis: reading last successes: %w", err)
	}
	return out, nil
}
