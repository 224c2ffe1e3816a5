package postgis_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/schema"
)

// viewName is the feed's typed view.
func (b *bundle) viewName(t *testing.T, feed feeds.FeedInfo) string {
	t.Helper()
	var v string
	b.scalar(t, &v, `SELECT ingestd_feed_view($1, $2)`, feed.Jurisdiction, feed.Feed)
	return v
}

// viewColumns lists the view's columns as name:type, in order.
func (b *bundle) viewColumns(t *testing.T, view string) string {
	t.Helper()
	var s string
	b.scalar(t, &s, `SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, view)
	return s
}

func TestTypedViewInferred(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("typed")
	mp := func(x float64) geom.T {
		return geom.NewMultiPolygonFlat(geom.XY, []float64{x, 0, x + 1, 0, x + 1, 1, x, 0}, [][]int{{8}}).SetSRID(4326)
	}
	b.poll(t, feed, []ft.Feature{
		feature("a", mp(0), json.RawMessage(`{"year_built":1990,"value":12.5,"name":"A","last_sale":"2020-01-02","vacant":false,"tags":["x"],"feed":"own","zip":"02134"}`)),
		feature("b", square(2, 0, 1), json.RawMessage(`{"year_built":null,"value":3,"name":"B","last_sale":"2021-02-03","vacant":true,"tags":{"y":1},"feed":"own","zip":"27601"}`)),
	})
	view := b.viewName(t, feed)
	if view != "wake.typed" {
		t.Errorf("view %q", view)
	}
	want := "feature_id:text,year_built:bigint,value:numeric,name:text,last_sale:date,vacant:boolean,tags:jsonb," +
		"feed_attr:text,zip:text,geom:geometry(MultiPolygon,4326)," +
		"first_seen_at:timestamp with time zone,changed_at:timestamp with time zone," +
		"ingestd_poll:bigint,ingestd_hash:bytea,ingestd_rest:jsonb,ingestd_absent:text[],ingestd_geom_single:boolean,ingestd_geom:bytea"
	if got := b.viewColumns(t, view); got != want {
		t.Errorf("view columns\n got %s\nwant %s", got, want)
	}
	var gtype string
	var srid int
	b.scalar(t, &gtype, `SELECT type FROM geometry_columns WHERE f_table_schema || '.' || f_table_name = $1`, view)
	b.scalar(t, &srid, `SELECT srid FROM geometry_columns WHERE f_table_schema || '.' || f_table_name = $1`, view)
	if gtype != "MULTIPOLYGON" || srid != 4326 {
		t.Errorf("geometry_columns: %s %d", gtype, srid)
	}
	// Typed values, the single polygon promoted.
	var year *int64
	var value float64
	var sale string
	var vacant bool
	var geomType string
	err := b.pool.QueryRow(b.ctx, fmt.Sprintf(`SELECT year_built, value, last_sale::text, vacant, GeometryType(geom)
		FROM %s WHERE feature_id = 'b'`, view)).Scan(&year, &value, &sale, &vacant, &geomType)
	if err != nil {
		t.Fatal(err)
	}
	if year != nil || value != 3 || sale != "2021-02-03" || !vacant || geomType != "MULTIPOLYGON" {
		t.Errorf("row b: %v %v %v %v %v", year, value, sale, vacant, geomType)
	}
	// Freshness by a join that names the feed (the layer table holds one
	// feed: jurisdiction and feed are no columns of it).
	if n := b.count(t, fmt.Sprintf(`SELECT count(*) FROM %s v JOIN feed_freshness f ON f.jurisdiction = 'wake' AND f.feed = 'typed'`, view)); n != 2 {
		t.Errorf("join with feed_freshness: %d rows", n)
	}
	var src string
	b.scalar(t, &src, `SELECT string_agg(name || ':' || type_source || ':' || non_null, ',' ORDER BY ordinal) FROM feed_columns WHERE feed = 'typed'`)
	if !strings.HasPrefix(src, "year_built:inferred:1,value:inferred:2") {
		t.Errorf("feed_columns %s", src)
	}
}

func TestTypedViewDeclaredUnconverted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("declared")
	feed.Declared = &schema.Declared{Origin: "test", Columns: []schema.Column{
		{Name: "n", Type: schema.BigInt}, {Name: "d", Type: schema.Date}, {Name: "x", Type: schema.Double}}}
	b.poll(t, feed, []ft.Feature{
		feature("1", point(1, 1, 4326), json.RawMessage(`{"n":"12","d":"2020-02-30","x":"1e400"}`)),
		feature("2", point(1, 1, 4326), json.RawMessage(`{"n":"x","d":"2020-02-03","x":"2.5"}`)),
		feature("3", nil, json.RawMessage(`{"n":7}`)),
	})
	view := b.viewName(t, feed)
	want := "feature_id:text,n:bigint,d:date,x:double precision,geom:geometry(Point,4326)"
	if got := b.viewColumns(t, view); !strings.HasPrefix(got, want) {
		t.Errorf("view columns %s", got)
	}
	// Every value that does not convert is NULL and counted; the view
	// never fails.
	var unconv string
	b.scalar(t, &unconv, `SELECT string_agg(name || '=' || unconverted, ',' ORDER BY ordinal) FROM feed_columns WHERE feed = 'declared'`)
	if unconv != "n=1,d=1,x=1" {
		t.Errorf("unconverted %s", unconv)
	}
	var nulls string
	b.scalar(t, &nulls, fmt.Sprintf(`SELECT string_agg(feature_id || ':' || coalesce(n::text, '-') || ':' || coalesce(d::text, '-') || ':' || coalesce(x::text, '-'), ',' ORDER BY feature_id) FROM %s`, view))
	if nulls != "1:12:-:-,2:-:2020-02-03:2.5,3:7:-:-" {
		t.Errorf("view values %s", nulls)
	}
}

// driftPoll polls feed with features whose properties are props(i).
func driftFeatures(n int, props func(i int) string) []ft.Feature {
	out := make([]ft.Feature, n)
	for i := range out {
		out[i] = feature(fmt.Sprintf("f%d", i), point(float64(i%10), 1, 4326), json.RawMessage(props(i)))
	}
	return out
}

// driftCase is one kind of drift from driftBase.
type driftCase struct {
	name   string
	props  func(i int) string
	change string // schema_changes: column:change:old:new
	view   string // the view's attribute columns after evolving
}

func driftBase(i int) string { return fmt.Sprintf(`{"a":%d,"b":"x%d","c":%d}`, i, i, i) }

func TestSchemaDrift(t *testing.T) {
	t.Parallel()
	cases := []driftCase{
		{"added", func(i int) string { return fmt.Sprintf(`{"a":%d,"b":"x%d","c":%d,"d":true}`, i, i, i) },
			"d:added::boolean", "a:bigint,b:text,c:bigint,d:boolean"},
		{"removed", func(i int) string { return fmt.Sprintf(`{"a":%d,"b":"x%d"}`, i, i) },
			"c:removed:bigint:", "a:bigint,b:text"},
		{"retyped", func(i int) string { return fmt.Sprintf(`{"a":"n%d","b":"x%d","c":%d}`, i, i, i) },
			"a:retyped:bigint:text", "a:text,b:text,c:bigint"},
		{"null_collapse", func(i int) string { return fmt.Sprintf(`{"a":%d,"b":null,"c":%d}`, i, i) },
			"b:null_collapse:text:text", "a:bigint,b:text,c:bigint"},
	}
	for _, c := range cases {
		for _, policy := range []string{config.SchemaEvolve, config.SchemaHold} {
			t.Run(c.name+"/"+policy, func(t *testing.T) {
				t.Parallel()
				checkDrift(t, c, policy)
			})
		}
	}
}

// schemaChanges lists schema_changes rows with action as
// column:change:old:new.
func (b *bundle) schemaChanges(t *testing.T, action string) string {
	t.Helper()
	var s string
	b.scalar(t, &s, `SELECT coalesce(string_agg(column_name || ':' || change || ':' || coalesce(old_type, '') || ':' || coalesce(new_type, ''), ','), '')
		FROM schema_changes WHERE action = $1`, action)
	return s
}

// viewAttributes lists the view's attribute columns (between feature_id
// and geom) as name:type.
func (b *bundle) viewAttributes(t *testing.T, view string) string {
	t.Helper()
	cols := strings.Split(b.viewColumns(t, view), ",")
	var out []string
	for _, col := range cols[1:] {
		if strings.HasPrefix(col, "geom:") {
			break
		}
		out = append(out, col)
	}
	return strings.Join(out, ",")
}

// checkDrift loads driftBase, then c's snapshot under policy: evolved at
// once, or held (naming the column, the view untouched) until accepted.
func checkDrift(t *testing.T, c driftCase, policy string) {
	b := setup(t)
	feed := feedInfo("drift")
	feed.Guard.SchemaChange = policy
	b.poll(t, feed, driftFeatures(20, driftBase))
	view := b.viewName(t, feed)
	before := b.viewColumns(t, view)
	next := driftFeatures(20, c.props)
	if policy == config.SchemaEvolve {
		if _, res := b.poll(t, feed, next); res.Features != 20 {
			t.Errorf("applied %+v", res)
		}
		if got := b.schemaChanges(t, "evolved"); got != c.change {
			t.Errorf("schema_changes %q, want %q", got, c.change)
		}
		if got := b.viewAttributes(t, view); got != c.view {
			t.Errorf("view after evolving: %s, want %s", got, c.view)
		}
		return
	}
	id, held := b.pollHeld(t, feed, next)
	if !strings.HasPrefix(held.Reason, "schema: ") || !strings.Contains(held.Reason, `"`+strings.Split(c.change, ":")[0]+`"`) {
		t.Errorf("hold reason %q does not name the column", held.Reason)
	}
	if got := b.schemaChanges(t, "held"); got != c.change {
		t.Errorf("schema_changes %q, want %q", got, c.change)
	}
	if got := b.viewColumns(t, view); got != before {
		t.Errorf("held snapshot changed the view: %s", got)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_changes WHERE poll_id = $1`, id); n != 0 {
		t.Errorf("held snapshot wrote %d changes", n)
	}
	if _, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed); err != nil {
		t.Fatal(err)
	}
	if got := b.schemaChanges(t, "accepted"); got != c.change {
		t.Errorf("after accept: schema_changes %q", got)
	}
	if got := b.viewAttributes(t, view); got != c.view {
		t.Errorf("view after accept: %s, want %s", got, c.view)
	}
}

func TestSchemaHoldRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("reject")
	feed.Guard.SchemaChange = config.SchemaHold
	b.poll(t, feed, driftFeatures(5, func(i int) string { return fmt.Sprintf(`{"a":%d}`, i) }))
	b.pollHeld(t, feed, driftFeatures(5, func(i int) string { return fmt.Sprintf(`{"a":"s%d"}`, i) }))
	if err := b.store.RejectHeld(b.ctx, feed.Jurisdiction, feed.Feed); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM schema_changes WHERE action = 'rejected'`); n != 1 {
		t.Errorf("%d rejected changes", n)
	}
	var typ string
	b.scalar(t, &typ, `SELECT type FROM feed_columns WHERE feed = 'reject' AND name = 'a'`)
	if typ != "bigint" {
		t.Errorf("rejected retype changed the column to %s", typ)
	}
	// The same drift again is held again: the stored schema did not move.
	b.pollHeld(t, feed, driftFeatures(5, func(i int) string { return fmt.Sprintf(`{"a":"s%d"}`, i) }))
	// And a later held one supersedes it.
	b.pollHeld(t, feed, driftFeatures(5, func(i int) string { return fmt.Sprintf(`{"a":"s%d"}`, i) }))
	if n := b.count(t, `SELECT count(*) FROM schema_changes WHERE action = 'superseded'`); n != 1 {
		t.Errorf("%d superseded changes, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM schema_changes WHERE action = 'held'`); n != 1 {
		t.Errorf("%d held changes, want 1", n)
	}
}

// TestTypedGMLUpgradeKeepsHashes: a feed loaded before typed GML values
// (values stored as strings) and polled again with unchanged sources,
// now typed by the declared schema (numbers as JSON numbers), logs no
// modified feature: the layer is rewritten with the stored values
// retyped, and each retyped row adopts the new content hash.
func TestTypedGMLUpgradeKeepsHashes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("gmlupgrade")
	gmlText := func(i int) string {
		return fmt.Sprintf(`{"NAME":"County %d","AREA":"0.1%d0","CRESS_ID":"%03d","FLAG":"1","NOTE":"12"}`, i, i, i)
	}
	var old []ft.Feature
	for i := range 30 {
		old = append(old, feature(fmt.Sprintf("nc.%d", i), square(float64(i), 0, 1), json.RawMessage(gmlText(i))))
	}
	// Loaded untyped, as a version before typed GML values stored it
	// (migration 43 moves such a layer as it is).
	b.poll(t, feed, old)
	declared := &schema.Declared{Origin: "wfs DescribeFeatureType", Columns: []schema.Column{
		{Name: "NAME", Type: schema.Text}, {Name: "AREA", Type: schema.Double}, {Name: "CRESS_ID", Type: schema.BigInt},
		{Name: "FLAG", Type: schema.Boolean}, {Name: "NOTE", Type: schema.Text}}}
	typer := schema.Typer(declared)
	var typed []ft.Feature
	for i, f := range old {
		// As the GML decoder renders them with the typer.
		var m map[string]string
		if err := json.Unmarshal(f.Properties, &m); err != nil {
			t.Fatal(err)
		}
		out := []byte("{")
		for j, k := range []string{"NAME", "AREA", "CRESS_ID", "FLAG", "NOTE"} {
			if j > 0 {
				out = append(out, ',')
			}
			kb, _ := json.Marshal(k)
			out = append(append(out, kb...), ':')
			var ok bool
			if out, ok = typer(out, k, []byte(m[k])); !ok {
				vb, _ := json.Marshal(m[k])
				out = append(out, vb...)
			}
		}
		typed = append(typed, feature(f.ID, f.Geometry, append(out, '}')))
		if i == 0 && !strings.Contains(string(typed[0].Properties), `"AREA":0.100,"CRESS_ID":0,"FLAG":true`) {
			t.Fatalf("typed GML properties %s", typed[0].Properties)
		}
	}
	feed.Declared, feed.TypedText = declared, true
	_, res := b.poll(t, feed, typed)
	if res.Modified != 0 || res.Unchanged != 30 {
		t.Errorf("first typed poll after the upgrade: %+v, want 30 unchanged, 0 modified", res)
	}
	var area float64
	var cress int64
	var flag bool
	b.scalar(t, &area, fmt.Sprintf(`SELECT "AREA" FROM %s WHERE feature_id = 'nc.3'`, b.viewName(t, feed)))
	b.scalar(t, &cress, fmt.Sprintf(`SELECT "CRESS_ID" FROM %s WHERE feature_id = 'nc.3'`, b.viewName(t, feed)))
	b.scalar(t, &flag, fmt.Sprintf(`SELECT "FLAG" FROM %s WHERE feature_id = 'nc.3'`, b.viewName(t, feed)))
	if area != 0.13 || cress != 3 || !flag {
		t.Errorf("typed view: AREA %v CRESS_ID %v FLAG %v", area, cress, flag)
	}
	// Stored rows now hold numbers, and the next poll is quiet too.
	if _, res := b.poll(t, feed, typed); res.Modified != 0 {
		t.Errorf("second typed poll: %+v", res)
	}
}

// TestTypedViewKeptWhenDependedOn: an analyst's view on top of the typed
// view does not make polls fail; the typed view is rebuilt once it can be.
func TestTypedViewKeptWhenDependedOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("depended")
	b.poll(t, feed, driftFeatures(5, driftBase))
	view := b.viewName(t, feed)
	if _, err := b.pool.Exec(b.ctx, `CREATE VIEW analyst AS SELECT a FROM `+view); err != nil {
		t.Fatal(err)
	}
	added := func(i int) string { return fmt.Sprintf(`{"a":%d,"b":"x%d","c":%d,"d":%d}`, i, i, i, i) }
	b.poll(t, feed, driftFeatures(5, added))
	if got := b.viewAttributes(t, view); got != "a:bigint,b:text,c:bigint" {
		t.Errorf("view with a dependent: %s", got)
	}
	if _, err := b.pool.Exec(b.ctx, `DROP VIEW analyst`); err != nil {
		t.Fatal(err)
	}
	b.poll(t, feed, driftFeatures(5, added))
	if got := b.viewAttributes(t, view); got != "a:bigint,b:text,c:bigint,d:bigint" {
		t.Errorf("view after the dependent went: %s", got)
	}
}

// TestDeclaredRetype: a declared type that changes (a server's
// DescribeFeatureType now says string) is a retype of a declared column,
// whatever the values say; a declared column the snapshot never carries
// stays in the view, all null.
func TestDeclaredRetype(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("declretype")
	feed.Declared = &schema.Declared{Origin: "test", Columns: []schema.Column{
		{Name: "n", Type: schema.BigInt}, {Name: "absent", Type: schema.Date}}}
	features := driftFeatures(5, func(i int) string { return fmt.Sprintf(`{"n":%d}`, i) })
	b.poll(t, feed, features)
	view := b.viewName(t, feed)
	if got := b.viewAttributes(t, view); got != "n:bigint,absent:date" {
		t.Errorf("view %s", got)
	}
	feed.Declared = &schema.Declared{Origin: "test", Columns: []schema.Column{
		{Name: "n", Type: schema.Text}, {Name: "absent", Type: schema.Date}}}
	b.poll(t, feed, features)
	if got := b.schemaChanges(t, "evolved"); got != "n:retyped:bigint:text" {
		t.Errorf("schema_changes %q", got)
	}
	var src string
	b.scalar(t, &src, `SELECT type_source FROM feed_columns_seen WHERE feed = 'declretype' AND name = 'n' AND last_seen_at IS NOT NULL`)
	if src != "declared" {
		t.Errorf("type source %q", src)
	}
}

// TestTypedViewOfAWideLayer: a layer wider than a table may be (a
// PostgreSQL relation has at most 1,600 columns, and a row must fit a
// page) is a layer table of feature_id and geom, every attribute in the
// rows' rest, instead of a failed poll; the features view gives every
// attribute back.
func TestTypedViewOfAWideLayer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("wide")
	props := make(map[string]any)
	for i := range 2000 {
		props[fmt.Sprintf("p%04d", i)] = i
	}
	raw, _ := json.Marshal(props)
	b.poll(t, feed, []ft.Feature{feature("w", point(1, 1, 4326), raw)})
	if n := b.count(t, `SELECT count(*) FROM feed_columns WHERE feed = 'wide'`); n != 2000 {
		t.Errorf("feed_columns: %d columns, want 2000", n)
	}
	if n := b.count(t, `SELECT count(*) FROM jsonb_object_keys((SELECT properties FROM features WHERE feed = 'wide'))`); n != 2000 {
		t.Errorf("features: %d properties, want 2000", n)
	}
}

// TestTypedViewSourceOrderAndLooseTypes: a layer declared as pygeoapi and
// tipg declare theirs: the id (fid) first, where the source has it, not
// last; a number without a format is double precision; integers declared
// number and ISO dates declared string take the type their values prove,
// and feed_columns records what was declared.
func TestTypedViewSourceOrderAndLooseTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("tipg")
	feed.Declared = &schema.Declared{Origin: "ogcapi queryables", ID: "fid", Columns: []schema.Column{
		{Name: "fid", Type: schema.BigInt}, {Name: "name", Type: schema.Text, Loose: true},
		{Name: "pop", Type: schema.Double, Loose: true}, {Name: "area", Type: schema.Double, Loose: true},
		{Name: "opened", Type: schema.Text, Loose: true}}}
	b.poll(t, feed, []ft.Feature{
		feature("1", point(1, 1, 4326), json.RawMessage(`{"name":"A","pop":1200,"area":1.5,"opened":"2020-01-02","fid":1}`)),
		feature("2", point(2, 2, 4326), json.RawMessage(`{"name":"B","pop":7,"area":2,"opened":"2021-03-04","fid":2}`)),
	})
	want := "feature_id:text,fid:bigint,name:text,pop:bigint,area:double precision,opened:date,geom:geometry(Point,4326)"
	if got := b.viewColumns(t, b.viewName(t, feed)); !strings.HasPrefix(got, want) {
		t.Errorf("view columns\n got %s\nwant %s…", got, want)
	}
	var cols string
	b.scalar(t, &cols, `SELECT string_agg(name || ':' || type || ':' || type_source || ':' || coalesce(declared_type, '-'), ',' ORDER BY ordinal)
		FROM feed_columns_seen WHERE feed = 'tipg'`)
	if want := "fid:bigint:declared:-,name:text:declared:-,pop:bigint:inferred:double precision,area:double precision:declared:-," +
		"opened:date:inferred:text"; cols != want {
		t.Errorf("feed_columns\n got %s\nwant %s", cols, want)
	}
	var pop int64
	var opened string
	b.scalar(t, &pop, fmt.Sprintf(`SELECT pop FROM %s WHERE feature_id = '1'`, b.viewName(t, feed)))
	b.scalar(t, &opened, fmt.Sprintf(`SELECT opened::text FROM %s WHERE feature_id = '2'`, b.viewName(t, feed)))
	if pop != 1200 || opened != "2021-03-04" {
		t.Errorf("typed values pop %d opened %s", pop, opened)
	}
}
