package config

import (
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/wfs"
)

func TestArcGISFeedConfig(t *testing.T) {
	t.Parallel()
	const y = `
jurisdictions:
  - id: wake
    feeds:
      - id: parcels
        kind: arcgis
        url: https://maps.example.org/arcgis/rest/services/Parcels/FeatureServer/3
        where: "STATUS = 'ACTIVE'"
        out_fields: PIN,OWNER
        token: ${WAKE_TOKEN}
        page_size: 500
        id_property: PIN
      - {id: roads, kind: arcgis, url: "https://maps.example.org/arcgis/rest/services/Roads/MapServer/0"}
`
	cfg := mustParse(t, y, map[string]string{"WAKE_TOKEN": "tok-secret"})
	f := cfg.Feeds()[0]
	l := f.Layer()
	if s, _ := l.Settings.(arcgis.Settings); l.Kind != arcgis.Kind || s.Where != "STATUS = 'ACTIVE'" || s.OutFields != "PIN,OWNER" || l.PageSize != 500 || l.IDProperty != "PIN" {
		t.Errorf("layer %+v", l)
	}
	if l.Headers[arcgis.TokenHeader] != "Bearer tok-secret" {
		t.Errorf("token header %q", l.Headers[arcgis.TokenHeader])
	}
	if strings.Contains(l.LogValue().String(), "tok-secret") {
		t.Error("the token is in the layer's log value")
	}
	roads := cfg.Feeds()[1].Layer()
	if roads.PageSize != 0 || roads.Settings.(arcgis.Settings).Where != "" || len(roads.Headers) != 0 {
		t.Errorf("defaults: %+v (page size 0 means the layer's maxRecordCount)", roads)
	}
}

func TestArcGISFeedConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ feed, want string }{
		{`{id: a, kind: arcgis, url: "https://h/arcgis/rest/services/P/FeatureServer"}`, "ends with /FeatureServer/N or /MapServer/N"},
		{`{id: a, kind: arcgis, url: "https://h/arcgis/rest/services/P/FeatureServer/0?token=abc"}`, "put it in the feed's token:"},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", token: "literal"}`, "write the token as ${VARIABLE}"},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", token: "${EMPTY}"}`, "empty or holds white space"},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", where: " "}`, "where: empty"},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", out_fields: "A,,B"}`, "has an empty name"},
		{`{id: a, kind: wfs, url: "https://h/wfs", type_name: x, where: "1=1"}`, "only an arcgis feed has where"},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", page_size: -1}`, "must be 0"},
	}
	for _, c := range cases {
		y := "jurisdictions:\n  - id: j\n    feeds:\n      - " + c.feed + "\n"
		_, err := Parse("t.yaml", []byte(y), func(k string) (string, bool) { return "", k == "EMPTY" })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.feed, err, c.want)
		}
	}
	// The WFS-only settings are warned about, not fatal.
	cfg := mustParse(t, "jurisdictions:\n  - id: j\n    feeds:\n      - {id: a, kind: arcgis, url: \"https://h/s/MapServer/2\", type_name: x, sort_by: y}\n", nil)
	var warns []string
	for _, w := range cfg.Warnings {
		warns = append(warns, w.Error())
	}
	if got := strings.Join(warns, "\n"); !strings.Contains(got, "type_name: ignored for an arcgis feed") || !strings.Contains(got, "sort_by: ignored") {
		t.Errorf("warnings:\n%s", got)
	}
}

// TestArcGISIncrementalConfig: incremental, full_every and edit_skew are
// read from the defaults block, each jurisdiction and each arcgis feed,
// the nearest winning; unset, they take the kind's defaults. A kind's
// default keys work per jurisdiction for every kind (wfs's version too).
func TestArcGISIncrementalConfig(t *testing.T) {
	t.Parallel()
	const y = `
defaults:
  full_every: 12h
  edit_skew: 90s
  version: 1.1.0
jurisdictions:
  - id: wake
    feeds:
      - {id: a, kind: arcgis, url: "https://h/s/FeatureServer/0"}
      - {id: b, kind: arcgis, url: "https://h/s/FeatureServer/1", incremental: "off", full_every: 1h}
  - id: durham
    full_every: 6h
    incremental: "off"
    version: 2.0.0
    feeds:
      - {id: c, kind: arcgis, url: "https://h/s/FeatureServer/2"}
      - {id: d, kind: arcgis, url: "https://h/s/FeatureServer/3", incremental: auto, full_every: 2h}
      - {id: e, kind: wfs, url: "https://h/wfs", type_name: x}
  - id: orange
    feeds:
      - {id: f, kind: wfs, url: "https://h/wfs", type_name: x}
`
	cfg := mustParse(t, y, nil)
	feeds := cfg.Feeds()
	a := feeds[0].Layer().Settings.(arcgis.Settings)
	b := feeds[1].Layer().Settings.(arcgis.Settings)
	if a.Incremental != "" || a.FullEvery != 12*time.Hour || a.EditSkew != 90*time.Second {
		t.Errorf("feed a: %+v; want the defaults block's", a)
	}
	if b.Incremental != arcgis.IncrementalOff || b.FullEvery != time.Hour || b.EditSkew != 90*time.Second {
		t.Errorf("feed b: %+v; want its own incremental and full_every", b)
	}
	c := feeds[2].Layer().Settings.(arcgis.Settings)
	d := feeds[3].Layer().Settings.(arcgis.Settings)
	if c.Incremental != arcgis.IncrementalOff || c.FullEvery != 6*time.Hour || c.EditSkew != 90*time.Second {
		t.Errorf("feed c: %+v; want durham's incremental and full_every, the defaults' edit_skew", c)
	}
	if d.Incremental != arcgis.IncrementalAuto || d.FullEvery != 2*time.Hour {
		t.Errorf("feed d: %+v; want its own over durham's", d)
	}
	if e, f := feeds[4].Layer().Settings.(wfs.Settings), feeds[5].Layer().Settings.(wfs.Settings); e.Version != "2.0.0" || f.Version != "1.1.0" {
		t.Errorf("wfs versions: durham's feed %q, orange's %q; want durham's 2.0.0 and the defaults' 1.1.0", e.Version, f.Version)
	}
	for _, bad := range []struct{ feed, want string }{
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", incremental: sometimes}`, `write "auto"`},
		{`{id: a, kind: arcgis, url: "https://h/s/FeatureServer/0", full_every: 0s}`, "must be more than 0"},
		{`{id: a, kind: wfs, url: "https://h/wfs", type_name: x, full_every: 1h}`, "full_every"},
	} {
		y := "jurisdictions:\n  - id: j\n    feeds:\n      - " + bad.feed + "\n"
		_, err := Parse("t.yaml", []byte(y), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.feed, err, bad.want)
		}
	}
}
