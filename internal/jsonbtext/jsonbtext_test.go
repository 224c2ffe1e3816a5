package jsonbtext

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// jsonbCases are documents whose jsonb text has a rule to get right.
var jsonbCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `-0.0`, `0.000`, `1`, `-1`, `1.50`, `-1.50`,
	`1e0`, `1E+2`, `1e-2`, `1.5e1`, `15e-1`, `1.25e1`, `12.345e-1`, `1200e-2`, `0.00012e2`, `-0.0e5`,
	`1.5e-3`, `123456789012345678901234567890`, `0.1e-20`, `9.99e2`, `5e1000`, `5e-1000`, `1e1001`,
	`1e131071`, `1e131072`, `1e-16383`, `1e-16384`, `1.5e-16383`, `0e200000`, `0e-20000`, `-0e-16383`,
	`1e1073741822`, `1e1073741823`, `1e-1073741824`, `0.0001e131075`, `100e-2`, `0.5e-0`, `-5E+0`,
	`{"b":1,"a":2}`, `{"aa":1,"b":2}`, `{"a":1,"a":2}`, `{"a":{"y":1,"x":[3,{"k":2,"j":1}]},"a":false}`,
	`{"é":1,"z":2,"zz":3,"e":4}`, `{"\u00e9":1}`, `{"a\nb":1,"ab":2,"a\"":3}`, `{"\u0001":1,"\u001f":2}`,
	`"\/\b\f\n\r\t\"\\"`, `"\u0041\u00e9\u4e2d\ud83d\ude00"`, `"\u007f"`, `"tab\there"`, `"\u0000"`,
	`"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `  { "a" : [ 1 , 2 ] }  `, `[1,[2,[3,[]]],{}]`,
	`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `"abc`, `{"a"}`, `{"a":1}x`, `nul`, `"\x"`,
	`{"dup":{"b":1},"dup":{"a":2}}`, `{"":1,"":2}`, `{"a":"\u00e9","b":"é"}`, "\"\xff\"", "\"a\x01\"",
	`{"pin":"0000000000","owner":"OWNER 0","acres":0.10,"assessed_value":100000,"exempt":true,"deed_date":"2000-01-01"}`,
}

// TestJSONBTextMatchesPostgres compares Append with PostgreSQL's jsonb
// output on the edge cases and on random documents: the same text, or an
// error from both.
func TestJSONBTextMatchesPostgres(t *testing.T) {
	pool := pgtest.Pool(t)
	docs := append([]string(nil), jsonbCases...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		docs = append(docs, randomJSON(rng, 0))
	}
	// Runs of objects with the same keys (and duplicates) in the same
	// order, and in another order: the reused key order must follow.
	for i := range 600 {
		keys := []string{"zoning", "a", "pin", "a", "\u00e9", "b"}
		if i%3 == 2 {
			keys = []string{"a", "zoning", "b", "a", "pin", "\u00e9"}
		}
		var b strings.Builder
		b.WriteString("{")
		for j, k := range keys {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", k, randomJSON(rng, 3))
		}
		docs = append(docs, strings.ReplaceAll(b.String(), `\\u`, `\u`)+"}")
	}
	var n Normalizer
	for _, doc := range docs {
		compareWithPostgres(t, pool, &n, doc)
	}
}

// compareWithPostgres checks one document.
func compareWithPostgres(t *testing.T, pool *pgxpool.Pool, n *Normalizer, doc string) {
	t.Helper()
	got, goErr := n.Append(nil, []byte(doc))
	if goErr == nil && n.repairs != 0 {
		// PostgreSQL refuses what ingestd repaired: the repair must be
		// what PostgreSQL would print for the repaired text.
		doc = string(got)
		if !strings.Contains(doc, Replacement) {
			t.Errorf("%q: repaired (%b) to %q, without U+FFFD", doc, n.repairs, got)
		}
	}
	var want string
	pgErr := pool.QueryRow(context.Background(), `SELECT $1::text::jsonb::text`, doc).Scan(&want)
	switch {
	case goErr != nil && pgErr != nil:
	case goErr != nil:
		t.Errorf("%q: ingestd refuses (%v), PostgreSQL gives %q", doc, goErr, want)
	case pgErr != nil:
		t.Errorf("%q: ingestd gives %q, PostgreSQL refuses (%v)", doc, got, pgErr)
	case string(got) != want:
		t.Errorf("%q: ingestd gives %q, PostgreSQL %q", doc, got, want)
	}
}

// randomJSON builds a document exercising key order, duplicates, escapes
// and number forms.
func randomJSON(rng *rand.Rand, depth int) string {
	keys := []string{"a", "b", "ab", "ba", "é", "\\u00e9", "key", "Key", "k\\ny", "\\u0007", "zz", "", "a\\\"", "中文"}
	switch k := rng.IntN(10); {
	case k < 3 && depth < 4:
		var b strings.Builder
		b.WriteString("{")
		for i := range rng.IntN(6) {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `%s"%s" :%s`, space(rng), keys[rng.IntN(len(keys))], randomJSON(rng, depth+1))
		}
		b.WriteString(space(rng) + "}")
		return b.String()
	case k < 5 && depth < 4:
		parts := make([]string, rng.IntN(4))
		for i := range parts {
			parts[i] = randomJSON(rng, depth+1)
		}
		return "[" + strings.Join(parts, ","+space(rng)) + "]"
	case k < 7:
		mant := []string{"0", "1", "10", "123", "0.5", "0.050", "12.340", "-0", "-7.25", "99999999999999999999.5"}
		exp := []string{"", "", "e0", "e3", "E-2", "e+1", "e-7", "E12"}
		return mant[rng.IntN(len(mant))] + exp[rng.IntN(len(exp))]
	case k < 9:
		strs := []string{`"x"`, `"\t\u0041"`, `"\/"`, `"é"`, `"\u00e9"`, `"\ud83d\ude00"`, `"a\"b"`, `"\u001f"`, `""`}
		return strs[rng.IntN(len(strs))]
	default:
		return []string{"true", "false", "null"}[rng.IntN(3)]
	}
}

func space(rng *rand.Rand) string { return []string{"", " ", "\n\t"}[rng.IntN(3)] }

// FuzzJSONBText: Append never panics, accepts only valid JSON, renders
// valid JSON, and is idempotent; with a database (always in CI) its output
// is PostgreSQL's.
func FuzzJSONBText(f *testing.F) {
	for _, c := range jsonbCases {
		f.Add(c)
	}
	pool := pgtest.Pool(f)
	f.Fuzz(func(t *testing.T, doc string) {
		var n Normalizer
		compareWithPostgres(t, pool, &n, doc)
		got, err := n.Append(nil, []byte(doc))
		if err != nil {
			return
		}
		if !json.Valid([]byte(doc)) && n.repairs&RepairUTF8 == 0 {
			t.Fatalf("%q accepted, but it is not JSON", doc)
		}
		if !json.Valid(got) {
			t.Fatalf("%q rendered as %q, which is not JSON", doc, got)
		}
		again, err := n.Append(nil, got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", doc, got, again, err)
		}
	})
}

// BenchmarkJSONBText renders a parcel's properties (a dozen typed
// attributes, as the bench layer has them).
func BenchmarkJSONBText(b *testing.B) {
	doc := []byte(`{"pin":"0000012345","owner":"OWNER 12345","site_address":"145 MAIN ST","zoning":"R-4","land_use":"single family","acres":0.45,"assessed_value":245000,"year_built":1987,"bedrooms":3,"exempt":false,"deed_date":"2011-05-17","township":"T7"}`)
	var n Normalizer
	var out []byte
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		var err error
		if out, err = n.Append(out[:0], doc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestJSONBTextRepairs: what jsonb cannot hold becomes U+FFFD, in keys and
// values, and each kind of repair is reported; the rest of the string is
// kept as it is. What has no faithful repair stays an error.
func TestJSONBTextRepairs(t *testing.T) {
	const r = "\uFFFD"
	for _, c := range []struct {
		in, want string
		repairs  Repairs
	}{
		{"\"caf\xe9\"", `"caf` + r + `"`, RepairUTF8},
		{"\"\xed\xa0\x80\"", `"` + r + r + r + `"`, RepairUTF8}, // a surrogate encoded in UTF-8
		{"\"\xe2\x82\"", `"` + r + r + `"`, RepairUTF8},         // a truncated sequence
		{`"a\u0000b"`, `"a` + r + `b"`, RepairNUL},
		{`{"k\u0000":1}`, `{"k` + r + `": 1}`, RepairNUL},
		{`"\ud800"`, `"` + r + `"`, RepairSurrogate},
		{`"\udc00x"`, `"` + r + `x"`, RepairSurrogate},
		{`"\ud800\u0041"`, `"` + r + `A"`, RepairSurrogate},
		{`"\ud800\ud83d\ude00"`, `"` + r + "\U0001F600" + `"`, RepairSurrogate},
		{`"\ud800\\"`, `"` + r + `\\"`, RepairSurrogate},
		{"{\"\xff\":\"\\u0000\",\"s\":\"\\udfff\"}", `{"s": "` + r + `", "` + r + `": "` + r + `"}`, RepairUTF8 | RepairNUL | RepairSurrogate},
		{`"\ud83d\ude00"`, `"` + "\U0001F600" + `"`, 0},
	} {
		var n Normalizer
		got, err := n.Append(nil, []byte(c.in))
		if err != nil || string(got) != c.want || n.repairs != c.repairs {
			t.Errorf("%q: %q, repairs %03b, %v; want %q, repairs %03b", c.in, got, n.repairs, err, c.want, c.repairs)
		}
	}
	for _, in := range []string{`{"a":`, `"\ud800\uZZZZ"`, "\"a\x00\"", `1e2000000000`} {
		var n Normalizer
		if got, err := n.Append(nil, []byte(in)); err == nil {
			t.Errorf("%q: accepted as %q, want an error", in, got)
		}
	}
}
