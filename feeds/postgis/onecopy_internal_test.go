package postgis

import (
	"encoding/json"
	"fmt"
	"testing"

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
}
