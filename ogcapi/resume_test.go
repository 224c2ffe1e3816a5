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

// Storable keeps a next link's paging in its own order and none of the
// feed's credentials (its userinfo, its key under any spelling of the
// name, or under another name); Restore gives the link back with them,
// once. A link to another origin is kept whole.
func TestStorableRoundTrip(t *testing.T) {
	t.Parallel()
	const key = "k3y-0f-the-feed"
	home := "https://gisuser:gispassword@gis.example/api/collections/p?apikey=" + key
	for _, link := range []string{
		"https://gisuser:gispassword@gis.example/api/collections/p/items?cursor=c2&APIKEY=" + key + "&offset=20",
		"https://gis.example/api/collections/p/items?cursor=c2&session=" + key + "&offset=20",
		"https://gis.example/api/collections/p/items?cursor=c2&offset=20",
	} {
		stored := ogcapi.Storable(link, home)
		if want := "https://gis.example/api/collections/p/items?cursor=c2&offset=20"; stored != want {
			t.Errorf("Storable(%s) = %s, want %s", link, stored, want)
		}
		back := ogcapi.Restore(stored, home)
		if want := "https://gisuser:gispassword@gis.example/api/collections/p/items?cursor=c2&offset=20&apikey=" + key; back != want {
			t.Errorf("Restore(%s) = %s, want %s", stored, back, want)
		}
	}
	// A feed url with the format parameter: the link keeps its own, which
	// Restore would not put back.
	withF := "https://gis.example/api/collections/p?f=json&apikey=" + key
	link := "https://gis.example/api/collections/p/items?f=json&offset=20&apikey=" + key
	if back, want := ogcapi.Restore(ogcapi.Storable(link, withF), withF), "https://gis.example/api/collections/p/items?f=json&offset=20&apikey="+key; back != want {
		t.Errorf("Restore(Storable(%s)) = %s, want %s", link, back, want)
	}
	other := "https://peer.example/items?apikey=" + key
	if got := ogcapi.Storable(other, home); got != other {
		t.Errorf("Storable of another origin's link = %s, want it whole", got)
	}
}
