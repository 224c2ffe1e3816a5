package wfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/source"
)

func TestRequestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		layer      source.Layer
		startIndex int
		want       string
	}{
		{
			name:       "2.0.0 paged with sortBy, token kept, ours override theirs case-insensitively",
			layer:      source.Layer{Kind: "wfs", URL: "https://gis.example.gov/geoserver/wfs?token=s3cr%2Ft&SERVICE=wms&COUNT=5&cql_filter=status%3D%27A%27", Settings: Settings{TypeName: "county:parcels", SortBy: "pin_num ASC"}, PageSize: 1000},
			startIndex: 2000,
			want:       "https://gis.example.gov/geoserver/wfs?token=s3cr%2Ft&cql_filter=status%3D%27A%27&service=WFS&version=2.0.0&request=GetFeature&typeNames=county%3Aparcels&outputFormat=application%2Fjson&srsName=EPSG%3A4326&sortBy=pin_num+ASC&startIndex=2000&count=1000",
		},
		{
			name:  "2.0.0 unpaged, explicit json format",
			layer: source.Layer{Kind: "wfs", URL: "http://maps.example.org/cgi-bin/mapserv?map=/srv/zoning.map", Settings: Settings{TypeName: "zoning", Version: "2.0.0", OutputFormat: "json"}},
			want:  "http://maps.example.org/cgi-bin/mapserv?map=/srv/zoning.map&service=WFS&version=2.0.0&request=GetFeature&typeNames=zoning&outputFormat=json&srsName=EPSG%3A4326",
		},
		{
			name:       "1.1.0 uses typeName and maxFeatures, drops a stray typeNames",
			layer:      source.Layer{Kind: "wfs", URL: "https://gis.example.gov/wfs?typeNames=old&MaxFeatures=1", Settings: Settings{TypeName: "roads", Version: "1.1.0"}, PageSize: 500},
			startIndex: 500,
			want:       "https://gis.example.gov/wfs?service=WFS&version=1.1.0&request=GetFeature&typeName=roads&outputFormat=application%2Fjson&srsName=EPSG%3A4326&startIndex=500&maxFeatures=500",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := RequestURL(tt.layer, tt.startIndex)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.String(); got != tt.want {
				t.Errorf("RequestURL\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRequestURLInvalid(t *testing.T) {
	t.Parallel()
	for _, l := range []source.Layer{
		{Kind: "wfs", URL: "https://x.example/wfs"},                                                  // no type name
		{Kind: "wfs", URL: "https://x.example/wfs", Settings: Settings{TypeName: "a", Version: "3"}}, // unknown version
		{Kind: "wms", URL: "https://x.example/wms", Settings: Settings{TypeName: "a"}},
		{Kind: "geojson", URL: "https://x.example/a.json", Settings: Settings{TypeName: "a"}}, // another kind's layer
		{Kind: "wfs", URL: "ftp://x.example/wfs", Settings: Settings{TypeName: "a"}},
		{Kind: "wfs", URL: "/relative/wfs", Settings: Settings{TypeName: "a"}},
	} {
		if _, err := RequestURL(l, 0); !errors.Is(err, source.ErrInvalidLayer) {
			t.Errorf("RequestURL(%+v) = %v, want source.ErrInvalidLayer", l, err)
		}
	}
	if _, err := RequestURL(source.Layer{Kind: "wfs", URL: "https://x.example/wfs", Settings: Settings{TypeName: "a"}, PageSize: 10}, -10); !errors.Is(err, source.ErrInvalidLayer) {
		t.Errorf("start index -10: %v, want source.ErrInvalidLayer", err)
	}
}

// RedactURL redacts by default: every userinfo and every query value but
// the harmless protocol parameters (the full rules are redact's tests).
func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://gis.example.gov/wfs?service=WFS&token=abc123&typeNames=a", "https://gis.example.gov/wfs?service=WFS&token=REDACTED&typeNames=a"},
		{"https://x.example/a?KEY=1&pw=2&ticket=3&hash=4&k=5&access_key_id=6&count=5",
			"https://x.example/a?KEY=REDACTED&pw=REDACTED&ticket=REDACTED&hash=REDACTED&k=REDACTED&access_key_id=REDACTED&count=5"},
		{"https://bob:hunter2@x.example/wfs?a=1", "https://REDACTED:REDACTED@x.example/wfs?a=REDACTED"},
		{"https://TOKEN@x.example/wfs", "https://REDACTED@x.example/wfs"},
		{"https://x.example/wfs?typeNames=a&sortBy=pin+ASC", "https://x.example/wfs?typeNames=a&sortBy=pin+ASC"},
		// Unparseable: the query is still redacted.
		{"http://x.example:bad/wfs?token=abc&count=1", "http://x.example:bad/wfs?token=REDACTED&count=1"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestValidateDoesNotLeak(t *testing.T) {
	t.Parallel()
	err := Validate(source.Layer{Kind: "wfs", Settings: Settings{TypeName: "a"}, URL: "http://usertok@x.example:bad/wfs?pw=topsecret"})
	if err == nil || strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "usertok") {
		t.Fatalf("Validate = %v; want an error without the token", err)
	}
}
