package postgis_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// planLog is a pool whose sessions send the plan of every statement they
// run to the client (auto_explain at level notice), and the plans received.
type planLog struct {
	mu    sync.Mutex
	plans []string
}

func (p *planLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.plans
	p.plans = nil
	return out
}

func explainedPool(t *testing.T) (*pgxpool.Pool, *planLog) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	log := &planLog{}
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "Query Text:") {
			log.mu.Lock()
			log.plans = append(log.plans, n.Message)
			log.mu.Unlock()
		}
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for _, stmt := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_level = notice"} {
			if _, err := c.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, log
}

// seqScans are the plans that read all of one of tables by a sequential
// scan.
func seqScans(plans []string, tables ...string) []string {
	var out []string
	for _, p := range plans {
		for _, table := range tables {
			if strings.Contains(p, "Seq Scan on "+table) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// An apply reads its own poll's staged rows, never all of staging. In a
// fleet, staging holds every other poll in flight (a large layer's for
// minutes while it is fetched, parked or applied) and the dead rows of
// those applied since; a scan of all of it for each of thousands of small
// first loads is what a fleet's database spends its reads on (decision
// 0227).
func TestApplyReadsOnlyItsPollsStagedRows(t *testing.T) {
	t.Parallel()
	pool, plans := explainedPool(t)
	b := &bundle{ctx: t.Context(), pool: pool, store: postgis.New(pool)}
	// Another feed's large poll, staged and not applied yet.
	b.stage(t, feedInfo("big"), generatePolygons(20000))

	small := generatePolygons(50)
	plans.take()
	if _, res := b.poll(t, feedInfo("small"), small); res.Added != 50 {
		t.Fatalf("first load: %+v", res)
	}
	for _, p := range seqScans(plans.take(), "ingestd_staged") {
		t.Errorf("the first load scanned all of staging:\n%s", p)
	}

	// A refresh that changes a feature, and one that changes nothing.
	changed := append([]ft.Feature(nil), small...)
	changed[0] = feature(changed[0].ID, changed[0].Geometry, props("pin", "changed"))
	for _, snap := range [][]ft.Feature{changed, changed} {
		if _, res := b.poll(t, feedInfo("small"), snap); res.Features != 50 {
			t.Fatalf("refresh: %+v", res)
		}
		for _, p := range seqScans(plans.take(), "ingestd_staged") {
			t.Errorf("a refresh scanned all of staging:\n%s", p)
		}
	}
}

// An apply looks its layer up in the catalogs by key. Its bulk statements
// are planned without nested loops (ApplyPlanner); a catalog lookup planned
// so hashes all of pg_attribute and pg_class, in parallel workers, for every
// apply: at 5,000 feeds a quarter of what a fleet's database was seen
// running was such a lookup, waiting on its workers.
func TestApplyLooksUpItsLayerByKey(t *testing.T) {
	t.Parallel()
	pool, plans := explainedPool(t)
	b := &bundle{ctx: t.Context(), pool: pool, store: postgis.New(pool)}
	small := generatePolygons(50)
	changed := append([]ft.Feature(nil), small...)
	changed[0] = feature(changed[0].ID, changed[0].Geometry, props("pin", "changed"))
	plans.take()
	for i, snap := range [][]ft.Feature{small, changed, changed} {
		if _, res := b.poll(t, feedInfo("lookups"), snap); res.Features != 50 {
			t.Fatalf("poll %d: %+v", i, res)
		}
		for _, p := range seqScans(plans.take(), "pg_attribute", "pg_class", "pg_namespace") {
			t.Errorf("poll %d scanned a whole catalog:\n%s", i, p)
		}
	}
}
