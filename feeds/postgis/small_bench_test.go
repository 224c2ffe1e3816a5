package postgis_test

import (
	"context"
	"testing"

	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkSmallPoll is one whole poll (begin, one page of 25 features,
// apply) of an unchanged small layer: the unit of work of thousands of
// small feeds.
func BenchmarkSmallPoll(b *testing.B) {
	pool := pgtest.Pool(b)
	store := postgis.New(pool)
	ctx := context.Background()
	feed := feedInfo("small")
	layer := generatePolygons(25)
	for b.Loop() {
		id, err := store.BeginPoll(ctx, feed)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := store.StagePage(ctx, id, 0, reader(layer...)); err != nil {
			b.Fatal(err)
		}
		if _, err := store.Apply(ctx, id, feed); err != nil {
			b.Fatal(err)
		}
	}
}
