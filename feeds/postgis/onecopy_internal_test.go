package postgis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/schema"
)

// givesBackSamples are JSON values of each kind, chosen to catch a
// rendering that differs from the source's text: scales, exponents,
// int64's ends, leading zeros, escapes, dates before year 1000.
var givesBackSamples = map[schema.ValueKind][]string{
	schema.KNull:      {`null`},
	schema.KBool:      {`true`, `false`},
	schema.KInt:       {`0`, `-5`, `1900`, `1e3`, `1.5e1`, `-0`, `9223372036854775807`, `-9223372036854775808`, `12345678901234567`},
	schema.KNum:       {`0.10`, `1.5`, `-2.25e-3`, `1.0`, `3.14159265358979323846`, `1e400`, `92233720368547758070`},
	schema.KStrInt:    {`"12"`, `"-007"`, `"0"`},
	schema.KStrNum:    {`"1.50"`, `"-0.5"`, `"1e3"`},
	schema.KStrBool:   {`"true"`, `"false"`},
	schema.KDate:      {`"2020-01-02"`, `"0099-12-31"`},
	schema.KTimestamp: {`"2020-01-02T03:04:05Z"`, `"2020-01-02 03:04"`, `"2020-01-02T03:04:05.123+02:00"`},
	schema.KString:    {`"abc"`, `""`, `"a\"b\\c\u00e9\n"`, `"  12 "`, `"2020-13-45"`},
	schema.KNested:    {`{"a": [1, 2]}`, `[1]`, `{}`},
}

// sampleKind is the kind the staging profile gives the JSON value v.
func sampleKind(t *testing.T, v string) schema.ValueKind {
	t.Helper()
	switch {
	case v == "null":
		return schema.KNull
	case v == "true" || v == "false":
		return schema.KBool
	case v[0] == '"':
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			t.Fatal(err)
		}
		return schema.StringKind(s)
	case v[0] == '{' || v[0] == '[':
		return schema.KNested
	}
	k, _ := schema.NumberKind(v)
	return k
}

// TestGivesBackMatchesTheCasts: for every type a layer column has and
// every kind of value, each sample cast by the layer's own cast function
// (ingestd_as_*) and rendered back as the layer renders a column comes
// back as the source's jsonb text exactly when givesBack says so — never
// a "gives back" that PostgreSQL contradicts, and no "does not" that every
// sample disproves.
func TestGivesBackMatchesTheCasts(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	casts := map[schema.Type]string{
		schema.Text: "ingestd_as_text", schema.BigInt: "ingestd_as_bigint", schema.Numeric: "ingestd_as_numeric",
		schema.Double: "ingestd_as_double", schema.Boolean: "ingestd_as_boolean", schema.Date: "ingestd_as_date",
		schema.Timestamp: "ingestd_as_timestamptz", schema.JSON: "ingestd_as_jsonb",
	}
	for k, samples := range givesBackSamples {
		for _, v := range samples {
			if got := sampleKind(t, v); got != k {
				t.Fatalf("sample %s is of kind %s, listed under %s", v, got, k)
			}
		}
		for typ, cast := range casts {
			var back []bool
			err := pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT array_agg(
					(jsonb_build_object('v', %s(s::jsonb)) -> 'v')::text = s::jsonb::text ORDER BY o)
				FROM unnest($1::text[]) WITH ORDINALITY AS u(s, o)`, cast), samples).Scan(&back)
			if err != nil {
				t.Fatal(err)
			}
			want := givesBack(k, typ)
			for i, ok := range back {
				if want && !ok {
					t.Errorf("givesBack(%s, %s) = true, but %s does not come back from %s", k, typ, samples[i], cast)
				}
			}
			if !want && len(back) > 0 && allTrue(back) {
				t.Errorf("givesBack(%s, %s) = false, but every sample comes back from %s: %v", k, typ, cast, samples)
			}
		}
	}
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

// TestColumnGivesBack: one value of a kind the type does not give back
// is enough to need the rest for the column.
func TestColumnGivesBack(t *testing.T) {
	var cp schema.ColumnProfile
	cp.Kinds[schema.KInt] = 1000
	cp.Kinds[schema.KNull] = 3
	if !columnGivesBack(&cp, schema.BigInt) || !columnGivesBack(&cp, schema.Numeric) {
		t.Errorf("integers and nulls should give back in bigint and numeric")
	}
	if columnGivesBack(&cp, schema.Text) || columnGivesBack(&cp, schema.Double) {
		t.Errorf("integers should not give back in text or double precision")
	}
	cp.Kinds[schema.KStrInt] = 1
	if columnGivesBack(&cp, schema.BigInt) {
		t.Errorf("a string integer should need the rest in a bigint column")
	}
	// Counted by a profile, numbers of one scale give back in double
	// precision; one of another scale, or a string, takes that away.
	for docs, want := range map[string]bool{
		`{"v":0.10}|{"v":1.25}|{"v":null}`: true,
		`{"v":0.10}|{"v":1.5}`:             false,
		`{"v":0.10}|{"v":"1.25"}`:          false,
	} {
		var p schema.Profile
		for _, d := range strings.Split(docs, "|") {
			if err := p.AddFeature([]byte(d), ""); err != nil {
				t.Fatal(err)
			}
		}
		if got := columnGivesBack(&p.Columns[0], schema.Double); got != want {
			t.Errorf("%s in double precision: gives back %v, want %v", docs, got, want)
		}
	}
}

// doubleSamples are JSON numbers of 1 to 17 significant digits at scales
// from 0 to 12, some written with an exponent, and their negatives.
func doubleSamples() []string {
	r := rand.New(rand.NewPCG(40, 200))
	var out []string
	for sig := 1; sig <= 17; sig++ {
		for range 30 {
			digits := []byte{byte('1' + r.IntN(9))}
			for range sig - 1 {
				digits = append(digits, byte('0'+r.IntN(10)))
			}
			scale := r.IntN(13)
			var lit string
			if scale >= len(digits) {
				lit = "0." + strings.Repeat("0", scale-len(digits)) + string(digits)
			} else if scale > 0 {
				lit = string(digits[:len(digits)-scale]) + "." + string(digits[len(digits)-scale:])
			} else {
				lit = string(digits)
			}
			if r.IntN(4) == 0 {
				// The same number with an exponent: scale-1 fraction
				// digits and e-1 (or an integer times 10^k).
				lit = fmt.Sprintf("%se-%d", strings.TrimLeft(strings.Replace(lit, ".", "", 1), "0"), scale)
			}
			if r.IntN(3) == 0 {
				lit = "-" + lit
			}
			out = append(out, lit)
		}
	}
	return append(out, givesBackSamples[schema.KInt]...)
}

// TestDoubleScaleMatchesTheCasts: a JSON number the profile gives a scale
// for a double precision column (ColumnProfile.DoubleScale) comes back as
// the source's jsonb text from the layer's cast and rendering
// (ingestd_as_double, renderSQL); and a number it calls too wide for a
// double does not always.
func TestDoubleScaleMatchesTheCasts(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	samples := doubleSamples()
	scales := make([]int, len(samples))
	wideSeen := false
	for i, v := range samples {
		var p schema.Profile
		if err := p.AddFeature([]byte(`{"v":`+v+`}`), ""); err != nil {
			t.Fatal(err)
		}
		scale, ok := p.Columns[0].DoubleScale()
		scales[i] = -1
		if ok {
			scales[i] = scale
		} else {
			wideSeen = true
		}
	}
	if !wideSeen {
		t.Fatal("no sample is too wide for a double: the test cannot tell")
	}
	byScale := map[int][]string{}
	var wide []string
	for i, v := range samples {
		if scales[i] < 0 {
			wide = append(wide, v)
		} else {
			byScale[scales[i]] = append(byScale[scales[i]], v)
		}
	}
	for scale, vs := range byScale {
		c := layerColumn{typ: schema.Double, scaled: true, scale: scale}
		var notBack, otherScale []string
		err := pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT
				coalesce(array_agg(s) FILTER (WHERE to_jsonb(%s)::text <> s::jsonb::text), '{}'),
				coalesce(array_agg(s) FILTER (WHERE scale(s::jsonb::text::numeric) <> $2), '{}')
			FROM unnest($1::text[]) AS u(s)`, renderSQL(c, "ingestd_as_double(s::jsonb)")), vs, scale).Scan(&notBack, &otherScale)
		if err != nil {
			t.Fatal(err)
		}
		if len(notBack) > 0 {
			t.Errorf("scale %d, but %v do not come back from double precision at it", scale, notBack)
		}
		if len(otherScale) > 0 {
			t.Errorf("scale %d, but PostgreSQL's numeric gives %v another", scale, otherScale)
		}
	}
	var wideBack bool
	err := pool.QueryRow(t.Context(), `SELECT bool_and(to_jsonb(round(ingestd_as_double(s::jsonb)::numeric,
			scale(s::jsonb::text::numeric)))::text = s::jsonb::text) FROM unnest($1::text[]) AS u(s)`, wide).Scan(&wideBack)
	if err != nil {
		t.Fatal(err)
	}
	if wideBack {
		t.Errorf("every number called too wide for a double comes back at its scale: the rule is too strict")
	}
}

// scaledDoubleColumn is a double precision column whose numbers share a
// scale, as the profile of its values makes it (exact, at that scale),
// and its values.
func scaledDoubleColumn(t *testing.T) (layerColumn, []string) {
	t.Helper()
	values := []string{`0.10`, `1.25`, `-3.50`, `12.00`, `1.5e-1`, `null`, `0.00`}
	var prof schema.Profile
	for _, v := range values {
		if err := prof.AddFeature([]byte(`{"v":`+v+`}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	scale, scaled := doubleScale(&prof.Columns[0], schema.Double)
	exact := columnGivesBack(&prof.Columns[0], schema.Double)
	if !scaled || !exact {
		t.Fatalf("%v: no shared scale found", values)
	}
	return layerColumn{name: "double scaled", column: "double scaled", typ: schema.Double, exact: exact, scaled: scaled, scale: scale}, values
}

// rebuildRows is how many rows rebuildFixture makes.
const rebuildRows = 40

// rebuildFixture is TestLayerRowRebuildsProperties' layer: per type, a
// column fed every kind of value (inexact) and one fed only the kinds the
// type gives back (exact), 60 more text columns, and rebuildRows rows of
// properties (JSON text). Row i has every column, except that rows 3,
// 13, … lack every third key, rows 5, 15, … carry a key that is no column,
// and row 0 has only values its columns give back.
func rebuildFixture(t *testing.T) ([]layerColumn, []string) {
	t.Helper()
	types := []schema.Type{schema.Text, schema.BigInt, schema.Numeric, schema.Double, schema.Boolean, schema.Date, schema.Timestamp, schema.JSON}
	kinds := make([]schema.ValueKind, 0, len(givesBackSamples))
	for k := range givesBackSamples {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	// Per type: a column fed every kind (inexact) and one fed only the
	// kinds the type gives back (exact).
	var cols []layerColumn
	values := map[string][]string{} // column name → its values, row by row
	const rows = rebuildRows
	for _, typ := range types {
		var all, back []string
		for _, k := range kinds {
			all = append(all, givesBackSamples[k]...)
			if givesBack(k, typ) {
				back = append(back, givesBackSamples[k]...)
			}
		}
		for _, c := range []struct {
			suffix  string
			samples []string
		}{{"mixed", all}, {"exact", back}} {
			name := fmt.Sprintf("%s %s", typ, c.suffix)
			cols = append(cols, layerColumn{name: name, column: name, typ: typ, exact: c.suffix == "exact"})
			for i := range rows {
				values[name] = append(values[name], c.samples[(i*7)%len(c.samples)])
			}
		}
	}
	scaled, scaledValues := scaledDoubleColumn(t)
	cols = append(cols, scaled)
	for i := range rows {
		values[scaled.name] = append(values[scaled.name], scaledValues[i%len(scaledValues)])
	}
	for i := range 60 {
		name := fmt.Sprintf("wide_%02d", i)
		cols = append(cols, layerColumn{name: name, column: name, typ: schema.Text, exact: true})
		for j := range rows {
			values[name] = append(values[name], fmt.Sprintf("%q", fmt.Sprint(i*j)))
		}
	}
	// Row i: every column, except that rows 3, 13, … lack every third key,
	// rows 5, 15, … carry a key that is no column, and row 0 has only
	// values its columns give back.
	docs := make([]string, rows)
	for i := range rows {
		m := map[string]json.RawMessage{}
		for j, c := range cols {
			if i%10 == 3 && j%3 == 0 {
				continue
			}
			v := values[c.name][i]
			if i == 0 && !c.exact {
				v = "null"
			}
			m[c.name] = json.RawMessage(v)
		}
		if i%10 == 5 {
			m["not a column"] = json.RawMessage(`{"x": [1, null]}`)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = string(b)
	}
	return cols, docs
}

// TestLayerRowRebuildsProperties: properties of every kind in columns of
// every type — absent keys, nulls, keys that are no column, more columns
// than one jsonb_build_object takes — are split into typed columns, a rest
// and the absent keys by layerRestSQL and layerAbsentSQL, and rebuilt by
// layerPropertiesSQL into the same jsonb text; a row whose values all give
// back has no rest.
func TestLayerRowRebuildsProperties(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := t.Context()
	cols, docs := rebuildFixture(t)
	const rows = rebuildRows
	var typed []string
	for _, c := range cols {
		typed = append(typed, fmt.Sprintf("%s(p.properties -> %s) AS %s", castFuncs[c.typ], quoteLiteral(c.name), pgx.Identifier{c.column}.Sanitize()))
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range []string{
		`CREATE TEMP TABLE src AS SELECT o::int AS id, d::jsonb AS properties FROM unnest($1::text[]) WITH ORDINALITY AS u(d, o)`,
		fmt.Sprintf(`CREATE TEMP TABLE lay AS SELECT p.id, %s, %s AS ingestd_rest, %s AS ingestd_absent FROM src p`,
			strings.Join(typed, ", "), layerRestSQL("p.properties", cols, false), layerAbsentSQL("p.properties", cols)),
	} {
		args := []any{}
		if strings.Contains(stmt, "$1") {
			args = append(args, docs)
		}
		if _, err := conn.Exec(ctx, stmt, args...); err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
	}
	var differ []int
	var restless, withRest, withAbsent int
	err = conn.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(array_agg(s.id ORDER BY s.id) FILTER (WHERE r.rebuilt::text IS DISTINCT FROM s.properties::text), '{}'),
			count(*) FILTER (WHERE s.id = 1 AND l.ingestd_rest IS NULL), count(l.ingestd_rest), count(l.ingestd_absent)
		FROM lay l JOIN src s USING (id) CROSS JOIN LATERAL (SELECT %s AS rebuilt) r`, layerPropertiesSQL("l", cols))).
		Scan(&differ, &restless, &withRest, &withAbsent)
	if err != nil {
		t.Fatal(err)
	}
	if len(differ) > 0 {
		id := differ[0]
		var src, rest string
		_ = conn.QueryRow(ctx, `SELECT s.properties::text, coalesce(l.ingestd_rest::text, '') FROM src s JOIN lay l USING (id) WHERE id = $1`, id).Scan(&src, &rest)
		t.Errorf("%d of %d rows rebuild differently (ids %v); row %d: source %s, rest %s", len(differ), rows, differ, id, src, rest)
	}
	if restless != 1 {
		t.Errorf("row 1 (only values its columns give back) has a rest")
	}
	if withRest < rows-1 || withAbsent != rows/10 {
		t.Errorf("%d rows with a rest (want %d: every mixed row), %d with absent keys (want %d)", withRest, rows-1, withAbsent, rows/10)
	}
}

// backendCPU is the user and system CPU time the connection's backend
// has used, read from /proc (the benchmark's PostgreSQL runs on this
// machine; elsewhere it skips).
func backendCPU(b *testing.B, conn *pgx.Conn) time.Duration {
	b.Helper()
	var pid int
	if err := conn.QueryRow(b.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("the backend's CPU time is not readable here: %v", err)
	}
	// Fields after the command (which may hold spaces), from field 3.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// Clock ticks of 1/100 s (USER_HZ on Linux).
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkOneCopyWriteExtras: what the one copy's rest and absent keys
// add to writing a layer's typed rows (CREATE TABLE … AS over parsed
// properties, as a first load writes them): 100,000 parcel-like rows
// (INGESTD_ONECOPY_ROWS), one double precision column checked row by row
// (0.10 does not render back from a double), the rest exact.
func BenchmarkOneCopyWriteExtras(b *testing.B) {
	pool := pgtest.Pool(b)
	ctx := b.Context()
	n := 100000
	if s := os.Getenv("INGESTD_ONECOPY_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE TABLE src AS SELECT 'parcel.' || i AS feature_id,
		jsonb_build_object('pin', lpad(i::text, 10, '0'), 'owner', 'OWNER ' || i, 'site_address', (100 + i % 900) || ' MAIN ST',
			'zoning', 'R-' || (i % 8), 'acres', round((0.1 + (i % 100) / 100.0)::numeric, 2), 'assessed_value', 100000 + i,
			'year_built', 1900 + i % 120, 'exempt', i % 2 = 0, 'deed_date', to_char(date '2000-01-01' + i % 5000, 'YYYY-MM-DD'),
			'township', 'T' || (i % 12)) AS properties
		FROM generate_series(1, $1::int) i`, n); err != nil {
		b.Fatal(err)
	}
	// One backend does all the work, so that its CPU time is the write's:
	// a parallel plan's workers are other processes.
	for _, stmt := range []string{`VACUUM ANALYZE src`, `SET max_parallel_workers_per_gather = 0`} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	cols := []layerColumn{
		{name: "pin", typ: schema.Text, exact: true}, {name: "owner", typ: schema.Text, exact: true},
		{name: "site_address", typ: schema.Text, exact: true}, {name: "zoning", typ: schema.Text, exact: true},
		{name: "acres", typ: schema.Double}, {name: "assessed_value", typ: schema.BigInt, exact: true},
		{name: "year_built", typ: schema.BigInt, exact: true}, {name: "exempt", typ: schema.Boolean, exact: true},
		{name: "deed_date", typ: schema.Date, exact: true}, {name: "township", typ: schema.Text, exact: true},
	}
	var typed []string
	for i := range cols {
		cols[i].column = cols[i].name
		typed = append(typed, fmt.Sprintf("%s(p.properties -> %s) AS %s", castFuncs[cols[i].typ], quoteLiteral(cols[i].name), pgx.Identifier{cols[i].column}.Sanitize()))
	}
	sel := "SELECT p.feature_id, " + strings.Join(typed, ", ")
	for _, v := range []struct{ name, sql string }{
		{"typed", sel + " FROM src p"},
		{"typed+absent", sel + ", " + layerAbsentSQL("p.properties", cols) + " AS ingestd_absent FROM src p"},
		{"typed+rest", sel + ", " + layerRestSQL("p.properties", cols, true) + " AS ingestd_rest FROM src p"},
		{"typed+rest+absent", sel + ", " + layerRestSQL("p.properties", cols, true) + " AS ingestd_rest, " +
			layerAbsentSQL("p.properties", cols) + " AS ingestd_absent FROM src p"},
	} {
		b.Run(v.name, func(b *testing.B) {
			cpu0 := backendCPU(b, conn.Conn())
			for b.Loop() {
				if _, err := conn.Exec(ctx, "CREATE TEMP TABLE lay AS "+v.sql); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := conn.Exec(ctx, "DROP TABLE lay"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
			// The backend's CPU (the DROPs' too, a few ms): on a shared
			// machine the wall time mostly measures the neighbours.
			b.ReportMetric(float64((backendCPU(b, conn.Conn())-cpu0).Nanoseconds())/float64(b.N)/float64(n), "backend-cpu-ns/row")
		})
	}
}
