package wfs

import (
	"errors"
	"strings"
	"testing"
)

func TestRequestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		layer      Layer
		startIndex int
		want       string
	}{
		{
			name:       "2.0.0 paged with sortBy, token kept, ours override theirs case-insensitively",
			layer:      Layer{Kind: "wfs", URL: "https://gis.example.gov/geoserver/wfs?token=s3cr%2Ft&SERVICE=wms&COUNT=5&cql_filter=status%3D%27A%27", TypeName: "county:parcels", PageSize: 1000, SortBy: "pin_num ASC"},
			startIndex: 2000,
			want:       "https://gis.example.gov/geoserver/wfs?token=s3cr%2Ft&cql_filter=status%3D%27A%27&service=WFS&version=2.0.0&request=GetFeature&typeNames=county%3Aparcels&outputFormat=application%2Fjson&sortBy=pin_num+ASC&startIndex=2000&count=1000",
		},
		{
			name:  "2.0.0 unpaged, explicit json format",
			layer: Layer{Kind: "wfs", URL: "http://maps.example.org/cgi-bin/mapserv?map=/srv/zoning.map", TypeName: "zoning", OutputFormat: "json", Version: "2.0.0"},
			want:  "http://maps.example.org/cgi-bin/mapserv?map=/srv/zoning.map&service=WFS&version=2.0.0&request=GetFeature&typeNames=zoning&outputFormat=json",
		},
		{
			name:       "1.1.0 uses typeName and maxFeatures, drops a stray typeNames",
			layer:      Layer{Kind: "wfs", URL: "https://gis.example.gov/wfs?typeNames=old&MaxFeatures=1", TypeName: "roads", Version: "1.1.0", PageSize: 500},
			startIndex: 500,
			want:       "https://gis.example.gov/wfs?service=WFS&version=1.1.0&request=GetFeature&typeName=roads&outputFormat=application%2Fjson&startIndex=500&maxFeatures=500",
		},
		{
			name:  "geojson is the URL as is",
			layer: Layer{Kind: "geojson", URL: "https://data.example.gov/parks.geojson?apikey=abc&count=5"},
			want:  "https://data.example.gov/parks.geojson?apikey=abc&count=5",
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
	for _, l := range []Layer{
		{Kind: "wfs", URL: "https://x.example/wfs"},                              // no type name
		{Kind: "wfs", URL: "https://x.example/wfs", TypeName: "a", Version: "3"}, // unknown version
		{Kind: "wms", URL: "https://x.example/wms", TypeName: "a"},
		{Kind: "geojson", URL: "ftp://x.example/a.json"},
		{Kind: "geojson", URL: "/relative.json"},
	} {
		if _, err := RequestURL(l, 0); !errors.Is(err, ErrInvalidLayer) {
			t.Errorf("RequestURL(%+v) = %v, want ErrInvalidLayer", l, err)
		}
	}
	if _, err := RequestURL(Layer{Kind: "geojson", URL: "https://x.example/a.json"}, 10); !errors.Is(err, ErrInvalidLayer) {
		t.Errorf("geojson start index 10: %v, want ErrInvalidLayer", err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://gis.example.gov/wfs?service=WFS&token=abc123&typeNames=a", "https://gis.example.gov/wfs?service=WFS&token=REDACTED&typeNames=a"},
		{"https://x.example/a?KEY=1&ApiKey=2&api_key=3&Password=4&passwd=5&secret=6&access_token=7&signature=8&sig=9&X-Amz-Security-Token=10&subscription-key=11&count=5",
			"https://x.example/a?KEY=REDACTED&ApiKey=REDACTED&api_key=REDACTED&Password=REDACTED&passwd=REDACTED&secret=REDACTED&access_token=REDACTED&signature=REDACTED&sig=REDACTED&X-Amz-Security-Token=REDACTED&subscription-key=REDACTED&count=5"},
		{"https://bob:hunter2@x.example/wfs?a=1", "https://bob:REDACTED@x.example/wfs?a=1"},
		{"https://x.example/wfs?typeNames=a&sortBy=pin+ASC", "https://x.example/wfs?typeNames=a&sortBy=pin+ASC"},
		{"https://x.example/wfs?%74oken=abc", "https://x.example/wfs?%74oken=REDACTED"},
		// Unparseable: the query is still redacted.
		{"http://x.example:bad/wfs?token=abc&a=1", "http://x.example:bad/wfs?token=REDACTED&a=1"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestValidateDoesNotLeak(t *testing.T) {
	t.Parallel()
	err := Layer{Kind: "geojson", URL: "http://x.example:bad/a.json?token=topsecret"}.Validate()
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("Validate = %v; want an error without the token", err)
	}
}
