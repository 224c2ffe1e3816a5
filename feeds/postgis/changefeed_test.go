package postgis_test

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/testwait"
)

// listen opens a connection of its own listening on ingestd_changes and
// returns a channel of its notices.
func listen(t *testing.T, b *bundle) <-chan postgis.ChangeNotice {
	t.Helper()
	conn, err := b.pool.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(b.ctx, "LISTEN "+postgis.ChangesChannel); err != nil {
		t.Fatal(err)
	}
	out := make(chan postgis.ChangeNotice, 64)
	done := make(chan struct{})
	go func(conn *pgxpool.Conn) {
		defer close(done)
		for {
			n, err := conn.Conn().WaitForNotification(b.ctx)
			if err != nil {
				return
			}
			var c postgis.ChangeNotice
			if err := json.Unmarshal([]byte(n.Payload), &c); err != nil {
				t.Errorf("payload %s: %v", n.Payload, err)
				return
			}
			out <- c
		}
	}(conn)
	t.Cleanup(func() {
		<-done // b.ctx ends with the test
		conn.Release()
	})
	return out
}

// TestChangeNotices: a LISTEN ingestd_changes client hears once for each
// applied poll that changed the layer, with its counts, and never for an
// unchanged, not-modified, held or failed poll: the notice that follows any
// of those is the next changing poll's (notices arrive in commit order).
func TestChangeNotices(t *testing.T) {
	b := setup(t)
	feed := feedInfo("notices")
	notices := listen(t, b)
	expect := func(poll int64, res feeds.ApplyResult) {
		t.Helper()
		c := testwait.Await(t, "the notice of the poll", notices)
		if c.PollID != poll || c.Jurisdiction != feed.Jurisdiction || c.Feed != feed.Feed ||
			c.Added != res.Added || c.Modified != res.Modified || c.Removed != res.Removed || c.AppliedAt.IsZero() {
			t.Fatalf("notice %+v, want poll %d of %s/%s with %+v", c, poll, feed.Jurisdiction, feed.Feed, res)
		}
	}
	sim := newLayerSim(3, 40)
	id, res := b.poll(t, feed, sim.snapshot()) // a first load
	expect(id, res)

	if _, res := b.poll(t, feed, sim.snapshot()); res.Unchanged != 40 {
		t.Fatalf("unchanged poll: %+v", res)
	}
	nm := b.begin(t, feed)
	if _, err := b.store.RecordNotModified(b.ctx, nm, feed); err != nil {
		t.Fatal(err)
	}
	held := b.stage(t, feed, sim.snapshot()[:3])
	var he *feeds.HeldError
	if _, err := b.store.Apply(b.ctx, held, feed); !errors.As(err, &he) {
		t.Fatalf("apply of 3 of 40 features: %v, want held", err)
	}
	failed := b.stage(t, feed, sim.snapshot()[:20])
	if err := b.store.FailPoll(b.ctx, failed, feed, errors.New("cut short")); err != nil {
		t.Fatal(err)
	}

	for range 3 {
		sim.step()
		sim.add() // each step changes something
		id, res = b.poll(t, feed, sim.snapshot())
		expect(id, res)
	}
	// Accepting a held snapshot that changes the layer is an applied poll.
	held = b.stage(t, feed, sim.snapshot()[:3])
	if _, err := b.store.Apply(b.ctx, held, feed); !errors.As(err, &he) {
		t.Fatalf("apply of 3 features: %v, want held", err)
	}
	res, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed)
	if err != nil {
		t.Fatal(err)
	}
	expect(held, res)
}

// versionsAsOf reads the layer as of poll p's time: id → properties|geometry.
func versionsAsOf(t *testing.T, b *bundle, feed feeds.FeedInfo, p appliedPoll) map[string]string {
	t.Helper()
	return b.textMap(t, `SELECT feature_id, properties::text || '|' || coalesce(encode(ST_AsEWKB(geom), 'hex'), '')
		FROM ingestd_layer_as_of($1, $2, $3)`, feed.Jurisdiction, feed.Feed, p.at)
}

// TestChangesSinceReplays: from the layer as of any poll, the changes
// ingestd_changes_since gives after it, applied in order (each old version
// checked against the layer), rebuild the current layer exactly.
func TestChangesSinceReplays(t *testing.T) {
	b := setup(t)
	feed := feedInfo("replayed")
	polls := historyRun(t, b, feed, 23)
	want := versionsAsOf(t, b, feed, polls[len(polls)-1])
	starts := append([]appliedPoll{{id: 0}}, polls...)
	for _, p := range starts {
		layer := map[string]string{}
		if p.id != 0 {
			layer = versionsAsOf(t, b, feed, p)
		}
		replayChanges(t, b, feed, p.id, layer)
		if !maps.Equal(layer, want) {
			t.Fatalf("the layer as of poll %d with the changes since: %d features, want %d (the current layer)", p.id, len(layer), len(want))
		}
	}
}

// replayChanges applies the changes after poll since to layer.
func replayChanges(t *testing.T, b *bundle, feed feeds.FeedInfo, since int64, layer map[string]string) {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT poll_id, feature_id, change,
		old_properties::text || '|' || coalesce(encode(ST_AsEWKB(old_geom), 'hex'), ''),
		new_properties::text || '|' || coalesce(encode(ST_AsEWKB(new_geom), 'hex'), '')
		FROM ingestd_changes_since($1, $2, $3)`, feed.Jurisdiction, feed.Feed, since)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := since
	for rows.Next() {
		var poll int64
		var id, change string
		var old, new *string
		if err := rows.Scan(&poll, &id, &change, &old, &new); err != nil {
			t.Fatal(err)
		}
		if poll <= since || poll < last {
			t.Fatalf("changes since %d: poll %d after poll %d", since, poll, last)
		}
		last = poll
		cur, exists := layer[id]
		switch {
		case change == "added" && !exists && new != nil && old == nil:
			layer[id] = *new
		case change == "modified" && exists && old != nil && *old == cur && new != nil && *new != cur:
			layer[id] = *new
		case change == "removed" && exists && old != nil && *old == cur && new == nil:
			delete(layer, id)
		default:
			t.Fatalf("poll %d: %s %s (old %v, new %v) does not follow from the layer (has it: %v, %.40s)",
				poll, change, id, orNil(old), orNil(new), exists, cur)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func orNil(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return strings.TrimSpace(*s)
}

// TestChangesSinceGeoJSON: Store.ChangesSince (the changes command) prints
// a Feature a line with the change kind and both versions' properties.
func TestChangesSinceGeoJSON(t *testing.T) {
	b := setup(t)
	feed := feedInfo("geojson")
	f := func(id, owner string) ft.Feature {
		return feature(id, square(-78.9, 35.7, 1e-4), props("owner", owner))
	}
	first, _ := b.poll(t, feed, []ft.Feature{f("p.0", "a"), f("p.1", "a"), f("p.2", "a")})
	_, res := b.poll(t, feed, []ft.Feature{f("p.0", "a"), f("p.1", "b")})
	if res.Modified != 1 || res.Removed != 1 {
		t.Fatalf("second poll: %+v", res)
	}
	var lines []map[string]any
	err := b.store.ChangesSince(b.ctx, feed.Jurisdiction, feed.Feed, first, func(line []byte) error {
		var f map[string]any
		if err := json.Unmarshal(line, &f); err != nil {
			return err
		}
		lines = append(lines, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("%d changes, want 2: %v", len(lines), lines)
	}
	for i, want := range []struct{ id, change, old, new string }{
		{"p.1", "modified", "a", "b"},
		{"p.2", "removed", "a", ""},
	} {
		f := lines[i]
		p := f["properties"].(map[string]any)
		if f["type"] != "Feature" || f["id"] != want.id || p["change"] != want.change || f["geometry"] == nil {
			t.Fatalf("change %d: %v, want %s %s", i, f, want.change, want.id)
		}
		if o, _ := p["old"].(map[string]any); o == nil || o["owner"] != want.old {
			t.Fatalf("change %d: old %v, want owner %s", i, p["old"], want.old)
		}
		if n, _ := p["new"].(map[string]any); (want.new == "" && n != nil) || (want.new != "" && (n == nil || n["owner"] != want.new)) {
			t.Fatalf("change %d: new %v, want owner %q", i, p["new"], want.new)
		}
	}
}
