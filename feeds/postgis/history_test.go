package postgis_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/testwait"
)

// layerSim is a layer that changes at random between polls: features
// added (some of them ids removed earlier), removed, and modified in their
// properties only, their geometry only, or both.
type layerSim struct {
	rng      *rand.Rand
	next     int
	features map[string]simFeature
	removed  []string
}

type simFeature struct {
	x, y, d float64
	owner   string
	value   int
}

func newLayerSim(seed uint64, n int) *layerSim {
	l := &layerSim{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), features: map[string]simFeature{}}
	for range n {
		l.add()
	}
	return l
}

func (l *layerSim) add() {
	id := fmt.Sprintf("f.%d", l.next)
	if len(l.removed) > 0 && l.rng.IntN(4) == 0 {
		id, l.removed = l.removed[0], l.removed[1:] // an id comes back
	} else {
		l.next++
	}
	l.features[id] = simFeature{x: -78.9 + l.rng.Float64()*0.1, y: 35.7 + l.rng.Float64()*0.1, d: 1e-4,
		owner: fmt.Sprintf("owner %d", l.rng.IntN(1000)), value: l.rng.IntN(1e6)}
}

// step changes the layer: adds, removes and modifies a few features each
// (none at all in one poll of five, which is then unchanged).
func (l *layerSim) step() {
	if l.rng.IntN(5) == 0 {
		return
	}
	ids := l.ids()
	for range l.rng.IntN(4) {
		l.add()
	}
	for _, i := range l.rng.Perm(len(ids))[:l.rng.IntN(4)] {
		delete(l.features, ids[i])
		l.removed = append(l.removed, ids[i])
	}
	for range 1 + l.rng.IntN(6) {
		id := ids[l.rng.IntN(len(ids))]
		f, ok := l.features[id]
		if !ok {
			continue
		}
		switch l.rng.IntN(3) {
		case 0: // properties only
			f.owner = fmt.Sprintf("owner %d", l.rng.IntN(1000))
		case 1: // geometry only
			f.x += 1e-3
		default: // both
			f.value++
			f.y += 1e-3
		}
		l.features[id] = f
	}
}

func (l *layerSim) ids() []string {
	var ids []string
	for id := range l.features {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (l *layerSim) snapshot() []ft.Feature {
	var out []ft.Feature
	for _, id := range l.ids() {
		f := l.features[id]
		out = append(out, feature(id, square(f.x, f.y, f.d), props("owner", f.owner, "value", f.value)))
	}
	return out
}

// layerDigest digests a layer's rows (feature_id, properties, geom) in id
// order: {{rows}} is a query yielding them.
const layerDigest = `SELECT count(*)::int, coalesce(md5(string_agg(feature_id || '|' || properties::text || '|' ||
	coalesce(encode(ST_AsEWKB(geom), 'hex'), ''), E'\n' ORDER BY feature_id)), '')
	FROM (%s) l`

func (b *bundle) digest(t *testing.T, rows string, args ...any) (int, string) {
	t.Helper()
	var n int
	var d string
	if err := b.pool.QueryRow(b.ctx, fmt.Sprintf(layerDigest, rows), args...).Scan(&n, &d); err != nil {
		t.Fatalf("digest of %s: %v", rows, err)
	}
	return n, d
}

// appliedPoll is one poll of historyRun: when it applied and the layer it
// left, digested.
type appliedPoll struct {
	id      int64
	at      time.Time
	count   int
	digest  string
	changes int
}

// historyRun polls a simulated layer 30 times into feed and returns each
// poll's applied time and digest of the feed's table right after it.
func historyRun(t *testing.T, b *bundle, feed feeds.FeedInfo, seed uint64) []appliedPoll {
	t.Helper()
	t.Logf("seed %d", seed)
	sim := newLayerSim(seed, 60)
	var polls []appliedPoll
	for i := range 30 {
		if i > 0 {
			sim.step()
		}
		snap := sim.snapshot()
		id, res := b.poll(t, feed, snap)
		p := appliedPoll{id: id, changes: res.Added + res.Modified + res.Removed}
		b.scalar(t, &p.at, `SELECT finished_at FROM polls WHERE id = $1`, id)
		p.count, p.digest = b.digest(t, `SELECT feature_id, properties, geom FROM features WHERE jurisdiction = $1 AND feed = $2`,
			feed.Jurisdiction, feed.Feed)
		if p.count != len(snap) {
			t.Fatalf("poll %d: the table holds %d features, the snapshot %d", i, p.count, len(snap))
		}
		polls = append(polls, p)
	}
	return polls
}

const asOfRows = `SELECT * FROM ingestd_layer_as_of($1, $2, $3)`

// TestLayerAsOf: the layer as of each poll's applied time is that poll's
// snapshot exactly, and between two polls the earlier one's; before the
// first load it is empty.
func TestLayerAsOf(t *testing.T) {
	b := setup(t)
	feed := feedInfo("history")
	polls := historyRun(t, b, feed, uint64(time.Now().UnixNano()))
	changed := 0
	for i, p := range polls {
		if n, d := b.digest(t, asOfRows, feed.Jurisdiction, feed.Feed, p.at); n != p.count || d != p.digest {
			t.Fatalf("as of poll %d (%s): %d features %s, want %d %s", i, p.at, n, d, p.count, p.digest)
		}
		if i+1 < len(polls) {
			mid := p.at.Add(polls[i+1].at.Sub(p.at) / 2).Truncate(time.Microsecond)
			if n, d := b.digest(t, asOfRows, feed.Jurisdiction, feed.Feed, mid); n != p.count || d != p.digest {
				t.Fatalf("as of %s, between polls %d and %d: %d features %s, want %d %s", mid, i, i+1, n, d, p.count, p.digest)
			}
		}
		if p.changes > 0 && i > 0 {
			changed++
		}
	}
	if changed < 10 {
		t.Fatalf("only %d of 30 polls changed the layer: the run tests little", changed)
	}
	if n, _ := b.digest(t, asOfRows, feed.Jurisdiction, feed.Feed, polls[0].at.Add(-time.Microsecond)); n != 0 {
		t.Fatalf("as of before the first load: %d features, want none", n)
	}
	// Every superseded version is one a later poll modified or removed.
	hist := b.count(t, `SELECT count(*) FROM feature_history WHERE jurisdiction = $1 AND feed = $2`, feed.Jurisdiction, feed.Feed)
	ended := b.count(t, `SELECT count(*) FROM feature_changes WHERE jurisdiction = $1 AND feed = $2 AND change IN ('modified', 'removed')`,
		feed.Jurisdiction, feed.Feed)
	if hist != ended {
		t.Fatalf("feature_history holds %d versions, the polls modified or removed %d", hist, ended)
	}
	// A feature's versions follow each other without gaps.
	gaps := b.count(t, `SELECT count(*) FROM feature_history h
		WHERE h.jurisdiction = $1 AND h.feed = $2 AND h.ended_by = 'modified'
		  AND NOT EXISTS (SELECT FROM feature_history n WHERE n.jurisdiction = $1 AND n.feed = $2
			AND n.feature_id = h.feature_id AND n.valid_from = h.valid_to AND n.from_poll = h.to_poll)
		  AND NOT EXISTS (SELECT FROM features f WHERE f.jurisdiction = $1 AND f.feed = $2
			AND f.feature_id = h.feature_id AND f.changed_at = h.valid_to AND f.poll_id = h.to_poll)`,
		feed.Jurisdiction, feed.Feed)
	if gaps != 0 {
		t.Fatalf("%d modified versions are not followed by the version that replaced them", gaps)
	}
}

// TestHistoryPrune: pruning at keep removes exactly the versions that
// ended before now - keep; the layer as of any later time is unchanged,
// and as of an earlier one it is refused.
func TestHistoryPrune(t *testing.T) {
	b := setup(t)
	feed := feedInfo("pruned")
	feed.History = config.History{Keep: time.Hour}
	polls := historyRun(t, b, feed, uint64(time.Now().UnixNano()))
	cut := polls[15].at.Add(polls[16].at.Sub(polls[15].at) / 2).Truncate(time.Microsecond)
	older := b.count(t, `SELECT count(*) FROM feature_history WHERE feed = $1 AND valid_to < $2`, feed.Feed, cut)
	newer := b.count(t, `SELECT count(*) FROM feature_history WHERE feed = $1 AND valid_to >= $2`, feed.Feed, cut)
	if older == 0 || newer == 0 {
		t.Fatalf("%d versions before the cut, %d after: the run tests little", older, newer)
	}
	n, err := b.store.PruneHistory(b.ctx, cut.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != older {
		t.Fatalf("pruned %d versions, want %d", n, older)
	}
	if left := b.count(t, `SELECT count(*) FROM feature_history WHERE feed = $1`, feed.Feed); left != newer {
		t.Fatalf("%d versions left, want %d", left, newer)
	}
	for i, p := range polls[16:] {
		if n, d := b.digest(t, asOfRows, feed.Jurisdiction, feed.Feed, p.at); n != p.count || d != p.digest {
			t.Fatalf("as of poll %d after the prune: %d features %s, want %d %s", 16+i, n, d, p.count, p.digest)
		}
	}
	if _, err := b.pool.Exec(b.ctx, asOfRows, feed.Jurisdiction, feed.Feed, polls[15].at); err == nil {
		t.Fatal("as of a pruned time: no error, want one saying the history is not complete")
	}
	// A feed that keeps its history forever is not pruned.
	forever := feedInfo("forever")
	forever.History = config.History{Forever: true}
	historyRun(t, b, forever, 7)
	kept := b.count(t, `SELECT count(*) FROM feature_history WHERE feed = $1`, forever.Feed)
	if _, err := b.store.PruneHistory(b.ctx, time.Now().Add(1000*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if left := b.count(t, `SELECT count(*) FROM feature_history WHERE feed = $1`, forever.Feed); left != kept || kept == 0 {
		t.Fatalf("keep: forever: %d versions left of %d", left, kept)
	}
}

// TestHistoryOff: a feed with history off keeps no versions, and the layer
// as of a time before its last change is refused rather than wrong.
func TestHistoryOff(t *testing.T) {
	b := setup(t)
	feed := feedInfo("nohistory")
	feed.History = config.History{Off: true}
	polls := historyRun(t, b, feed, 11)
	if n := b.count(t, `SELECT count(*) FROM feature_history`); n != 0 {
		t.Fatalf("history off: %d versions kept", n)
	}
	last := polls[len(polls)-1]
	if n, d := b.digest(t, asOfRows, feed.Jurisdiction, feed.Feed, last.at); n != last.count || d != last.digest {
		t.Fatalf("as of the last poll: %d %s, want %d %s", n, d, last.count, last.digest)
	}
	if _, err := b.pool.Exec(b.ctx, asOfRows, feed.Jurisdiction, feed.Feed, polls[1].at); err == nil {
		t.Fatal("as of a time whose versions were not kept: no error")
	}
}

// TestLayerAsOfTyped: ingestd_layer_as_of_typed gives the typed view's rows
// over the layer as of a time: its typed columns cast from that time's
// properties.
func TestLayerAsOfTyped(t *testing.T) {
	b := setup(t)
	feed := feedInfo("typed")
	polls := historyRun(t, b, feed, 5)
	var view string
	b.scalar(t, &view, `SELECT ingestd_feed_view($1, $2)`, feed.Jurisdiction, feed.Feed)
	for _, i := range []int{3, 17, 29} {
		p := polls[i]
		typed := fmt.Sprintf(`SELECT feature_id, jsonb_build_object('owner', owner, 'value', value) AS properties, geom
			FROM ingestd_layer_as_of_typed($1, $2, $3, NULL::%s)`, view)
		if n, d := b.digest(t, typed, feed.Jurisdiction, feed.Feed, p.at); n != p.count || d != p.digest {
			t.Fatalf("typed as of poll %d: %d features %s, want %d %s", i, n, d, p.count, p.digest)
		}
	}
	var kind string
	b.scalar(t, &kind, fmt.Sprintf(`SELECT pg_typeof(value)::text FROM ingestd_layer_as_of_typed($1, $2, $3, NULL::%s) LIMIT 1`, view),
		feed.Jurisdiction, feed.Feed, polls[3].at)
	if kind != "bigint" {
		t.Fatalf("value is %s as of poll 3, want the typed view's bigint", kind)
	}
}

// TestHistoryPrunerPrunes: the daemon's pruner prunes at once when it
// starts, by each feed's retention.
func TestHistoryPrunerPrunes(t *testing.T) {
	b := setup(t)
	feed := feedInfo("short")
	feed.History = config.History{Keep: time.Microsecond}
	historyRun(t, b, feed, 13)
	if n := b.count(t, `SELECT count(*) FROM feature_history`); n == 0 {
		t.Fatal("no versions to prune: the run tests little")
	}
	p := postgis.NewHistoryPruner(b.store, time.Hour)
	type outcome struct {
		n   int64
		err error
	}
	pruned := make(chan outcome, 1)
	postgis.SetAfterPrune(p, func(n int64, err error) {
		select {
		case pruned <- outcome{n, err}:
		default:
		}
	})
	if err := p.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// The prune at start, not the hourly one: its outcome is the event.
	if o := testwait.Await(t, "the pruner's first prune", pruned); o.err != nil || o.n == 0 {
		t.Fatalf("first prune: %d versions, %v; want the versions older than keep", o.n, o.err)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_history`); n != 0 {
		t.Errorf("%d versions left after the prune at start, want 0 (keep 1µs)", n)
	}
}

// TestApplyTooEarlyStartsOver: an apply whose transaction's time is not
// after the feed's last change (it began before that change committed)
// is run again, and fails rather than date its versions before that
// change; nothing of it is written.
func TestApplyTooEarlyStartsOver(t *testing.T) {
	b := setup(t)
	feed := feedInfo("early")
	sim := newLayerSim(17, 10)
	b.poll(t, feed, sim.snapshot())
	// A change dated an hour ahead stands for one that committed after
	// this apply's transaction began, however often it starts over.
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
		VALUES (0, $1, $2, 'x', 'removed', now() + interval '1 hour')`, feed.Jurisdiction, feed.Feed); err != nil {
		t.Fatal(err)
	}
	sim.add()
	id := b.stage(t, feed, sim.snapshot())
	if _, err := b.store.Apply(b.ctx, id, feed); err == nil || !strings.Contains(err.Error(), "began before the feed's last change") {
		t.Fatalf("apply: %v, want it refused as beginning too early", err)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = $1`, feed.Feed); n != 10 {
		t.Fatalf("%d features after the refused apply, want the previous 10", n)
	}
}
