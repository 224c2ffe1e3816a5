package config

import (
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
)

const breakerYAML = `
defaults:
  breaker:
    consecutive_failures: 4
    open_base: 1m
jurisdictions:
  - id: fragile
    breaker:
      open_base: 5m
      open_max: 2h
      rate_limit: 0.5
      target_concurrency: 1
      max_attempts: 2
    feeds:
      - {id: parcels, kind: wfs, url: "http://portal.example.gov/wfs", type_name: p, sort_by: id}
  - id: city
    feeds:
      - {id: roads, kind: wfs, url: "http://portal.example.gov:80/wfs", type_name: r, sort_by: id}
  - id: other
    feeds:
      - {id: zoning, kind: geojson, url: "https://data.example.org/zoning.geojson"}
`

func TestBreakerPolicyPerJurisdiction(t *testing.T) {
	cfg, err := Parse("b.yaml", []byte(breakerYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	def := breaker.DefaultPolicy()
	def.ConsecutiveFailures = 4
	def.OpenBase = time.Minute
	if cfg.Defaults.Breaker != def {
		t.Errorf("defaults policy = %+v, want %+v", cfg.Defaults.Breaker, def)
	}
	fragile := def
	fragile.OpenBase, fragile.OpenMax, fragile.RateLimit, fragile.MaxAttempts = 5*time.Minute, 2*time.Hour, 0.5, 2
	fragile.TargetConcurrency = 1
	if cfg.Jurisdictions[0].Breaker != fragile {
		t.Errorf("fragile policy = %+v, want %+v", cfg.Jurisdictions[0].Breaker, fragile)
	}
	if cfg.Jurisdictions[1].Breaker != def {
		t.Errorf("city inherits %+v, want the defaults", cfg.Jurisdictions[1].Breaker)
	}

	// fragile and city share an origin: the more protective settings win, with a warning.
	pols := cfg.OriginPolicies()
	shared := pols["http://portal.example.gov:80"]
	if shared != breaker.MoreProtective(fragile, def) || shared.OpenBase != 5*time.Minute || shared.RateLimit != 0.5 || shared.TargetConcurrency != 1 {
		t.Errorf("shared origin policy = %+v, want the more protective of both", shared)
	}
	if pols["https://data.example.org:443"] != def {
		t.Errorf("unshared origin policy = %+v, want the defaults", pols["https://data.example.org:443"])
	}
	var warned bool
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Error(), "http://portal.example.gov:80 is shared with jurisdiction \"fragile\"") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning about the shared origin; warnings: %v", cfg.Warnings)
	}
	if got := cfg.Origins(); len(got) != 2 {
		t.Errorf("Origins() = %v, want 2", got)
	}
}

func TestBreakerPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"defaults:\n  breaker:\n    open_bse: 1m\n", "b.yaml:3:5: defaults.breaker.open_bse: unknown key \"open_bse\" (did you mean open_base?)"},
		{"defaults:\n  breaker:\n    failure_ratio: lots\n", "b.yaml:3:20: defaults.breaker.failure_ratio: expected a number"},
		{"defaults:\n  breaker:\n    max_attempts: 0\n", "b.yaml:3:5: defaults.breaker:"},
		{"defaults:\n  breaker:\n    window: 60\n", "b.yaml:3:13: defaults.breaker.window: duration \"60\" has no unit"},
	} {
		_, err := Parse("b.yaml", []byte(tc.yaml+"jurisdictions:\n  - id: a\n    feeds:\n      - {id: f, kind: geojson, url: \"http://a.example/x.geojson\"}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
