package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A Feed handed to slog whole names itself and its layer, never a header
// value or a secret of its URL.
func TestFeedLogValueHidesSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	f := &Feed{ID: "parcels", Jurisdiction: "county", Kind: "geojson",
		URL:     "http://FEEDUSER@127.0.0.1/a.geojson?access_key_id=FEEDKEY",
		Headers: map[string]string{"Authorization": "Bearer FEEDBEARER"}}
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("feed", "feed", f)
	out := buf.String()
	for _, s := range []string{"FEEDUSER", "FEEDKEY", "FEEDBEARER"} {
		if strings.Contains(out, s) {
			t.Errorf("log leaks %s: %s", s, out)
		}
	}
	if !strings.Contains(out, `"feed":"county/parcels"`) {
		t.Errorf("log does not name the feed: %s", out)
	}
}
