package config

import (
	"strings"
	"testing"
	"time"
)

func TestQueueTimeout(t *testing.T) {
	cfg := mustParse(t, `
defaults:
  queue_timeout: 45m
jurisdictions:
  - id: wake
    feeds:
      - id: inherits
        kind: geojson
        url: https://gis.example.gov/a.geojson
      - id: own
        kind: geojson
        url: https://gis.example.gov/b.geojson
        timeout: 2m
        queue_timeout: 5m
`, nil)
	inherits, own := cfg.Jurisdictions[0].Feeds[0], cfg.Jurisdictions[0].Feeds[1]
	if inherits.QueueTimeout.Std() != 45*time.Minute {
		t.Errorf("inherited queue_timeout = %s, want 45m", inherits.QueueTimeout)
	}
	if own.QueueTimeout.Std() != 5*time.Minute {
		t.Errorf("queue_timeout = %s, want 5m", own.QueueTimeout)
	}
	if got := mustParse(t, `
jurisdictions:
  - id: wake
    feeds:
      - id: a
        kind: geojson
        url: https://gis.example.gov/a.geojson
`, nil).Jurisdictions[0].Feeds[0].QueueTimeout.Std(); got != 30*time.Minute {
		t.Errorf("default queue_timeout = %s, want 30m", got)
	}

	for _, bad := range []string{"0s", "-1m", "soon"} {
		_, err := parseString(t, `
jurisdictions:
  - id: wake
    feeds:
      - id: a
        kind: geojson
        url: https://gis.example.gov/a.geojson
        queue_timeout: `+bad+`
`, nil)
		if err == nil || !strings.Contains(err.Error(), "jurisdictions[0].feeds[0].queue_timeout") {
			t.Errorf("queue_timeout %s: error %v, want one naming the field", bad, err)
		}
	}
}
