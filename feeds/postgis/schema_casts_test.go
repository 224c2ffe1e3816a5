package postgis_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/schema"
)

// castValues are JSON values at the edges of the kinds.
var castValues = []string{
	`1`, `-0`, `1e2`, `1.0`, `1.5e1`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775808`,
	`0.1`, `1e400`, `1e-400`, `1e308`, `true`, `false`, `null`, `[1]`, `{"a":1}`,
	`"12"`, `"007"`, `"-5"`, `"+5"`, `"1.5"`, `"1e5"`, `"1e1000"`, `"12345678901234567890"`, `"NaN"`, `"Infinity"`,
	`"true"`, `"TRUE"`, `"1"`, `""`, `" 12"`,
	`"2021-02-03"`, `"2021-02-30"`, `"0000-01-01"`, `"2020-02-29"`, `"2021-02-29"`,
	`"2021-02-03T04:05:06Z"`, `"2021-02-03 04:05"`, `"2021-02-03T04:05:06.123456+02:00"`, `"2021-02-03T24:00:00Z"`,
	`"2021-02-03T04:05:06+0530"`, `"2021-02-03T04:05:06-07"`, `"2021-13-03T04:05:06Z"`, `"2021-02-03T04:60:00Z"`,
	`"2021-02-03T04:05:60Z"`, `"2021-02-03T24:00:00.000Z"`, `"2021-02-03T24:00:00.5Z"`, `"1900-02-29"`, `"2000-02-29T01:02"`,
	`"2021-04-31"`, `"2021-02-03T04:05:06+15:59"`, `"é"`, `"a\"b"`, `[]`, `{}`,
	// Beside the double's bounds, which a double's rounding crosses.
	`1.00000000000000000001e308`, `-1.00000000000000000001e308`, `0.99999999999999999999e308`, `"1.00000000000000000001e308"`,
	`9.99999999999999999999e-308`, `1e-307`, `-1e-307`,
}

var castFuncs = map[schema.Type]string{
	schema.BigInt: "ingestd_as_bigint", schema.Numeric: "ingestd_as_numeric", schema.Double: "ingestd_as_double",
	schema.Boolean: "ingestd_as_boolean", schema.Date: "ingestd_as_date", schema.Timestamp: "ingestd_as_timestamptz",
	schema.Text: "ingestd_as_text", schema.JSON: "ingestd_as_jsonb",
}

// TestSafeCastsMatchConverts: the view's safe casts (SQL) turn a value
// into NULL exactly when schema.Converts says it does not convert, so
// feed_columns.unconverted counts the NULLs the view shows.
func TestSafeCastsMatchConverts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, v := range castValues {
		p := &schema.Profile{}
		if err := p.AddFeature([]byte(`{"x":`+v+`}`), ""); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for typ, fn := range castFuncs {
			s := schema.Build(p, &schema.Declared{Columns: []schema.Column{{Name: "x", Type: typ}}}, nil)
			c, _ := s.Column("x")
			goConverts := c.Unconverted == 0
			var sqlConverts bool
			b.scalar(t, &sqlConverts, fmt.Sprintf(`SELECT %s($1::jsonb) IS NOT NULL OR $1::jsonb = 'null'`, fn), v)
			if goConverts != sqlConverts {
				t.Errorf("%s as %s: schema.Converts says %v, %s says %v", v, typ, goConverts, fn, sqlConverts)
			}
		}
	}
}

// TestSafeCastsInlined: PostgreSQL inlines every safe cast into the select
// that calls it (migration 35). A cast it calls as a function instead (a
// body with a FROM clause, or one more volatile than the function's
// declaration) costs 7 to 10 µs a value in every layer refresh and
// typed view.
func TestSafeCastsInlined(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for typ, fn := range castFuncs {
		var plan string
		b.scalar(t, &plan, fmt.Sprintf(`EXPLAIN (VERBOSE, FORMAT JSON) SELECT %s(to_jsonb(g)) FROM generate_series(1, 2) g`, fn))
		if strings.Contains(plan, fn+"(") {
			t.Errorf("%s (%s) is called, not inlined: %s", fn, typ, plan)
		}
	}
}

// TestTypedValueMatchesSQL: ingestd_typed_value (the upgrade's retype of
// stored GML strings) gives the jsonb schema.AppendTyped gives the GML
// decoder, so that hashes stay equal.
func TestTypedValueMatchesSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, text := range []string{"12", "007", "-0", "0.50", "-00.5", "1.5E+2", "1e999", " 42 ", "\t3\n", "+5", "NaN", "INF",
		"true", "1", "0", "false", "yes", "", "2020-01-01", "12345678901234567890", "99999999999999999999999999999999999999999999999999999999999999999"} {
		for _, typ := range []schema.Type{schema.BigInt, schema.Numeric, schema.Double, schema.Boolean, schema.Text, schema.Date} {
			out, ok := schema.AppendTyped(nil, typ, []byte(text))
			if !ok {
				out, _ = json.Marshal(text)
			}
			var same bool
			var sqlValue string
			b.scalar(t, &sqlValue, `SELECT ingestd_typed_value(to_jsonb($1::text), $2)::text`, text, string(typ))
			b.scalar(t, &same, `SELECT ingestd_typed_value(to_jsonb($1::text), $2) = $3::jsonb
				AND jsonb_send(ingestd_typed_value(to_jsonb($1::text), $2)) = jsonb_send($3::jsonb)`, text, string(typ), string(out))
			if !same {
				t.Errorf("%q as %s: the decoder writes %s, the retype %s", text, typ, out, sqlValue)
			}
		}
	}
}

// TestSafeCastsValues: the safe casts' values, where they convert, are the
// plain cast of the value's text (typedSQL relies on it), and
// ingestd_as_text and ingestd_as_jsonb give what they gave before they
// were inlined (migration 34).
func TestSafeCastsValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := map[string]string{
		"ingestd_as_bigint": "bigint", "ingestd_as_numeric": "numeric", "ingestd_as_double": "numeric::double precision",
		"ingestd_as_boolean": "boolean", "ingestd_as_date": "date",
	}
	for _, v := range castValues {
		for fn, typ := range plain {
			var same bool
			b.scalar(t, &same, fmt.Sprintf(`SELECT %s($1::jsonb) IS NULL OR %[1]s($1::jsonb) = ($1::jsonb #>> '{}')::%s`, fn, typ), v)
			if !same {
				t.Errorf("%s: %s differs from the plain cast to %s", v, fn, typ)
			}
		}
		var same bool
		b.scalar(t, &same, `SELECT ingestd_as_text($1::jsonb) IS NOT DISTINCT FROM
				CASE jsonb_typeof($1::jsonb) WHEN 'null' THEN NULL WHEN 'string' THEN $1::jsonb #>> '{}' ELSE $1::jsonb::text END
			AND ingestd_as_text($1::jsonb) IS NOT DISTINCT FROM ('{"x":' || $1::jsonb::text || '}')::jsonb ->> 'x'
			AND ingestd_as_jsonb($1::jsonb) IS NOT DISTINCT FROM CASE WHEN jsonb_typeof($1::jsonb) = 'null' THEN NULL ELSE $1::jsonb END`, v)
		if !same {
			t.Errorf("%s: ingestd_as_text or ingestd_as_jsonb changed", v)
		}
	}
}

// plainCasts are the casts a layer refresh reads a property with when the
// poll's values all convert (typedSQL with plain), from the
// property's text (->>).
var plainCasts = map[schema.Type]string{
	schema.BigInt: "::bigint", schema.Numeric: "::numeric", schema.Double: "::numeric::double precision",
	schema.Boolean: "::boolean", schema.Date: "::date", schema.Timestamp: "::timestamptz", schema.Text: "",
}

// TestPlainCastsWhereConverts: for every value schema.Converts takes as
// converting to a type, the plain cast of its text, in UTC as the refresh
// reads it (each check sets UTC for its transaction, as the refresh
// function does for its own; the session runs far from UTC), gives the
// safe cast's value or fails (and the refresh then reads the typed
// select): it never gives a value the safe cast does not.
// TestLayerRefreshPlainCasts checks that the refresh sets UTC.
func TestPlainCastsWhereConverts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn := b.session(t, `SET TimeZone = 'Pacific/Chatham'`)
	// Beyond castValues: zones schema.Converts takes and PostgreSQL does
	// not, and timestamps without a zone.
	values := append(slices.Clone(castValues), `"2021-02-03T04:05:06+16:00"`, `"2021-02-03T04:05:06+05:75"`,
		`"2021-02-03T04:05:06-1560"`, `"2021-02-03T04:05:06"`, `"2021-02-03 23:59:59.999999999"`, `"2021-02-03T24:00"`)
	checked := map[schema.Type]int{}
	for _, v := range values {
		p := &schema.Profile{}
		if err := p.AddFeature([]byte(`{"x":`+v+`}`), ""); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for typ, plain := range plainCasts {
			if !p.AllConvert("x", typ) {
				continue
			}
			checked[typ]++
			q := fmt.Sprintf(`SELECT (('{"x":' || $1 || '}')::jsonb ->> 'x')%s IS NOT DISTINCT FROM %s($1::jsonb)`, plain, castFuncs[typ])
			tx, err := conn.Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			var same bool
			if _, err := tx.Exec(b.ctx, `SET LOCAL TimeZone = 'UTC'`); err != nil {
				t.Fatal(err)
			}
			err = tx.QueryRow(b.ctx, q, v).Scan(&same)
			_ = tx.Rollback(b.ctx)
			var pgErr *pgconn.PgError
			switch {
			case errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22"):
				// The plain cast refuses it: the refresh reads the typed select.
			case err != nil:
				t.Fatalf("%s as %s: %v", v, typ, err)
			case !same:
				t.Errorf("%s as %s: schema.Converts takes it, and its plain cast differs from %s", v, typ, castFuncs[typ])
			}
		}
	}
	for typ := range plainCasts {
		if checked[typ] < 3 {
			t.Errorf("only %d values convert to %s: its check is all but empty", checked[typ], typ)
		}
	}
}
