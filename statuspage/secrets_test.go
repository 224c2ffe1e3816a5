package statuspage

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/redact"
)

// A secret a server echoed in prose, stored by a version that did not scrub
// by value, is scrubbed on the way out by the configuration's secrets:
// errors, held reasons and override reasons, on both pages.
func TestScrubsSecretsByValue(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	const tok = "zqPageTok9"
	echo := "arcgis: error 498: Invalid token: " + tok + "; <title>Quota exceeded for key " + strings.ToUpper(tok) + "</title>"
	for _, q := range []string{
		`INSERT INTO feed_status (jurisdiction, feed, kind, url, origin, expected_interval, last_attempt_at, last_error, last_error_at,
			consecutive_failures, held_reason) VALUES ('j', 'f', 'arcgis', 'https://h.example/FeatureServer/0', 'https://h.example:443',
			'1 hour', now(), $1, now(), 3, $1)`,
		`INSERT INTO polls (jurisdiction, feed, url, status, error, finished_at) VALUES ('j', 'f', 'https://h.example/FeatureServer/0', 'failed', $1, now())`,
		`INSERT INTO dead_letter (jurisdiction, feed, url, origin, reason, retry_after, last_error)
			VALUES ('j', 'f', 'https://h.example/FeatureServer/0', 'https://h.example:443', 'failed', now(), $1)`,
		`INSERT INTO breaker_state (origin, state, override, override_reason, override_by) VALUES ('https://h.example:443', 'open', 'open', $1, 'me@host')`,
	} {
		if _, err := pool.Exec(t.Context(), q, echo); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	h := New(pool, nil, WithSecrets(redact.NewSecrets(tok)))
	for _, path := range []string{Prefix, FeedPath("j", "f")} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		page := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%s: %d\n%s", path, w.Code, page)
		}
		if strings.Contains(strings.ToLower(page), strings.ToLower(tok)) {
			t.Errorf("%s shows the token:\n%s", path, page)
		}
		if !strings.Contains(page, "Invalid token: REDACTED") {
			t.Errorf("%s lacks the scrubbed error:\n%s", path, page)
		}
	}
}
