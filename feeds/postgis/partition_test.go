package postgis_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// feedTableState tells whether the feed's layer table exists, is the
// feed's in the catalog of layers (feed_layers), and which indexes it has.
func (b *bundle) feedTableState(t *testing.T, feed feeds.FeedInfo) (exists, attached bool, indexes string) {
	t.Helper()
	err := b.pool.QueryRow(b.ctx, `
		SELECT c.oid IS NOT NULL,
			EXISTS (SELECT FROM feed_layers l WHERE l.jurisdiction = $1 AND l.feed = $2 AND to_regclass(l.layer) = c.oid),
			coalesce((SELECT string_agg(am.amname || ':' || pg_get_indexdef(x.indexrelid, 1, false)
					|| ':' || x.indisprimary, ',' ORDER BY am.amname)
				FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid JOIN pg_am am ON am.oid = ic.relam
				WHERE x.indrelid = c.oid), '')
		FROM (SELECT to_regclass(ingestd_feed_view($1, $2)) AS oid) n
		LEFT JOIN pg_class c ON c.oid = n.oid`, feed.Jurisdiction, feed.Feed).Scan(&exists, &attached, &indexes)
	if err != nil {
		t.Fatal(err)
	}
	return exists, attached, indexes
}

// forFirstLoadPaths runs test on a store: every first load is one
// CREATE TABLE … AS (oneCopyFirstLoad), taken again with each id's last
// row for a snapshot that repeats ids.
func forFirstLoadPaths(t *testing.T, test func(t *testing.T, b *bundle)) {
	t.Run("load", func(t *testing.T) {
		t.Parallel()
		test(t, setup(t))
	})
}

// TestFirstLoadBuildsFeedTable: the first snapshot of a feed lands in a
// table of its own, attached under features with the primary key and the
// GiST index built; the next polls diff against it in place.
func TestFirstLoadBuildsFeedTable(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, testFirstLoad)
}

func testFirstLoad(t *testing.T, b *bundle) {
	feed := feedInfo("first")
	if exists, _, _ := b.feedTableState(t, feed); exists {
		t.Fatal("feed table exists before any poll")
	}
	layer := generatePolygons(300)
	_, res := b.poll(t, feed, layer[:150], layer[150:])
	if res.Added != 300 || res.Features != 300 {
		t.Fatalf("first load: %+v", res)
	}
	exists, attached, indexes := b.feedTableState(t, feed)
	if !exists || !attached {
		t.Fatalf("after first load: exists %v attached %v", exists, attached)
	}
	if want := "btree:feature_id:true,gist:geom:false"; indexes != want {
		t.Errorf("indexes %q, want %q", indexes, want)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`, feed.Jurisdiction, feed.Feed); n != 300 {
		t.Errorf("features through the parent: %d, want 300", n)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_changes_expanded WHERE feed = $1 AND change = 'added'`, feed.Feed); n != 300 {
		t.Errorf("change log of the first load: %d added rows, want 300", n)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE feed = $1`, feed.Feed); n != 1 {
		t.Errorf("change log of the first load: %d rows stored, want one (loaded)", n)
	}
	// The GiST index serves the parent's spatial queries.
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = $1
		AND geom && ST_MakeEnvelope(-78.9, 35.7, -78.8999, 35.7001, 4326)`, feed.Feed); n == 0 {
		t.Error("no feature found by bounding box")
	}

	mod := append([]ft.Feature(nil), layer[1:]...)
	mod[0].Properties = props("pin", "changed")
	_, res = b.poll(t, feed, mod)
	if res.Added != 0 || res.Modified != 1 || res.Removed != 1 || res.Features != 299 {
		t.Errorf("second poll: %+v, want 1 modified and 1 removed of 299", res)
	}
}

// TestHeldFirstLoadLeavesNoTable: a first snapshot a guard holds creates
// nothing; accepting it builds the table then.
func TestHeldFirstLoadLeavesNoTable(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, testHeldFirstLoad)
}

func testHeldFirstLoad(t *testing.T, b *bundle) {
	feed := feedInfo("held-first")
	feed.Guard.BBox = &config.BBox{MinX: -79.0, MinY: 35.5, MaxX: -78.2, MaxY: 36.1}
	swapped := []ft.Feature{
		feature("a", point(35.78, -78.64, 4326), props("n", 1)),
		feature("b", point(35.90, -78.70, 4326), props("n", 2)),
	}
	_, held := b.pollHeld(t, feed, swapped)
	if !strings.HasPrefix(held.Reason, "extent: 2 of 2 located features lie outside the jurisdiction's bbox [-79, 35.5, -78.2, 36.1]") {
		t.Errorf("reason %q", held.Reason)
	}
	if exists, _, _ := b.feedTableState(t, feed); exists {
		t.Fatal("a held first load left the feed's table behind")
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = $1`, feed.Feed); n != 0 {
		t.Fatalf("held first load wrote %d features", n)
	}
	res, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed)
	if err != nil || res.Added != 2 {
		t.Fatalf("AcceptHeld = %+v, %v", res, err)
	}
	if exists, attached, _ := b.feedTableState(t, feed); !exists || !attached {
		t.Fatalf("after accept: exists %v attached %v", exists, attached)
	}
}

// TestConcurrentFirstLoadsOfNewJurisdiction: feeds of a jurisdiction that has
// no partition yet load at once; one creates the jurisdiction's partition,
// every feed gets its table.
func TestConcurrentFirstLoadsOfNewJurisdiction(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, testConcurrentFirstLoads)
}

func testConcurrentFirstLoads(t *testing.T, b *bundle) {
	layer := generatePolygons(200)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		feed := feedInfo(fmt.Sprintf("layer-%d", i))
		feed.Jurisdiction = "new county"
		wg.Go(func() {
			id, err := b.store.BeginPoll(b.ctx, feed)
			if err == nil {
				_, err = b.store.StagePage(b.ctx, id, 0, reader(layer...))
			}
			if err == nil {
				_, err = b.store.Apply(b.ctx, id, feed)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE jurisdiction = 'new county'`); n != 6*200 {
		t.Errorf("%d features, want %d", n, 6*200)
	}
	if n := b.count(t, `SELECT count(*) FROM feed_layers l JOIN pg_class c ON c.oid = to_regclass(l.layer)
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE l.jurisdiction = 'new county' AND n.nspname = 'new county'`); n != 6 {
		t.Errorf("the jurisdiction's schema has %d layer tables, want 6", n)
	}
}

// TestFeedTableNamesAreQuoted: jurisdiction and feed ids with quotes, spaces
// and non-ASCII letters get a table each (names from the SQL functions,
// values quoted in the DDL), and two ids whose slugs collide do not share
// one.
func TestFeedTableNamesAreQuoted(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, testFeedTableNames)
}

func testFeedTableNames(t *testing.T, b *bundle) {
	for _, name := range [][2]string{{"O'Brien County", "zoning \"2024\""}, {"Ñuñoa", "parcelas"}, {"Ñuñoa", "parcelaś"}} {
		feed := feedInfo(name[1])
		feed.Jurisdiction = name[0]
		_, res := b.poll(t, feed, generatePolygons(20))
		if res.Added != 20 {
			t.Fatalf("%s/%s: %+v", name[0], name[1], res)
		}
		if exists, attached, _ := b.feedTableState(t, feed); !exists || !attached {
			t.Errorf("%s/%s: table exists %v, attached %v", name[0], name[1], exists, attached)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`, name[0], name[1]); n != 20 {
			t.Errorf("%s/%s: %d features, want 20", name[0], name[1], n)
		}
	}
}

// TestPagesStagedWithoutIDCounts: pages staged by a version that did not
// count their ids (named_ids NULL) are checked by grouping the staged rows.
func TestPagesStagedWithoutIDCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	postgis.SetSmallSnapshot(b.store, 0)
	feed := feedInfo("old-pages")
	layer := generatePolygons(30)
	id := b.stage(t, feed, layer[:20], layer[15:]) // ids 15-19 on both pages
	if _, err := b.pool.Exec(b.ctx, `UPDATE staged_pages SET named_ids = NULL WHERE poll_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	b.applyIncomplete(t, id, feed, "5 feature ids appear on more than one page")
}

// TestSplitPagesOfAnUnchangedSnapshot: a snapshot that holds exactly the
// feed's features, but one of them on two pages, is refused, not taken as
// unchanged: the paging order was unstable, so features may be missing.
func TestSplitPagesOfAnUnchangedSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("split-same")
	layer := generatePolygons(5)
	b.poll(t, feed, layer)
	b.applyIncomplete(t, b.stage(t, feed, layer[:3], layer[2:]), feed, "1 feature ids appear on more than one page")
}

// TestLayerTablesFilledWhole: a feed's layer table fills its pages
// (fillfactor 100): the room 0005 left for HOT updates cost a tenth of
// the table, which the one copy's storage goal cannot carry (decision
// 0200).
func TestLayerTablesFilledWhole(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("room")
		b.poll(t, feed, generatePolygons(300))
		var options string
		b.scalar(t, &options, `SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = to_regclass(ingestd_feed_view($1, $2))`,
			feed.Jurisdiction, feed.Feed)
		if options != "fillfactor=100" {
			t.Errorf("the layer table has options %q, want fillfactor=100", options)
		}
	})
}
