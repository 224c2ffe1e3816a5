package arcgis

import "testing"

// TestEditDate: the edit date is read from the member of that name at the
// top of the properties, exactly to the millisecond; the same text inside
// a string value, a null or a value that is not a timestamp is none.
func TestEditDate(t *testing.T) {
	for _, c := range []struct {
		props string
		want  int64
		ok    bool
	}{
		{`{"A":1,"EditDate":"2026-12-01T18:00:00.123Z"}`, 1796148000123, true},
		{`{"EditDate":"2026-12-01T18:00:00Z","B":2}`, 1796148000000, true},
		{`{ "EditDate": "1970-01-01T00:00:00.001Z"}`, 1, true},
		{`{"NOTE":"\"EditDate\":\"2030-01-01T00:00:00Z\"","EditDate":"2026-12-01T18:00:00Z"}`, 1796148000000, true},
		{`{"NOTE":"x \"EditDate\":\"2030-01-01T00:00:00Z\""}`, 0, false},
		{`{"EditDate":null}`, 0, false},
		{`{"EditDate":"yesterday"}`, 0, false},
		{`{"OtherEditDate":"2026-12-01T18:00:00Z"}`, 0, false},
	} {
		got, ok := editDate([]byte(c.props), "EditDate")
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v; want %d %v", c.props, got, ok, c.want, c.ok)
		}
	}
}

// TestLayerVersion: a version reads back as written, and one stored before
// incremental refresh reads as its base alone.
func TestLayerVersion(t *testing.T) {
	base := "lastEditDate=1700000000000;count=5;fields=abc"
	for _, v := range []layerVersion{
		{base: base},
		{base: base, editField: "EditDate", watermark: 1764612000123, fullAt: 1764600000000},
		{base: base, serverGen: 42, fullAt: 7},
		{base: base, editField: "Edit@Date", watermark: 1, serverGen: 2, fullAt: 3},
		{editField: "EditDate", watermark: 5, fullAt: 6},
	} {
		if got := parseLayerVersion(v.String()); got != v {
			t.Errorf("%q read back as %+v; want %+v", v.String(), got, v)
		}
	}
	if got := parseLayerVersion(base); got != (layerVersion{base: base}) {
		t.Errorf("an old version read as %+v", got)
	}
}
