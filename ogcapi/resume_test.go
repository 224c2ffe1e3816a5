package ogcapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/redact"
)

// A link the server gives may carry the feed's key under another spelling
// (APIKEY= where the feed has apikey=): Restore leaves it as it is rather
// than adding the key a second time. A link with a value a scrub replaced
// by REDACTED gets the feed's key back, once.
func TestRestoreOtherSpellings(t *testing.T) {
	t.Parallel()
	const key = "k3y-0f-the-feed"
	home := "https://gisuser:gispassword@gis.example/api/collections/p?apikey=" + key
	for _, tt := range []struct{ name, link string }{
		{"upper case", "https://gis.example/api/collections/p/items?APIKEY=" + key + "&offset=20&cursor=c2"},
		{"left out", "https://gis.example/api/collections/p/items?offset=20&cursor=c2"},
		{"scrubbed", "https://gis.example/api/collections/p/items?APIKEY=REDACTED&offset=20&cursor=c2"},
		{"scrubbed userinfo", "https://REDACTED:REDACTED@gis.example/api/collections/p/items?apikey=REDACTED&offset=20&cursor=c2"},
	} {
		got, err := url.Parse(ogcapi.Restore(tt.link, home))
		if err != nil {
			t.Fatal(err)
		}
		q := got.Query()
		keys := 0
		for name, vs := range q {
			for _, v := range vs {
				if v == key {
					keys++
				}
				if v == redact.Marker {
					t.Errorf("%s: Restore kept %s=%s", tt.name, name, v)
				}
			}
		}
		if keys != 1 || q.Get("offset") != "20" || q.Get("cursor") != "c2" || got.User.String() != "gisuser:gispassword" {
			t.Errorf("%s: Restore = %s (the key %d times)", tt.name, got, keys)
		}
	}
	// A value of the server's own under the key's name is the server's.
	link := "https://gis.example/api/collections/p/items?APIKEY=session-key-2&offset=20"
	if got := ogcapi.Restore(link, home); !strings.Contains(got, "APIKEY=session-key-2") || strings.Contains(got, key) {
		t.Errorf("Restore of the server's own key: %s", got)
	}
}
