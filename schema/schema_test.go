package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func profileOf(t *testing.T, props ...string) *Profile {
	t.Helper()
	p := &Profile{}
	for _, s := range props {
		if err := p.AddFeature([]byte(s), "Point"); err != nil {
			t.Fatalf("AddFeature(%s): %v", s, err)
		}
	}
	return p
}

func TestInferWidening(t *testing.T) {
	cases := []struct {
		values []string
		want   Type
	}{
		{[]string{`1`, `2`, `null`}, BigInt},
		{[]string{`1`, `2.5`}, Numeric},
		{[]string{`1e2`}, BigInt},
		{[]string{`1.0`}, Numeric},
		{[]string{`1.50e1`}, Numeric},
		{[]string{`99999999999999999999`}, Numeric},
		{[]string{`true`, `false`}, Boolean},
		{[]string{`true`, `1`}, Text},
		{[]string{`"2021-01-02"`}, Date},
		{[]string{`"2021-02-30"`}, Text},
		{[]string{`"2021-01-02"`, `"2021-01-02T10:00:00Z"`}, Timestamp},
		{[]string{`"2021-01-02 10:00"`}, Timestamp},
		{[]string{`"02134"`, `"12"`}, Text},
		{[]string{`1`, `"a"`}, Text},
		{[]string{`{"a":1}`, `1`}, JSON},
		{[]string{`[1,2]`}, JSON},
		{[]string{`null`}, Text},
	}
	for _, c := range cases {
		var props []string
		for _, v := range c.values {
			props = append(props, `{"x":`+v+`}`)
		}
		p := profileOf(t, props...)
		if got := Infer(p.Columns[0].Kinds); got != c.want {
			t.Errorf("Infer(%v) = %s, want %s (kinds %v)", c.values, got, c.want, p.Columns[0].Kinds)
		}
	}
}

func TestNumberKind(t *testing.T) {
	for s, want := range map[string]ValueKind{
		"0": KInt, "-0": KInt, "0e5": KInt, "9223372036854775807": KInt, "-9223372036854775808": KInt,
		"9223372036854775808": KNum, "1.5": KNum, "15e-1": KNum, "1500e-2": KNum, "1.5e1": KInt, "1e19": KNum, "1e18": KInt,
		"1e999999999": KNum,
	} {
		if got, _ := NumberKind(s); got != want {
			t.Errorf("NumberKind(%s) = %s, want %s", s, got, want)
		}
	}
	if _, ood := NumberKind("1e400"); !ood {
		t.Error("1e400 fits double precision?")
	}
	// The bounds are the exact numbers, not the doubles they round to.
	for s, want := range map[string]bool{
		"1e308": false, "1.00000000000000000001e308": true, "-1.00000000000000000001e308": true,
		"0.99999999999999999999e308": false, "1e-307": false, "9.99999999999999999999e-308": true, "-1e-307": false,
	} {
		if _, ood := NumberKind(s); ood != want {
			t.Errorf("NumberKind(%s): out of double %v, want %v", s, ood, want)
		}
	}
}

func TestProfileMergeAndNulls(t *testing.T) {
	a := profileOf(t, `{"a":1,"b":"x"}`, `{"a":2}`)
	b := profileOf(t, `{"c":true}`)
	a.Merge(b)
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	s := Build(&back, nil, nil)
	if s.Features != 3 || len(s.Columns) != 3 {
		t.Fatalf("schema %+v", s)
	}
	want := []Column{{Name: "a", Type: BigInt, Source: FromInferred, NonNull: 2}, {Name: "b", Type: Text, Source: FromInferred, NonNull: 1},
		{Name: "c", Type: Boolean, Source: FromInferred, NonNull: 1}}
	for i, c := range s.Columns {
		if c != want[i] {
			t.Errorf("column %d = %+v, want %+v", i, c, want[i])
		}
	}
	if got := back.Columns[0].Kinds[KNull]; got != 1 {
		t.Errorf("a: %d nulls, want 1", got)
	}
	if got := back.Columns[2].Kinds[KNull]; got != 2 {
		t.Errorf("c: %d nulls, want 2", got)
	}
}

func TestBuildDeclaredAndUnconverted(t *testing.T) {
	p := profileOf(t, `{"n":"12","z":"abc","extra":1}`, `{"n":"x"}`)
	d := &Declared{Columns: []Column{{Name: "z", Type: Text}, {Name: "n", Type: BigInt}, {Name: "gone", Type: Date}}}
	s := Build(p, d, nil)
	var names []string
	for _, c := range s.Columns {
		names = append(names, c.Name+":"+string(c.Type)+":"+string(c.Source))
	}
	if got := strings.Join(names, ","); got != "z:text:declared,n:bigint:declared,gone:date:declared,extra:bigint:inferred" {
		t.Errorf("columns %s", got)
	}
	if n, _ := s.Column("n"); n.Unconverted != 1 || n.NonNull != 2 {
		t.Errorf("n: %+v, want 1 unconverted of 2", n)
	}
	// Without a declaration, a column declared before keeps its type.
	s = Build(p, nil, []Column{{Name: "n", Type: BigInt, Source: FromDeclared}})
	if n, _ := s.Column("n"); n.Type != BigInt || n.Source != FromDeclared {
		t.Errorf("kept column %+v", n)
	}
}

// TestBuildIDAndLooseTypes: the id the description declares takes its
// place among the columns when the features carry it (pygeoapi's fid),
// none when they do not; a loose declared type every value contradicts
// gives way to the narrower type they prove, the declared one recorded;
// one value that the narrower type would not hold keeps the declared type.
func TestBuildIDAndLooseTypes(t *testing.T) {
	columns := func(s Schema) string {
		var out []string
		for _, c := range s.Columns {
			out = append(out, c.Name+":"+string(c.Type)+":"+string(c.Source)+":"+string(c.DeclaredType))
		}
		return strings.Join(out, ",")
	}
	d := &Declared{ID: "fid", Columns: []Column{
		{Name: "fid", Type: BigInt}, {Name: "pop", Type: Numeric, Loose: true}, {Name: "area", Type: Double, Loose: true},
		{Name: "opened", Type: Text, Loose: true}, {Name: "stamp", Type: Text, Loose: true}, {Name: "code", Type: Text, Loose: true},
		{Name: "rate", Type: Numeric}, {Name: "untyped"}, {Name: "absent"},
	}}
	p := profileOf(t,
		`{"pop":12,"area":1.5,"opened":"2020-01-02","stamp":"2020-01-02T10:00:00Z","code":"02134","rate":3,"untyped":true,"fid":1,"extra":"x"}`,
		`{"pop":null,"area":2,"opened":"2021-03-04","stamp":"2021-03-04","code":"x","rate":4,"untyped":false,"fid":2,"extra":"y"}`)
	want := "fid:bigint:declared:,pop:bigint:inferred:numeric,area:double precision:declared:," +
		"opened:date:inferred:text,stamp:timestamptz:inferred:text,code:text:declared:,rate:numeric:declared:," +
		"untyped:boolean:inferred:,extra:text:inferred:"
	if got := columns(Build(p, d, nil)); got != want {
		t.Errorf("columns\n got %s\nwant %s", got, want)
	}
	// A server that keeps the id out of the properties: no column.
	p = profileOf(t, `{"pop":1}`)
	if got := columns(Build(p, d, nil)); !strings.HasPrefix(got, "pop:bigint:inferred:numeric,area:double precision:declared:,") {
		t.Errorf("without fid in the properties: %s", got)
	}
}

func TestGeometryType(t *testing.T) {
	for _, c := range []struct {
		types []string
		want  string
	}{
		{nil, ""}, {[]string{""}, ""}, {[]string{"Point", ""}, "Point"},
		{[]string{"Polygon", "MultiPolygon"}, "MultiPolygon"}, {[]string{"Point", "Polygon"}, "Geometry"},
		{[]string{"Point", "MultiPoint", "LineString"}, "Geometry"},
	} {
		p := &Profile{}
		for _, g := range c.types {
			_ = p.AddFeature(nil, g)
		}
		if got := p.GeometryType(); got != c.want {
			t.Errorf("GeometryType(%v) = %q, want %q", c.types, got, c.want)
		}
	}
}

func TestDiff(t *testing.T) {
	old := Schema{Features: 10, Columns: []Column{
		{Name: "a", Type: BigInt, NonNull: 10}, {Name: "b", Type: Text, NonNull: 6}, {Name: "c", Type: Text, NonNull: 3},
		{Name: "gone", Type: Date, NonNull: 1}}}
	cur := Schema{Features: 10, Columns: []Column{
		{Name: "a", Type: Text, NonNull: 10}, {Name: "b", Type: Text, NonNull: 0}, {Name: "c", Type: Text, NonNull: 0},
		{Name: "new", Type: Boolean, NonNull: 1}}}
	got := Describe(Diff(old, cur))
	want := `schema: "a" retyped bigint → text; "b" null collapse: non-null 60% → 0%; "new" added (boolean); "gone" removed (was date)`
	if got != want {
		t.Errorf("Diff:\n got %s\nwant %s", got, want)
	}
	if d := Diff(old, old); len(d) != 0 {
		t.Errorf("no change: %v", d)
	}
}

func TestAppendTyped(t *testing.T) {
	for _, c := range []struct {
		t    Type
		in   string
		want string
		ok   bool
	}{
		{BigInt, "12", "12", true}, {BigInt, " 007 ", "7", true}, {Double, "-00.50", "-0.50", true},
		{Double, "1.5E+2", "1.5E+2", true}, {Double, "NaN", "", false}, {Double, "INF", "", false},
		{Numeric, "+5", "", false}, {Boolean, "1", "true", true}, {Boolean, "false", "false", true},
		{Boolean, "yes", "", false}, {Text, "12", "", false}, {Date, "2020-01-01", "", false},
	} {
		got, ok := AppendTyped(nil, c.t, []byte(c.in))
		if ok != c.ok || string(got) != c.want {
			t.Errorf("AppendTyped(%s, %q) = %q, %v; want %q, %v", c.t, c.in, got, ok, c.want, c.ok)
		}
		if ok && !json.Valid(got) {
			t.Errorf("AppendTyped(%s, %q) = %q: not JSON", c.t, c.in, got)
		}
	}
}

const ncXSD = `<?xml version='1.0' encoding="UTF-8" ?>
<schema targetNamespace="http://mapserver.gis.umn.edu/mapserver" xmlns:ms="http://mapserver.gis.umn.edu/mapserver"
   xmlns="http://www.w3.org/2001/XMLSchema" xmlns:gml="http://www.opengis.net/gml/3.2" elementFormDefault="qualified" version="0.1" >
  <import namespace="http://www.opengis.net/gml/3.2" schemaLocation="http://schemas.opengis.net/gml/3.2.1/gml.xsd" />
  <element name="nc" type="ms:ncType" substitutionGroup="gml:AbstractFeature" />
  <complexType name="ncType"><complexContent><extension base="gml:AbstractFeatureType"><sequence>
          <element name="msGeometry" type="gml:MultiSurfacePropertyType" minOccurs="0" maxOccurs="1"/>
          <element name="AREA" minOccurs="0" type="double"/>
          <element name="NAME" minOccurs="0" type="string"/>
          <element name="CRESS_ID" minOccurs="0" type="integer"/>
          <element name="CODE" minOccurs="0"><simpleType><restriction base="string"><maxLength value="5"/></restriction></simpleType></element>
          <element name="BUILT" minOccurs="0" type="xsd:date"/>
  </sequence></extension></complexContent></complexType>
</schema>`

func TestFromXSD(t *testing.T) {
	d, err := FromXSD(strings.NewReader(ncXSD), "ms:nc")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Columns {
		got = append(got, c.Name+":"+string(c.Type))
	}
	if s := strings.Join(got, ","); s != "AREA:double precision,NAME:text,CRESS_ID:bigint,CODE:text,BUILT:date" {
		t.Errorf("columns %s", s)
	}
	if d.Geometry != "MultiPolygon" {
		t.Errorf("geometry %q", d.Geometry)
	}
	if _, err := FromXSD(strings.NewReader(`<html/>`), "nc"); err == nil {
		t.Error("an HTML page read as a schema")
	}
}

// FuzzScanObject: the scanner never panics, accepts every JSON object
// and finds the names encoding/json finds. It need not refuse every
// invalid document: the decoders hand it valid JSON.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,{"c":"d"}],"e":"2020-01-01"}`, `{"\u00e9":null}`, `{"a":"\"x"}`, `[1]`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p := &Profile{}
		err := p.AddFeature(in, "")
		var m map[string]json.RawMessage
		// The decoders hand over valid UTF-8 (invalid bytes become U+FFFD).
		if !utf8.Valid(in) || json.Unmarshal(in, &m) != nil || m == nil {
			return
		}
		if err != nil {
			t.Fatalf("refused valid object %q: %v", in, err)
		}
		if len(p.Columns) != len(m) {
			t.Fatalf("%q: %d columns, encoding/json finds %d", in, len(p.Columns), len(m))
		}
		for _, c := range p.Columns {
			if _, ok := m[c.Name]; !ok {
				t.Fatalf("%q: column %q not in the object", in, c.Name)
			}
		}
	})
}

func TestViewColumns(t *testing.T) {
	long := strings.Repeat("é", 40)
	got := ViewColumns([]string{"a", "feed", "feed_attr", "", "_", long, long + "x"})
	if got[0] != "a" || got[1] != "feed_attr" || got[2] != "feed_attr_2" || got[3] != "_" || got[4] != "__2" {
		t.Errorf("ViewColumns = %q", got)
	}
	if len(got[5]) > 63 || len(got[6]) > 63 || got[5] == got[6] || !utf8.ValidString(got[5]) {
		t.Errorf("long names: %q, %q", got[5], got[6])
	}
	// The layer table's bookkeeping columns begin ingestd_.
	got = ViewColumns([]string{"ingestd_hash", "ingestd_hash_attr", "ingestd_geom", "ingestd"})
	if got[0] != "ingestd_hash_attr" || got[1] != "ingestd_hash_attr_2" || got[2] != "ingestd_geom_attr" || got[3] != "ingestd" {
		t.Errorf("ViewColumns = %q", got)
	}
}

// BenchmarkProfileAddFeature profiles a parcel's properties (the same
// document as internal/jsonbtext's BenchmarkJSONBText, which staging already
// runs per feature): the staging cost typed layers add.
func BenchmarkProfileAddFeature(b *testing.B) {
	doc := []byte(`{"pin":"0000012345","owner":"OWNER 12345","site_address":"145 MAIN ST","zoning":"R-4","land_use":"single family","acres":0.45,"assessed_value":245000,"year_built":1987,"bedrooms":3,"exempt":false,"deed_date":"2011-05-17","township":"T7"}`)
	var p Profile
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := p.AddFeature(doc, "MultiPolygon"); err != nil {
			b.Fatal(err)
		}
	}
}

// A sparse column is no drift: all null keeps its type, and a column that
// was all null gets one without a retype.
func TestSparseColumnsDoNotDrift(t *testing.T) {
	stored := Build(profileOf(t, `{"a":1,"b":null}`, `{"a":2,"b":null}`), nil, nil)
	allNull := Build(profileOf(t, `{"a":null,"b":null}`), nil, stored.Columns)
	if a, _ := allNull.Column("a"); a.Type != BigInt {
		t.Errorf("all-null a: %s, want bigint kept", a.Type)
	}
	filled := Build(profileOf(t, `{"a":1,"b":5}`, `{"a":2,"b":6}`), nil, stored.Columns)
	if d := Diff(stored, filled); len(d) != 0 {
		t.Errorf("b filled for the first time: %v", d)
	}
	// But a collapse is still one.
	if d := Diff(stored, allNull); len(d) != 1 || d[0].What != NullCollapse || d[0].Column != "a" {
		t.Errorf("a collapsed: %v", d)
	}
}

// FuzzFromXSD: any document either describes a layer or is refused with
// an error; nothing panics, and every column has a type.
func FuzzFromXSD(f *testing.F) {
	f.Add([]byte(ncXSD), "nc")
	f.Add([]byte(`<schema><complexType name="x"><sequence><element name="a" type="int"/></sequence></complexType></schema>`), "y")
	f.Add([]byte(`<schema/>`), "")
	f.Fuzz(func(t *testing.T, doc []byte, typeName string) {
		d, err := FromXSD(bytes.NewReader(doc), typeName)
		if err != nil {
			return
		}
		for _, c := range d.Columns {
			if !c.Type.Valid() {
				t.Fatalf("column %q of type %q", c.Name, c.Type)
			}
		}
	})
}

// TestProfileSubtract: a snapshot's profile less the versions a delta
// replaces, plus the new ones, is the profile of the snapshot the delta
// makes, as far as Build tells; counts never go below zero.
func TestProfileSubtract(t *testing.T) {
	kept := []string{`{"a":1,"b":"x","d":"2026-01-02"}`, `{"a":2,"b":null,"d":"2026-01-03"}`}
	old := []string{`{"a":"n/a","b":"y","d":"2026-01-04"}`}
	repl := []string{`{"a":3,"b":"z","d":"2026-01-05"}`}
	whole := profileOf(t, append(append([]string{}, kept...), old...)...)
	// Through JSON, as feed_schemas.profile holds it.
	raw, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	var stored Profile
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	stored.Subtract(profileOf(t, old...))
	stored.Merge(profileOf(t, repl...))
	got := Build(&stored, nil, nil)
	want := Build(profileOf(t, append(append([]string{}, kept...), repl...)...), nil, nil)
	if got.Features != want.Features || got.Geometry != want.Geometry || len(got.Columns) != len(want.Columns) {
		t.Fatalf("derived schema %+v, want %+v", got, want)
	}
	for i := range want.Columns {
		if got.Columns[i] != want.Columns[i] {
			t.Errorf("column %d = %+v, want %+v", i, got.Columns[i], want.Columns[i])
		}
	}
	// Before the subtraction "a" held text ("n/a"): the derived type is
	// the narrower one, which a profile that only grows could not give.
	if got.Columns[0].Type != BigInt {
		t.Errorf("a is %s after its only text value was replaced, want bigint", got.Columns[0].Type)
	}
	var none Profile
	none.Subtract(profileOf(t, old...))
	if none.Features != 0 || len(none.geoms) != 0 {
		t.Errorf("subtracting from an empty profile: %d features, geometries %v", none.Features, none.geoms)
	}
}

// TestProfileRepeatedKeyCountsLast: jsonb keeps a repeated key's last
// value, so the profile counts that one (a layer fill that trusts the
// profile casts what jsonb holds).
func TestProfileRepeatedKeyCountsLast(t *testing.T) {
	p := profileOf(t, `{"a":1,"a":"+5"}`, `{"a":2}`)
	c := p.column("a")
	if c == nil || c.Kinds[KNum]+c.Kinds[KInt] != 1 || c.nonNull() != 2 {
		t.Fatalf("a: kinds %v; want the first feature's last value (a string) and the second's integer", c.Kinds)
	}
	if s := Build(p, nil, nil); s.Columns[0].Type == BigInt {
		t.Errorf("a typed %s although jsonb holds \"+5\" for the first feature", s.Columns[0].Type)
	}
}

// TestNumberClass: a number's scale as numeric displays it, or wide when
// a double keeps fewer of its significant digits.
func TestNumberClass(t *testing.T) {
	for s, want := range map[string]int32{
		"0": 0, "-0": 0, "1900": 0, "1e3": 0, "1.5e1": 0, "0.10": 2, "1.0": 1, "-2.25e-3": 5, "0.000": 3,
		"1.50e1": 1, "1e20": 0, "1E+2": 0, "123456789012345": 0, "1234567890123456": wideForDouble,
		"0.1234567890123456": wideForDouble, "1.23456789012345": 14, "100000000000000000000": 0,
		"3.14159265358979323846": wideForDouble, "1e-2000": wideForDouble,
	} {
		if got := numberClass(s); got != want {
			t.Errorf("numberClass(%s) = %d, want %d", s, got, want)
		}
	}
}

// TestDoubleScale: a double column has a scale when its numbers share
// one and fit; merged, subtracted, through JSON and with a repeated key
// the counts hold; a profile stored before scales were counted has none.
func TestDoubleScale(t *testing.T) {
	scaleOf := func(p *Profile) (int, bool) {
		t.Helper()
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Profile
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		return back.column("a").DoubleScale()
	}
	cases := []struct {
		docs  []string
		scale int
		ok    bool
	}{
		{[]string{`{"a":0.10}`, `{"a":1.25}`, `{"a":null}`, `{"b":1}`}, 2, true},
		{[]string{`{"a":7}`, `{"a":1e3}`}, 0, true},
		{[]string{`{"a":0.10}`, `{"a":1.5}`}, 0, false},
		{[]string{`{"a":0.10}`, `{"a":1}`}, 0, false},
		{[]string{`{"a":0.1234567890123456}`}, 0, false},
		{[]string{`{"a":1e400}`}, 0, false},
		{[]string{`{"a":"x"}`}, 0, false},
		{[]string{`{"a":1.5,"a":2.25}`, `{"a":0.75}`}, 2, true},
	}
	for _, c := range cases {
		scale, ok := scaleOf(profileOf(t, c.docs...))
		if ok != c.ok || (ok && scale != c.scale) {
			t.Errorf("%v: scale %d, %v; want %d, %v", c.docs, scale, ok, c.scale, c.ok)
		}
	}
	p := profileOf(t, `{"a":0.10}`, `{"a":2.5}`)
	if _, ok := scaleOf(p); ok {
		t.Fatalf("mixed scales give a scale")
	}
	p.Subtract(profileOf(t, `{"a":2.5}`))
	p.Merge(profileOf(t, `{"a":3.75}`))
	if scale, ok := scaleOf(p); !ok || scale != 2 {
		t.Errorf("after the 2.5 was replaced by 3.75: scale %d, %v; want 2", scale, ok)
	}
	var old Profile
	if err := json.Unmarshal([]byte(`{"n":1,"c":[{"name":"a","kinds":{"num":1}}]}`), &old); err != nil {
		t.Fatal(err)
	}
	if _, ok := old.column("a").DoubleScale(); ok {
		t.Errorf("a profile stored without scales gives a scale")
	}
}
