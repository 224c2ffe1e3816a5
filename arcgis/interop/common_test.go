package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/conform"
)

// parcelAddresses conforms the fixture's parcels into common.addresses:
// batch-machine's functions on SITE_ADDRESS, and NAME, the field the
// fixture's editors change, read by a regexp and as it is.
const parcelAddresses = `layer: addresses
number: {function: prefixed_number, field: SITE_ADDRESS}
street: {function: postfixed_street, field: SITE_ADDRESS}
unit: NAME
city: {function: regexp, field: NAME, pattern: "^(\\w+)"}
id: PIN
`

// commonMismatches compares the incremental feed's rows of common.addresses
// with conforming the full feed's stored features (a full dump of the
// layer at the same moment) in Go — a feature the conform cannot map has
// no row — and their geometry with a point on the surface of the dump's.
// It returns a description of the first few differences.
func (r *rig) commonMismatches(t *testing.T, c *conform.Conform, feed, full string) []string {
	t.Helper()
	rows, err := r.pool.Query(r.ctx, `
		SELECT coalesce(f.feature_id, a.feature_id), f.properties::text,
			to_jsonb(a) - '{jurisdiction,feed,feature_id,geom,changed_at}'::text[],
			a.geom = ST_PointOnSurface(f.geom)
		FROM (SELECT * FROM features WHERE jurisdiction = 'county' AND feed = $2) f
		FULL JOIN (SELECT * FROM common.addresses WHERE jurisdiction = 'county' AND feed = $1) a
			ON a.feature_id = f.feature_id
		ORDER BY 1`, feed, full)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() && len(out) < 5 {
		var id string
		var props *string
		var got map[string]*string
		var sameGeom *bool
		if err := rows.Scan(&id, &props, &got, &sameGeom); err != nil {
			t.Fatal(err)
		}
		if props == nil {
			out = append(out, fmt.Sprintf("%s: a common row, no feature in the full dump", id))
			continue
		}
		p := map[string]any{}
		d := json.NewDecoder(bytes.NewReader([]byte(*props)))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			t.Fatal(err)
		}
		want, err := c.Apply(p)
		switch {
		case err != nil && got != nil:
			out = append(out, fmt.Sprintf("%s: a common row, but the conform cannot map the full dump's feature (%v)", id, err))
			continue
		case err != nil:
			continue
		case got == nil:
			out = append(out, fmt.Sprintf("%s: in the full dump, no common row", id))
			continue
		case sameGeom == nil || !*sameGeom:
			out = append(out, fmt.Sprintf("%s: the common row's point is not the dump's point on surface", id))
		}
		for col, w := range want {
			g := ""
			if v := got[col]; v != nil {
				g = *v
			}
			if g != w {
				out = append(out, fmt.Sprintf("%s: %s is %q, conforming the full dump gives %q", id, col, g, w))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// commonState is the feed's rows of common.addresses: id -> values and
// geometry.
func (r *rig) commonState(t *testing.T, feed string) map[string]string {
	t.Helper()
	return r.strings(t, `SELECT feature_id, (to_jsonb(a) - '{jurisdiction,feed,feature_id,changed_at}'::text[])::text
		FROM common.addresses a WHERE jurisdiction = 'county' AND feed = $1`, feed)
}

// strings maps the first text column of sql's rows to the second.
func (r *rig) strings(t *testing.T, sql string, args ...any) map[string]string {
	t.Helper()
	rows, err := r.pool.Query(r.ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCommonLayerIncrementalRounds: twenty rounds of edits (features
// modified, deleted, added; some added without an address, which the
// conform cannot map) on a tracked ArcGIS layer, each polled by a feed
// read by edit date with a conform into common.addresses and by a full
// dump of the same layer: after every round the incremental feed's common
// rows are what conforming the full dump gives, and its common change
// feed lists exactly the rows the round added, modified and removed.
func TestCommonLayerIncrementalRounds(t *testing.T) {
	const n, rounds = 2000, 20
	spec, err := conform.ParseSpec([]byte(parcelAddresses))
	if err != nil {
		t.Fatal(err)
	}
	c, err := conform.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	srv, base := countingFixture(t)
	srv.srv.AddLayer("parcels", arcgistest.Parcels(n))
	url := arcgistest.URL(base, "parcels")
	indented := "          " + strings.ReplaceAll(strings.TrimSpace(parcelAddresses), "\n", "\n          ")
	r := newRig(t, fmt.Sprintf("      - id: inc\n        kind: arcgis\n        url: %q\n        conform:\n%s\n"+
		"      - {id: full, name: full_dump, kind: arcgis, url: %q, incremental: \"off\"}\n", url, indented, url), nil)
	inc, _ := r.sameAsFull(t, srv, "first poll")
	if bad := r.commonMismatches(t, c, "inc", "full"); len(bad) > 0 {
		t.Fatalf("first poll: %s", strings.Join(bad, "; "))
	}
	rng := rand.New(rand.NewPCG(38, 20))
	at := int64(1764600000000)
	last := inc.res.PollID
	total := map[string]int{}
	for round := 1; round <= rounds; round++ {
		before := r.commonState(t, "inc")
		at += 3600_000
		churn := arcgistest.Churn{Edits: 40, Deletes: 5, Adds: 3, At: at, Spread: 3600_000}
		srv.srv.Edit("parcels", func(l *arcgistest.Layer) {
			churn.Apply(l, rng)
			// The fixture adds features with a NAME only: two of the
			// round's three get an address.
			for i, f := range l.Features[len(l.Features)-2:] {
				f.Attributes["SITE_ADDRESS"] = fmt.Sprintf("%d%s ELM ST", 10*round+i, []string{"", " 1/2"}[i])
			}
		})
		inc, _ := r.sameAsFull(t, srv, fmt.Sprintf("round %d", round))
		if inc.mode != "edit_date" {
			t.Fatalf("round %d: the feed fetched %q, want edit_date (an incremental poll)", round, inc.mode)
		}
		if bad := r.commonMismatches(t, c, "inc", "full"); len(bad) > 0 {
			t.Fatalf("round %d: %s", round, strings.Join(bad, "; "))
		}
		after := r.commonState(t, "inc")
		var want []string
		for id, v := range after {
			switch w, ok := before[id]; {
			case !ok:
				want = append(want, id+" added")
			case w != v:
				want = append(want, id+" modified")
			}
		}
		for id := range before {
			if _, ok := after[id]; !ok {
				want = append(want, id+" removed")
			}
		}
		got := r.strings(t, `SELECT feature_id || ' ' || change, '' FROM ingestd_common_changes_since('county', 'inc', $1)`, last)
		if len(got) != len(want) {
			t.Fatalf("round %d: the common change feed lists %d changes, the layer changed %d rows: %v",
				round, len(got), len(want), slices.Sorted(maps.Keys(got)))
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Fatalf("round %d: the layer's change %q is not in the common change feed %v", round, w, slices.Sorted(maps.Keys(got)))
			}
			change := w[strings.IndexByte(w, ' ')+1:]
			total[change]++
		}
		last = inc.res.PollID
	}
	if total["added"] == 0 || total["modified"] == 0 || total["removed"] == 0 {
		t.Errorf("over %d rounds the common rows changed %v; want some of each change", rounds, total)
	}
	var skipped int
	if err := r.pool.QueryRow(r.ctx, `SELECT coalesce(sum(common_skipped), 0) FROM polls WHERE jurisdiction = 'county' AND feed = 'inc'`).Scan(&skipped); err != nil {
		t.Fatal(err)
	}
	if skipped < rounds {
		t.Errorf("the polls counted %d skipped features, want at least the %d added without an address", skipped, rounds)
	}
	t.Logf("%d rounds: common rows added %d, modified %d, removed %d; %d features skipped", rounds,
		total["added"], total["modified"], total["removed"], skipped)
}
