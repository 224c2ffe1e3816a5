package config

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
)

const limitsYAML = `
defaults:
  invalid_feature: skip
  redirects: follow
  limits:
    body_bytes: 256MiB
    value_bytes: 1MB
jurisdictions:
  - id: wake
    headers:
      X-Api-Key: ${WAKE_KEY}
      Accept-Language: en
    limits:
      poll_features: 500000
      value_bytes: 2097152
    feeds:
      - id: parcels
        kind: geojson
        url: https://data.example.org/parcels.geojson
        headers: {X-Api-Key: "${PARCELS_KEY}", X-Trace: "1"}
        limits: {feature_bytes: 4MiB, id_bytes: 200, properties: 50}
        invalid_feature: repair
        redirects: same_origin
      - {id: roads, kind: geojson, url: "https://data.example.org/roads.geojson"}
  - id: durham
    feeds:
      - {id: roads, kind: geojson, url: "https://data.example.org/roads.geojson"}
`

func TestLimitsHeadersRedirectsResolve(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, limitsYAML, map[string]string{"WAKE_KEY": "wake-secret", "PARCELS_KEY": "parcels-secret"})
	d := feature.DefaultLimits()
	tests := []struct {
		key            string
		limits         feature.Limits
		headers        map[string]string
		redirects      string
		invalidFeature string
	}{
		{"wake/parcels", feature.Limits{BodyBytes: 256 << 20, PollBytes: d.PollBytes, PollFeatures: 500000,
			FeatureBytes: 4 << 20, ValueBytes: 2097152, IDBytes: 200, Properties: 50},
			map[string]string{"X-Api-Key": "parcels-secret", "Accept-Language": "en", "X-Trace": "1"}, RedirectsSameOrigin, InvalidRepair},
		{"wake/roads", feature.Limits{BodyBytes: 256 << 20, PollBytes: d.PollBytes, PollFeatures: 500000,
			FeatureBytes: d.FeatureBytes, ValueBytes: 2097152, IDBytes: d.IDBytes, Properties: d.Properties},
			map[string]string{"X-Api-Key": "wake-secret", "Accept-Language": "en"}, RedirectsFollow, InvalidSkip},
		{"durham/roads", feature.Limits{BodyBytes: 256 << 20, PollBytes: d.PollBytes, PollFeatures: d.PollFeatures,
			FeatureBytes: d.FeatureBytes, ValueBytes: 1000000, IDBytes: d.IDBytes, Properties: d.Properties},
			nil, RedirectsFollow, InvalidSkip},
	}
	for _, tt := range tests {
		f, ok := cfg.Feed(tt.key)
		if !ok {
			t.Fatalf("no feed %s", tt.key)
		}
		if f.Limits != tt.limits {
			t.Errorf("%s: Limits = %+v, want %+v", tt.key, f.Limits, tt.limits)
		}
		if len(f.Headers) != len(tt.headers) {
			t.Errorf("%s: Headers has %d entries, want %d", tt.key, len(f.Headers), len(tt.headers))
		}
		for k, v := range tt.headers {
			if f.Headers[k] != v {
				t.Errorf("%s: header %s = %q, want %q", tt.key, k, f.Headers[k], v)
			}
		}
		if f.Redirects != tt.redirects || f.InvalidFeature != tt.invalidFeature {
			t.Errorf("%s: redirects %q invalid_feature %q, want %q %q", tt.key, f.Redirects, f.InvalidFeature, tt.redirects, tt.invalidFeature)
		}
		l := f.Layer()
		if l.Limits != tt.limits || l.CrossOriginRedirects != (tt.redirects == RedirectsFollow) || len(l.Headers) != len(tt.headers) {
			t.Errorf("%s: Layer() = limits %+v, cross-origin %v, %d headers", tt.key, l.Limits, l.CrossOriginRedirects, len(l.Headers))
		}
	}
	// The jurisdiction's headers are not changed by a feed's additions.
	w, _ := cfg.Feed("wake/roads")
	if _, ok := w.Headers["X-Trace"]; ok {
		t.Error("a feed's header leaked into its sibling's")
	}
}

func TestLimitsHeadersRedirectsErrors(t *testing.T) {
	t.Parallel()
	_, err := parseString(t, `defaults:
  redirects: sometimes
  invalid_feature: drop
  limits:
    body_bytes: lots
    value_bytes: 0
    poll_features: -1
    id_bytes: 4KiB
    bogus: 1
jurisdictions:
  - id: a
    headers: [x]
    feeds:
      - id: b
        kind: geojson
        url: https://data.example.org/b.geojson
        headers:
          "Bad Name": x
          Host: other.example.org
          X-Token: "${TOKEN}"
`, map[string]string{"TOKEN": "abc\r\nInjected: 1"})
	errs := configErrors(t, err)
	want := []string{
		`test.yaml:2:14: defaults.redirects: expected same_origin or follow, found "sometimes"`,
		`test.yaml:3:20: defaults.invalid_feature: expected repair or skip, found "drop"`,
		`test.yaml:5:17: defaults.limits.body_bytes: expected a size above 0`,
		`test.yaml:6:18: defaults.limits.value_bytes: expected a size above 0`,
		`test.yaml:7:20: defaults.limits.poll_features: must be 1 or more, got -1`,
		`test.yaml:8:15: defaults.limits.id_bytes: at most 2048`,
		`test.yaml:9:5: defaults.limits.bogus: unknown key`,
		`test.yaml:12:14: jurisdictions[0].headers: expected a mapping of header names to values`,
		`test.yaml:18:11: jurisdictions[0].feeds[0].headers: "Bad Name" is not a valid HTTP header name`,
		`test.yaml:19:11: jurisdictions[0].feeds[0].headers.Host: Host is set by ingestd itself`,
		`test.yaml:20:20: jurisdictions[0].feeds[0].headers.X-Token: a header value may not contain a line break`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s...", i, e, want[i])
		}
		if strings.Contains(e.Error(), "Injected") {
			t.Errorf("error %d quotes an expanded value: %s", i, e)
		}
	}
}

func TestLiteralCredentialHeaderWarns(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `jurisdictions:
  - id: a
    feeds:
      - id: b
        kind: geojson
        url: https://data.example.org/b.geojson
        headers: {Authorization: "Bearer abc123", X-Api-Key: "${K}", Accept: "application/geo+json"}
`, map[string]string{"K": "v"})
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), "headers.Authorization: a literal credential") {
		t.Fatalf("warnings = %v, want one about the literal Authorization", Errors(cfg.Warnings))
	}
	if strings.Contains(cfg.Warnings[0].Error(), "abc123") {
		t.Errorf("the warning quotes the credential: %s", cfg.Warnings[0])
	}
}
