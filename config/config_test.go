package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/yamlconf"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/wfs"
)

// envOf returns an env lookup backed by m, for tests that must not depend on the
// process environment.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func parseString(t *testing.T, src string, env map[string]string) (*Config, error) {
	t.Helper()
	return Parse("test.yaml", []byte(src), envOf(env))
}

func mustParse(t *testing.T, src string, env map[string]string) *Config {
	t.Helper()
	cfg, err := parseString(t, src, env)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return cfg
}

func configErrors(t *testing.T, err error) Errors {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T (%v), want Errors", err, err)
	}
	return errs
}

func TestLoadConfigValid(t *testing.T) {
	t.Parallel()
	cfg, err := Load(filepath.Join("..", "testdata", "configs", "valid.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("valid.yaml should load without warnings, got:\n%v", Errors(cfg.Warnings))
	}
	if cfg.MaxInFlight != 8 {
		t.Errorf("MaxInFlight = %d, want 8", cfg.MaxInFlight)
	}
	// File defaults override built-in ones; unset fields keep the built-in value.
	wantDefaults := Defaults{
		Schedule:        "0 */6 * * *",
		Timeout:         Duration(15 * time.Minute),
		RequestTimeout:  Duration(60 * time.Second),
		QueueTimeout:    Duration(30 * time.Minute),
		PageSize:        500,
		Kinds:           map[string]any{"wfs": wfs.Settings{Version: "2.0.0", OutputFormat: "application/json"}},
		Breaker:         breaker.DefaultPolicy(),
		InvalidGeometry: InvalidRepair,
		InvalidFeature:  InvalidRepair,
		SchemaChange:    SchemaEvolve,
		Redirects:       RedirectsSameOrigin,
		Limits:          feature.DefaultLimits(),
	}
	if !reflect.DeepEqual(cfg.Defaults, wantDefaults) {
		t.Errorf("Defaults = %+v, want %+v", cfg.Defaults, wantDefaults)
	}

	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	// Feed fields only: Location and Cron are checked separately.
	want := []Feed{
		{
			ID: "parcels", Kind: "wfs", URL: "https://gis.travis.example.gov/geoserver/wfs",
			Settings: wfs.Settings{Version: "2.0.0", OutputFormat: "application/json", TypeName: "tcad:parcels", SortBy: "prop_id"},
			PageSize: 500, IDProperty: "prop_id", Schedule: "0 */6 * * *",
			Timeout: Duration(15 * time.Minute), RequestTimeout: Duration(time.Minute), QueueTimeout: Duration(30 * time.Minute),
			Jurisdiction: "travis-county", InvalidGeometry: InvalidRepair,
			InvalidFeature: InvalidRepair, Redirects: RedirectsSameOrigin, Limits: feature.DefaultLimits(), SchemaChange: SchemaEvolve,
		},
		{
			ID: "roads", Kind: "wfs", URL: "https://gis.travis.example.gov/geoserver/wfs",
			Settings: wfs.Settings{Version: "1.1.0", OutputFormat: "application/json", TypeName: "tc:roads", SortBy: "objectid"},
			PageSize: 2000, Schedule: "@daily",
			Timeout: Duration(15 * time.Minute), RequestTimeout: Duration(2 * time.Minute), QueueTimeout: Duration(30 * time.Minute),
			Jurisdiction: "travis-county", InvalidGeometry: InvalidRepair,
			InvalidFeature: InvalidRepair, Redirects: RedirectsSameOrigin, Limits: feature.DefaultLimits(), SchemaChange: SchemaEvolve,
		},
		{
			// geojson: WFS-only settings are not filled from defaults; "$${" is a literal "${".
			ID: "zoning", Kind: "geojson", URL: "https://data.austin.example.gov/resource/zoning.geojson?${literal}=1",
			Schedule: "30 5 * * 1-5", Timeout: Duration(5 * time.Minute), RequestTimeout: Duration(time.Minute), QueueTimeout: Duration(30 * time.Minute),
			Jurisdiction: "austin", InvalidGeometry: InvalidRepair,
			InvalidFeature: InvalidRepair, Redirects: RedirectsSameOrigin, Limits: feature.DefaultLimits(), SchemaChange: SchemaEvolve,
		},
		{
			ID: "hydrants", Kind: "wfs", URL: "http://wfs.example.org:8080/ows",
			Settings: wfs.Settings{Version: "2.0.0", OutputFormat: "text/xml; subtype=gml/3.2", TypeName: "ex:hydrants", SortBy: "id"},
			PageSize: 500, Schedule: "@every 15m",
			Timeout: Duration(15 * time.Minute), RequestTimeout: Duration(time.Minute), QueueTimeout: Duration(30 * time.Minute),
			Jurisdiction: "example_utc", InvalidGeometry: InvalidRepair,
			InvalidFeature: InvalidRepair, Redirects: RedirectsSameOrigin, Limits: feature.DefaultLimits(), SchemaChange: SchemaEvolve,
		},
	}
	got := cfg.Feeds()
	if len(got) != len(want) {
		t.Fatalf("Feeds() has %d feeds, want %d", len(got), len(want))
	}
	for i, f := range got {
		if f.Cron == nil {
			t.Errorf("%s: Cron not parsed", f.Key())
		}
		wantLoc := chicago
		if f.Jurisdiction == "example_utc" {
			wantLoc = time.UTC
		}
		if f.Location.String() != wantLoc.String() {
			t.Errorf("%s: Location = %v, want %v", f.Key(), f.Location, wantLoc)
		}
		if f.LayerSchema != DefaultLayerIdent(f.Jurisdiction) || f.LayerName != DefaultLayerIdent(f.ID) {
			t.Errorf("%s: layer %s.%s, want the ids' defaults", f.Key(), f.LayerSchema, f.LayerName)
		}
		g := *f
		g.Cron, g.Location, g.LayerSchema, g.LayerName = nil, nil, "", ""
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("feed %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}

	f, ok := cfg.Feed("austin/zoning")
	if !ok || f.Key() != "austin/zoning" {
		t.Errorf(`Feed("austin/zoning") = %v, %v`, f, ok)
	}
	// The pointer refers into cfg, so callers see one feed, not a copy.
	if f != &cfg.Jurisdictions[1].Feeds[0] {
		t.Error("Feed returned a copy, want a pointer into the config")
	}
	for _, key := range []string{"austin", "austin/nope", "nope/zoning", ""} {
		if _, ok := cfg.Feed(key); ok {
			t.Errorf("Feed(%q) found a feed", key)
		}
	}
	if got := cfg.Jurisdictions[2].Location; got != time.UTC {
		t.Errorf("jurisdiction without timezone: Location = %v, want UTC", got)
	}
}

func TestBuiltinDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
jurisdictions:
  - id: j
    feeds:
      - id: f
        kind: wfs
        url: https://example.org/wfs
        type_name: a:b
        sort_by: id
`, nil)
	if cfg.MaxInFlight != DefaultMaxInFlight {
		t.Errorf("MaxInFlight = %d, want %d", cfg.MaxInFlight, DefaultMaxInFlight)
	}
	d := BuiltinDefaults()
	if !reflect.DeepEqual(cfg.Defaults, d) {
		t.Errorf("Defaults = %+v, want built-in %+v", cfg.Defaults, d)
	}
	f := cfg.Feeds()[0]
	s := f.Settings.(wfs.Settings)
	s.TypeName, s.SortBy = "", "" // the feed's own, not defaults
	if f.Schedule != d.Schedule || f.Timeout != d.Timeout || f.RequestTimeout != d.RequestTimeout ||
		f.PageSize != d.PageSize || s != d.Kinds["wfs"] {
		t.Errorf("feed did not inherit built-in defaults: %+v", *f)
	}
	if f.Location != time.UTC {
		t.Errorf("Location = %v, want UTC", f.Location)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("unexpected warnings:\n%v", Errors(cfg.Warnings))
	}
}

// TestPresenceOverridesDefault checks that an explicit zero or empty value on a feed
// wins over a non-zero default: page_size 0 means "no paging", output_format ""
// means "send none" (the server's default), version "" means the default version.
func TestPresenceOverridesDefault(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
defaults:
  page_size: 250
  version: 1.1.0
jurisdictions:
  - id: j
    feeds:
      - id: f
        kind: wfs
        url: https://example.org/wfs
        type_name: a:b
        page_size: 0
        output_format: ""
        version: ""
        timeout:
`, nil)
	f := cfg.Feeds()[0]
	if s := f.Settings.(wfs.Settings); f.PageSize != 0 || s.OutputFormat != "" || s.Version != "2.0.0" {
		t.Errorf("PageSize=%d OutputFormat=%q Version=%q, want 0, \"\", \"2.0.0\"", f.PageSize, s.OutputFormat, s.Version)
	}
	// A key with no value inherits, like an absent key.
	if f.Timeout != BuiltinDefaults().Timeout {
		t.Errorf("Timeout = %v, want the default", f.Timeout)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "jurisdictions[0].feeds[0].page_size" {
		t.Errorf("want one page_size warning, got:\n%v", Errors(cfg.Warnings))
	}
}

// base is a valid config; broken cases below are small edits of it, so that each
// case's line numbers can be read off the text.
const base = `jurisdictions:
  - id: county
    timezone: America/Chicago
    feeds:
      - id: parcels
        kind: wfs
        url: https://gis.example.org/wfs
        type_name: c:parcels
        sort_by: pin
`

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		env  map[string]string
		// want is the exact "file:line:col: field: " prefix plus a piece of the message.
		want string
	}{
		{
			name: "unknown key with suggestion",
			src:  strings.Replace(base, "type_name:", "typename:", 1),
			want: `test.yaml:8:9: jurisdictions[0].feeds[0].typename: unknown key "typename" (did you mean type_name?)`,
		},
		{
			name: "unknown key without suggestion",
			src:  base + "        colour: red\n",
			want: `test.yaml:10:9: jurisdictions[0].feeds[0].colour: unknown key "colour"`,
		},
		{
			name: "unknown top-level key",
			src:  "jurisdiction:\n  - id: x\n",
			want: `test.yaml:1:1: jurisdiction: unknown key "jurisdiction" (did you mean jurisdictions?)`,
		},
		{
			name: "bad cron spec",
			src:  base + "        schedule: \"*/5 * *\"\n",
			want: `test.yaml:10:19: jurisdictions[0].feeds[0].schedule: bad cron spec "*/5 * *": expected exactly 5 fields, found 3`,
		},
		{
			name: "bad cron field",
			src:  base + "        schedule: \"0 25 * * *\"\n",
			want: `test.yaml:10:19: jurisdictions[0].feeds[0].schedule: bad cron spec "0 25 * * *": `,
		},
		{
			name: "cron never fires",
			src:  base + "        schedule: \"0 0 30 2 *\"\n",
			want: `test.yaml:10:19: jurisdictions[0].feeds[0].schedule: bad cron spec "0 0 30 2 *": never fires`,
		},
		{
			name: "CRON_TZ prefix",
			src:  base + "        schedule: \"CRON_TZ=UTC 0 * * * *\"\n",
			want: `test.yaml:10:19: jurisdictions[0].feeds[0].schedule: bad cron spec "CRON_TZ=UTC 0 * * * *": time zone prefix not allowed here; set the jurisdiction's timezone instead`,
		},
		{
			name: "TZ prefix in defaults",
			src:  "defaults:\n  schedule: TZ=UTC @hourly\n" + base,
			want: `test.yaml:2:13: defaults.schedule: bad cron spec "TZ=UTC @hourly": time zone prefix not allowed`,
		},
		{
			name: "bad url scheme",
			src:  strings.Replace(base, "https://gis.example.org/wfs", "ftp://gis.example.org/wfs", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: bad url: scheme "ftp" not supported; use http or https`,
		},
		{
			name: "relative url",
			src:  strings.Replace(base, "https://gis.example.org/wfs", "gis.example.org/wfs", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: bad url: no scheme`,
		},
		{
			name: "unparseable url",
			src:  strings.Replace(base, "https://gis.example.org/wfs", "\"https://gis.example.org:port/wfs\"", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: bad url: invalid port`,
		},
		{
			name: "url without host",
			src:  strings.Replace(base, "https://gis.example.org/wfs", "https:///wfs", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: bad url: no host`,
		},
		{
			name: "duplicate jurisdiction id",
			src:  base + strings.TrimPrefix(base, "jurisdictions:\n"),
			want: `test.yaml:10:9: jurisdictions[1].id: duplicate jurisdiction id "county" (first at line 2)`,
		},
		{
			name: "duplicate feed id",
			src:  base + "      - id: parcels\n        kind: geojson\n        url: https://example.org/p.json\n",
			want: `test.yaml:10:13: jurisdictions[0].feeds[1].id: duplicate feed id "parcels" in jurisdiction "county" (first at line 5)`,
		},
		{
			name: "bad id",
			src:  strings.Replace(base, "id: parcels", "id: Parcels/2024", 1),
			want: `test.yaml:5:13: jurisdictions[0].feeds[0].id: bad feed id "Parcels/2024"`,
		},
		{
			name: "missing id",
			src:  strings.Replace(base, "  - id: county\n    timezone", "  - timezone", 1),
			want: `test.yaml:2:5: jurisdictions[0].id: required`,
		},
		{
			name: "unknown timezone",
			src:  strings.Replace(base, "America/Chicago", "America/Chicgo", 1),
			want: `test.yaml:3:15: jurisdictions[0].timezone: unknown time zone "America/Chicgo"`,
		},
		{
			name: "Local timezone",
			src:  strings.Replace(base, "America/Chicago", "Local", 1),
			want: `test.yaml:3:15: jurisdictions[0].timezone: "Local" depends on the host`,
		},
		{
			name: "missing type_name for wfs",
			src:  strings.Replace(base, "        type_name: c:parcels\n", "", 1),
			want: `test.yaml:5:9: jurisdictions[0].feeds[0].type_name: required for a wfs feed`,
		},
		{
			name: "missing kind",
			src:  strings.Replace(base, "        kind: wfs\n", "", 1),
			want: `test.yaml:5:9: jurisdictions[0].feeds[0].kind: required`,
		},
		{
			name: "unknown kind",
			src:  strings.Replace(base, "kind: wfs", "kind: WFS", 1),
			want: `test.yaml:6:15: jurisdictions[0].feeds[0].kind: unknown kind "WFS"`,
		},
		{
			name: "missing url",
			src:  strings.Replace(base, "        url: https://gis.example.org/wfs\n", "", 1),
			want: `test.yaml:5:9: jurisdictions[0].feeds[0].url: required`,
		},
		{
			name: "bad version",
			src:  base + "        version: 1.0.0\n",
			want: `test.yaml:10:18: jurisdictions[0].feeds[0].version: unsupported WFS version "1.0.0": use "2.0.0", "1.1.0" or "auto"`,
		},
		{
			name: "negative page_size",
			src:  base + "        page_size: -1\n",
			want: `test.yaml:10:20: jurisdictions[0].feeds[0].page_size: must be 0 (no paging) or more, got -1`,
		},
		{
			name: "page_size not a number",
			src:  base + "        page_size: lots\n",
			want: `test.yaml:10:20: jurisdictions[0].feeds[0].page_size: expected a whole number, found "lots"`,
		},
		{
			name: "bare number duration",
			src:  base + "        timeout: 30\n",
			want: `test.yaml:10:18: jurisdictions[0].feeds[0].timeout: duration "30" has no unit: add one, e.g. "30s" or "30m"`,
		},
		{
			name: "bad duration",
			src:  base + "        request_timeout: 5 minutes\n",
			want: `test.yaml:10:26: jurisdictions[0].feeds[0].request_timeout: bad duration "5 minutes"`,
		},
		{
			name: "zero duration",
			src:  base + "        timeout: 0s\n",
			want: `test.yaml:10:18: jurisdictions[0].feeds[0].timeout: must be more than 0`,
		},
		{
			name: "request_timeout over timeout",
			src:  base + "        timeout: 30s\n",
			want: `test.yaml:10:18: jurisdictions[0].feeds[0].timeout: request_timeout 1m0s (from defaults) exceeds timeout 30s`,
		},
		{
			name: "request_timeout over timeout in defaults",
			src:  "defaults:\n  timeout: 1m\n  request_timeout: 2m\n" + base,
			want: `test.yaml:3:20: defaults.request_timeout: request_timeout 2m0s exceeds timeout 1m0s`,
		},
		{
			name: "max_in_flight zero",
			src:  "max_in_flight: 0\n" + base,
			want: `test.yaml:1:16: max_in_flight: must be at least 1, got 0`,
		},
		{
			name: "no jurisdictions",
			src:  "max_in_flight: 3\n",
			want: `test.yaml:1:1: jurisdictions: required`,
		},
		{
			name: "empty jurisdictions",
			src:  "jurisdictions: []\n",
			want: `test.yaml:1:16: jurisdictions: must list at least one jurisdiction`,
		},
		{
			name: "jurisdiction without feeds",
			src:  "jurisdictions:\n  - id: j\n",
			want: `test.yaml:2:5: jurisdictions[0].feeds: required`,
		},
		{
			name: "feeds not a list",
			src:  "jurisdictions:\n  - id: j\n    feeds: nope\n",
			want: `test.yaml:3:12: jurisdictions[0].feeds: expected a list, found "nope"`,
		},
		{
			name: "duplicate key",
			src:  base + "        sort_by: pin2\n",
			want: `test.yaml:10:9: jurisdictions[0].feeds[0].sort_by: duplicate key "sort_by" (first at line 9)`,
		},
		{
			name: "unset env var",
			src:  strings.Replace(base, "/wfs", "/wfs?token=${COUNTY_TOKEN}", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: environment variable COUNTY_TOKEN is not set`,
		},
		{
			name: "unterminated env reference",
			src:  strings.Replace(base, "/wfs", "/wfs?token=${COUNTY_TOKEN", 1),
			want: `test.yaml:7:14: jurisdictions[0].feeds[0].url: unterminated "${"`,
		},
		{
			name: "yaml syntax error",
			src:  base + "        id_property: a: b\n",
			want: `test.yaml:10: mapping values are not allowed in this context`,
		},
		{
			name: "empty file",
			src:  "",
			want: `test.yaml: empty config`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseString(t, tt.src, tt.env)
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			if cfg != nil {
				t.Error("a Config was returned along with errors")
			}
			errs := configErrors(t, err)
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), tt.want) {
					return
				}
			}
			t.Errorf("no error starts with\n  %s\ngot:\n%v", tt.want, err)
		})
	}
}

// TestBrokenFile checks that every problem in one file is reported, in file order,
// each with its position and field. testdata/configs/broken.yaml is also what the
// CLI test of `ingestd validate` runs on.
func TestBrokenFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "testdata", "configs", "broken.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("broken.yaml", data, envOf(nil))
	errs := configErrors(t, err)
	want := []string{
		`broken.yaml:3:16: max_in_flight: must be at least 1, got 0`,
		`broken.yaml:6:12: defaults.timeout: duration "30" has no unit: add one, e.g. "30s" or "30m"`,
		`broken.yaml:10:15: jurisdictions[0].timezone: unknown time zone "America/Houstn": use an IANA name such as "America/Chicago"`,
		`broken.yaml:14:14: jurisdictions[0].feeds[0].url: environment variable INGESTD_TEST_UNSET_TOKEN is not set`,
		`broken.yaml:15:9: jurisdictions[0].feeds[0].typename: unknown key "typename" (did you mean type_name?)`,
		`broken.yaml:16:13: jurisdictions[0].feeds[1].id: duplicate feed id "parcels" in jurisdiction "harris-county" (first at line 12)`,
		`broken.yaml:18:14: jurisdictions[0].feeds[1].url: bad url: scheme "ftp" not supported; use http or https`,
		`broken.yaml:20:19: jurisdictions[0].feeds[1].schedule: bad cron spec "*/5 * *": expected exactly 5 fields, found 3 (minute hour day-of-month month day-of-week)`,
		"broken.yaml:21:9: jurisdictions[1].id: bad jurisdiction id \"Harris County\": use lowercase letters, digits, '_' and '-', starting with a letter or digit (ids appear in SQL, metrics and `ingestd poll JURISDICTION/FEED`)",
		`broken.yaml:26:19: jurisdictions[1].feeds[0].schedule: bad cron spec "CRON_TZ=America/Chicago 0 * * * *": time zone prefix not allowed here; set the jurisdiction's timezone instead`,
		`broken.yaml:27:26: jurisdictions[1].feeds[0].request_timeout: duration "90" has no unit: add one, e.g. "90s" or "90m"`,
		`broken.yaml:28:9: jurisdictions[2].id: duplicate jurisdiction id "harris-county" (first at line 9)`,
		`broken.yaml:31:15: jurisdictions[2].feeds[0].kind: unknown kind "wms": must be "wfs", "geojson", "arcgis", "ogcapi", "file" or "socrata"`,
	}
	got := strings.Split(errs.Error(), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The typo explains the missing type_name; it must not be reported twice.
	for _, e := range errs {
		if e.Field == "jurisdictions[0].feeds[0].type_name" {
			t.Errorf("typo also reported as a missing field: %v", e)
		}
	}
	// Callers can branch on single errors too.
	var one *Error
	if !errors.As(err, &one) || one.Line != 3 {
		t.Errorf("errors.As(*Error) = %v", one)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("err = %v, want it prefixed with the path", err)
	}
}

func TestEnvExpansion(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-v4lue"
	src := `max_in_flight: ${MAX}
jurisdictions:
  - id: county
    timezone: ${TZ_NAME}
    feeds:
      - id: parcels
        kind: geojson
        url: https://${HOST}/p.geojson?token=${TOKEN}&q=$${keep}&cost=$5
`
	env := map[string]string{"MAX": "4", "TZ_NAME": "Europe/Paris", "HOST": "data.example.org", "TOKEN": secret}
	cfg := mustParse(t, src, env)
	f := cfg.Feeds()[0]
	if want := "https://data.example.org/p.geojson?token=" + secret + "&q=${keep}&cost=$5"; f.URL != want {
		t.Errorf("URL = %q, want %q", f.URL, want)
	}
	if cfg.MaxInFlight != 4 || f.Location.String() != "Europe/Paris" {
		t.Errorf("MaxInFlight = %d, Location = %v", cfg.MaxInFlight, f.Location)
	}

	// A value that expands to something invalid is reported by its text in the
	// file, never by its expanded value.
	leaky := strings.Replace(src, "url: https://${HOST}", "url: ${TOKEN}://${HOST}", 1)
	leaky = strings.Replace(leaky, "timezone: ${TZ_NAME}", "timezone: ${TOKEN}", 1)
	leaky += "        schedule: ${TOKEN}\n        timeout: ${TOKEN}\n"
	_, err := parseString(t, leaky, env)
	if err == nil {
		t.Fatal("want errors")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error leaks the value of TOKEN:\n%v", err)
	}
	if n := len(configErrors(t, err)); n != 4 {
		t.Errorf("want 4 errors (url, timezone, schedule, timeout), got %d:\n%v", n, err)
	}

	// Unset variables are named (each one), values are not printed.
	_, err = parseString(t, src, map[string]string{"MAX": "4", "TOKEN": secret})
	if err == nil {
		t.Fatal("want errors for unset TZ_NAME and HOST")
	}
	for _, name := range []string{"TZ_NAME", "HOST"} {
		if !strings.Contains(err.Error(), "environment variable "+name+" is not set") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error leaks the value of TOKEN:\n%v", err)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `jurisdictions:
  - id: a
    feeds:
      - id: one
        kind: wfs
        url: https://gis.example.org/wfs
        type_name: x:roads
        page_size: 0
      - id: two
        kind: wfs
        url: https://gis.example.org/wfs?service=WFS&request=GetFeature
        type_name: x:roads
      - id: three
        kind: geojson
        url: https://gis.example.org/roads.geojson
        page_size: 10
  - id: b
    feeds:
      - id: copy
        kind: wfs
        url: https://gis.example.org/wfs
        type_name: x:roads
        sort_by: id
        schedule: "@every 10s"
`, nil)
	want := []string{
		`test.yaml:8:20: jurisdictions[0].feeds[0].page_size: 0 fetches the whole layer in one request`,
		`test.yaml:9:9: jurisdictions[0].feeds[1].sort_by: paging without sort_by`,
		`test.yaml:11:14: jurisdictions[0].feeds[1].url: url already has request, service;`,
		`test.yaml:16:20: jurisdictions[0].feeds[2].page_size: ignored for a geojson feed`,
		`test.yaml:19:9: jurisdictions[1].feeds[0]: same url and type_name as feed a/one (line 4)`,
		`test.yaml:24:19: jurisdictions[1].feeds[0].schedule: fires every 10s`,
	}
	if len(cfg.Warnings) != len(want) {
		t.Fatalf("got %d warnings, want %d:\n%v", len(cfg.Warnings), len(want), Errors(cfg.Warnings))
	}
	for i, w := range cfg.Warnings {
		if !strings.HasPrefix(w.Error(), want[i]) {
			t.Errorf("warning %d:\n got %s\nwant %s...", i, w, want[i])
		}
	}
}

// TestAnchors checks that YAML anchors and merge keys work, since operators use
// them to share settings between similar feeds.
func TestAnchors(t *testing.T) {
	t.Parallel()
	const src = `jurisdictions:
  - id: county
    feeds:
      - &layer
        id: parcels
        kind: wfs
        url: https://gis.example.org/wfs
        type_name: c:parcels
        sort_by: pin
        timeout: 20m
      - <<: *layer
        id: roads
        type_name: c:roads
`
	cfg := mustParse(t, src, nil)
	// A typo in the anchored mapping is reported once, though the mapping is read twice.
	_, err := parseString(t, strings.Replace(src, "sort_by:", "sortby:", 1), nil)
	if errs := configErrors(t, err); len(errs) != 1 || errs[0].Line != 9 {
		t.Errorf("want one error at line 9, got:\n%v", err)
	}
	fs := cfg.Feeds()
	if len(fs) != 2 || fs[1].ID != "roads" || fs[1].Settings.(wfs.Settings).TypeName != "c:roads" ||
		fs[1].URL != fs[0].URL || fs[1].Timeout != Duration(20*time.Minute) {
		t.Errorf("merge key not applied: %+v", fs[1])
	}
}

func TestExpectedInterval(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `jurisdictions:
  - id: ny
    timezone: America/New_York
    feeds:
      - {id: hourly, kind: geojson, url: "https://e.org/a", schedule: "0 * * * *"}
      - {id: every, kind: geojson, url: "https://e.org/b", schedule: "@every 15m"}
      - {id: weekdays, kind: geojson, url: "https://e.org/c", schedule: "0 9 * * 1-5"}
      - {id: daily, kind: geojson, url: "https://e.org/d", schedule: "30 1 * * *"}
`, nil)
	ny, _ := time.LoadLocation("America/New_York")
	tests := []struct {
		key  string
		now  time.Time
		want time.Duration
	}{
		{"ny/hourly", time.Date(2026, 6, 1, 12, 10, 0, 0, time.UTC), time.Hour},
		{"ny/every", time.Date(2026, 6, 1, 12, 10, 0, 0, time.UTC), 15 * time.Minute},
		// Saturday: the next gap is Monday → Tuesday, not the weekend.
		{"ny/weekdays", time.Date(2026, 6, 6, 12, 0, 0, 0, ny), 24 * time.Hour},
		// Friday after 9:00: the next gap is Monday → Tuesday as well.
		{"ny/weekdays", time.Date(2026, 6, 5, 10, 0, 0, 0, ny), 24 * time.Hour},
		// Read in New York time: across the spring-forward night the day is 23h long.
		{"ny/daily", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), 23 * time.Hour},
	}
	for _, tt := range tests {
		f, ok := cfg.Feed(tt.key)
		if !ok {
			t.Fatalf("no feed %s", tt.key)
		}
		if got := f.ExpectedInterval(tt.now); got != tt.want {
			t.Errorf("%s.ExpectedInterval(%v) = %v, want %v", tt.key, tt.now, got, tt.want)
		}
	}
	// The schedule fires at 09:00 New York time, not 09:00 UTC or host time.
	f, _ := cfg.Feed("ny/weekdays")
	next := f.Cron.Next(time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 6, 8, 9, 0, 0, 0, ny); !next.Equal(want) {
		t.Errorf("next activation = %v, want %v", next, want)
	}
	if got := (&Feed{}).ExpectedInterval(time.Now()); got != 0 {
		t.Errorf("feed without schedule: ExpectedInterval = %v, want 0", got)
	}
}

func TestDurationYAML(t *testing.T) {
	t.Parallel()
	var v struct {
		D Duration `yaml:"d"`
	}
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "5m": 5 * time.Minute, "1h30m": 90 * time.Minute,
	} {
		if err := yaml.Unmarshal([]byte("d: "+in), &v); err != nil || v.D.Std() != want {
			t.Errorf("Unmarshal(%q) = %v, %v; want %v", in, v.D, err, want)
		}
	}
	for in, msg := range map[string]string{
		"90":    `duration "90" has no unit: add one`,
		"1.5":   `has no unit`,
		"soon":  `bad duration "soon"`,
		"[1m]":  `expected a duration`,
		`""`:    `empty duration`,
		"5 min": `bad duration`,
	} {
		err := yaml.Unmarshal([]byte("d: "+in), &v)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Unmarshal(%q) error = %v, want it to contain %q", in, err, msg)
		}
	}
	out, err := yaml.Marshal(struct {
		D Duration `yaml:"d"`
	}{Duration(90 * time.Second)})
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"typename":       "type_name",
		"requestTimeout": "request_timeout",
		"schedul":        "schedule",
		"time_zone":      "timezone",
		"pagesize":       "page_size",
		"colour":         "",
		"colr_scheme":    "",
	} {
		if got := yamlconf.Closest(key, append(feedKeys(), jurisdictionKeys...)); got != want {
			t.Errorf("yamlconf.Closest(%q) = %q, want %q", key, got, want)
		}
	}
}

// "auto" leaves version and output format to negotiation at poll time; the
// feed's Layer carries it to wfs.Client.Prepare as is.
func TestAutoNegotiation(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
defaults:
  version: auto
  output_format: auto
jurisdictions:
  - id: j
    feeds:
      - id: f
        kind: wfs
        url: https://example.org/wfs
        type_name: a:b
        sort_by: id
      - id: g
        kind: wfs
        url: https://example.org/wfs
        type_name: a:c
        sort_by: id
        version: 1.1.0
`, nil)
	fl, gl := cfg.Feeds()[0].Layer(), cfg.Feeds()[1].Layer()
	f, g := fl.Settings.(wfs.Settings), gl.Settings.(wfs.Settings)
	if f.Version != wfs.Auto || f.OutputFormat != wfs.Auto || !wfs.NeedsNegotiation(fl) {
		t.Errorf("feed f: version %q, output format %q; want both %q", f.Version, f.OutputFormat, wfs.Auto)
	}
	if g.Version != "1.1.0" || g.OutputFormat != wfs.Auto {
		t.Errorf("feed g: version %q, output format %q; want 1.1.0 and %q", g.Version, g.OutputFormat, wfs.Auto)
	}
}
