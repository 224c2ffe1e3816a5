package wfs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/ows"
	"github.com/ingestd/ingestd/source"
)

func readCapabilities(t testing.TB, name string) *Capabilities {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "capabilities", name))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := ParseCapabilities(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return caps
}

func TestParseCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file       string
		version    string
		versions   []string
		vendor     string
		paging20   bool
		paging11   bool
		typeName   string
		defaultCRS string
		formats    []string // a subset that must be offered for typeName
	}{
		{"mapserver8_wfs_2_0_0.xml", "2.0.0", []string{"2.0.0", "1.1.0", "1.0.0"}, VendorMapServer, true, true,
			"ms:nc", "urn:ogc:def:crs:EPSG::4267",
			[]string{"application/gml+xml; version=3.2", "text/xml; subtype=gml/3.1.1", "application/json; subtype=geojson"}},
		{"mapserver8_wfs_1_1_0.xml", "1.1.0", []string{"1.1.0", "1.0.0"}, VendorMapServer, false, true,
			"nc", "urn:ogc:def:crs:EPSG::4267",
			[]string{"text/xml; subtype=gml/3.1.1", "application/json; subtype=geojson"}},
		{"geoserver2_wfs_2_0_0.xml", "2.0.0", []string{"2.0.0", "1.1.0", "1.0.0"}, VendorGeoServer, true, true,
			"topp:states", "urn:ogc:def:crs:EPSG::4326",
			[]string{"application/json", "json", "gml32", "application/gml+xml; version=3.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			c := readCapabilities(t, tt.file)
			if c.Version != tt.version || c.Vendor != tt.vendor {
				t.Errorf("version %q vendor %q; want %q %q", c.Version, c.Vendor, tt.version, tt.vendor)
			}
			for _, v := range tt.versions {
				if !slices.Contains(c.Versions, v) {
					t.Errorf("versions %v lack %s", c.Versions, v)
				}
			}
			if c.PagingSupported("2.0.0") != tt.paging20 || c.PagingSupported("1.1.0") != tt.paging11 {
				t.Errorf("paging 2.0 %v, 1.1 %v; want %v, %v", c.PagingSupported("2.0.0"), c.PagingSupported("1.1.0"), tt.paging20, tt.paging11)
			}
			ft, ok := c.FeatureType(tt.typeName)
			if !ok {
				t.Fatalf("no feature type %s in %+v", tt.typeName, c.FeatureTypes)
			}
			if ft.DefaultCRS != tt.defaultCRS {
				t.Errorf("default CRS %q; want %q", ft.DefaultCRS, tt.defaultCRS)
			}
			offered := ft.OutputFormats
			if len(offered) == 0 {
				offered = c.OutputFormats
			}
			for _, f := range tt.formats {
				if !slices.Contains(offered, f) {
					t.Errorf("formats %q lack %q", offered, f)
				}
			}
		})
	}
}

func TestFeatureTypeNames(t *testing.T) {
	t.Parallel()
	c := &Capabilities{FeatureTypes: []FeatureType{{Name: "ms:nc"}, {Name: "topp:states"}, {Name: "roads"}}}
	for name, want := range map[string]string{
		"ms:nc": "ms:nc", "nc": "ms:nc", // MapServer takes both spellings
		"topp:states": "topp:states", "states": "topp:states",
		"roads": "roads", "x:roads": "roads",
		"other:nc": "", "tiger:states": "", "missing": "",
	} {
		ft, ok := c.FeatureType(name)
		if got := ""; ok {
			got = ft.Name
			if got != want {
				t.Errorf("FeatureType(%q) = %q; want %q", name, got, want)
			}
		} else if want != "" {
			t.Errorf("FeatureType(%q) not found; want %q", name, want)
		}
	}
}

func TestParseCapabilitiesRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"feature collection": `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0"/>`,
		"truncated":          `<wfs:WFS_Capabilities version="2.0.0"><FeatureTypeList>`,
		"not xml":            `{"type":"FeatureCollection"}`,
	} {
		if _, err := ParseCapabilities(strings.NewReader(doc)); err == nil || !strings.HasPrefix(err.Error(), "wfs: ") {
			t.Errorf("%s: err %v; want a wfs: error", name, err)
		}
	}
	_, err := ParseCapabilities(bytes.NewReader(featuretest.ReadTestdata(t, "mapserver_service_exception_1_1.xml")))
	var rep *ows.ExceptionReportError
	if !errors.As(err, &rep) {
		t.Errorf("exception report: err %v; want *ows.ExceptionReportError", err)
	}
}

func TestNegotiate(t *testing.T) {
	t.Parallel()
	ms20 := readCapabilities(t, "mapserver8_wfs_2_0_0.xml")
	ms11 := readCapabilities(t, "mapserver8_wfs_1_1_0.xml")
	gs20 := readCapabilities(t, "geoserver2_wfs_2_0_0.xml")
	gmlOnly := &Capabilities{Version: "2.0.0", Versions: []string{"2.0.0"}, ImplementsResultPaging: false,
		OutputFormats: []string{"text/xml; subtype=gml/3.1.1", "application/gml+xml; version=3.2"},
		FeatureTypes:  []FeatureType{{Name: "x:roads", DefaultCRS: "urn:ogc:def:crs:EPSG::4326"}}}
	nad27Only := readCapabilities(t, "mapserver8_wfs_2_0_0.xml")
	for i := range nad27Only.FeatureTypes {
		nad27Only.FeatureTypes[i].OtherCRS = nil
	}
	old := &Capabilities{Version: "1.1.0", Versions: []string{"1.1.0"},
		OutputFormats: []string{"text/xml; subtype=gml/3.1.1"},
		FeatureTypes:  []FeatureType{{Name: "x:roads", DefaultCRS: "EPSG:2264"}}}

	layer := func(typeName, version, format string, pageSize int) source.Layer {
		return source.Layer{Kind: Kind, URL: "https://gis.example/wfs?token=s3cret", Settings: Settings{TypeName: typeName, Version: version, OutputFormat: format}, PageSize: pageSize}
	}
	tests := []struct {
		name     string
		caps     *Capabilities
		in       source.Layer
		want     source.Layer
		warnings int
		err      string
	}{
		// The NAD27 layer lists 4326 in OtherCRS: SRID 0, and the request
		// asks for GeoJSONSRSName (TestNegotiatedRequestAsksWGS84).
		{"mapserver 2.0: GeoJSON asked in WGS 84", ms20, layer("nc", Auto, Auto, 17),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json; subtype=geojson"}, PageSize: 17, SRID: 0}, 0, ""},
		{"mapserver 1.1 pages by vendor knowledge", ms11, layer("nc", "1.1.0", Auto, 17),
			source.Layer{Settings: Settings{Version: "1.1.0", OutputFormat: "application/json; subtype=geojson"}, PageSize: 17, SRID: 0}, 0, ""},
		{"a layer that cannot be served in 4326: GeoJSON in its DefaultCRS", nad27Only, layer("nc", Auto, Auto, 17),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json; subtype=geojson"}, PageSize: 17, SRID: 4267}, 0, ""},
		{"srsName in the URL wins over the default CRS", ms20,
			source.Layer{Kind: Kind, URL: "http://h/wfs?SRSNAME=EPSG:4326", Settings: Settings{TypeName: "nc", Version: Auto, OutputFormat: Auto}, PageSize: 17},
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json; subtype=geojson"}, PageSize: 17, SRID: 4326}, 0, ""},
		{"geoserver prefers plain application/json", gs20, layer("topp:states", Auto, Auto, 1000),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 1000, SRID: 0}, 0, ""},
		{"projected default CRS", gs20, layer("nc:parcels", Auto, Auto, 1000),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 1000, SRID: 2264}, 0, ""},
		{"a configured SRID is kept", gs20, source.Layer{Kind: Kind, URL: "http://h/wfs", Settings: Settings{TypeName: "nc:parcels", Version: Auto, OutputFormat: Auto}, SRID: 32119},
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json"}, SRID: 32119}, 0, ""},
		{"a fixed format is kept", gs20, layer("topp:states", Auto, "application/json", 1000),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 1000, SRID: 0}, 0, ""},
		{"GML 3.2 before 3.1.1; no paging declared", gmlOnly, layer("roads", Auto, Auto, 500),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/gml+xml; version=3.2"}, PageSize: 0}, 1, ""},
		{"GML 3.1.1 on an unknown 1.1 server: one request", old, layer("x:roads", Auto, Auto, 500),
			source.Layer{Settings: Settings{Version: "1.1.0", OutputFormat: "text/xml; subtype=gml/3.1.1"}, PageSize: 0}, 1, ""},
		{"a format the server does not list is a warning", gs20, layer("topp:states", "2.0.0", "application/x-parquet", 10),
			source.Layer{Settings: Settings{Version: "2.0.0", OutputFormat: "application/x-parquet"}, PageSize: 10}, 1, ""},
		{"unknown type", gs20, layer("topp:counties", Auto, Auto, 10), source.Layer{}, 0, `feature type "topp:counties" is not in the server's capabilities`},
		{"no usable format", &Capabilities{Version: "2.0.0", OutputFormats: []string{"SHAPE-ZIP", "KML"},
			FeatureTypes: []FeatureType{{Name: "a"}}}, layer("a", Auto, Auto, 10), source.Layer{}, 0, "offers none of GeoJSON"},
		{"no usable version", &Capabilities{Version: "1.0.0", Versions: []string{"1.0.0"},
			FeatureTypes: []FeatureType{{Name: "a"}}}, layer("a", Auto, "json", 10), source.Layer{}, 0, "ingestd needs 2.0.0 or 1.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, warnings, err := Negotiate(tt.caps, tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "wfs: ") {
					t.Fatalf("err %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if settingsOf(got).Version != settingsOf(tt.want).Version || settingsOf(got).OutputFormat != settingsOf(tt.want).OutputFormat ||
				got.PageSize != tt.want.PageSize || got.SRID != tt.want.SRID {
				t.Errorf("got version %q format %q page size %d srid %d; want %q %q %d %d",
					settingsOf(got).Version, settingsOf(got).OutputFormat, got.PageSize, got.SRID,
					settingsOf(tt.want).Version, settingsOf(tt.want).OutputFormat, tt.want.PageSize, tt.want.SRID)
			}
			if len(warnings) != tt.warnings {
				t.Errorf("warnings %q; want %d", warnings, tt.warnings)
			}
			if got.URL != tt.in.URL || settingsOf(got).TypeName != settingsOf(tt.in).TypeName {
				t.Errorf("negotiation changed the URL or type name: %+v", got)
			}
			if err := Validate(got); err != nil {
				t.Errorf("negotiated layer does not validate: %v", err)
			}
		})
	}
}

func TestCapabilitiesAndHitsURLs(t *testing.T) {
	t.Parallel()
	l := source.Layer{Kind: Kind, URL: "https://gis.example/wfs?token=abc&CQL_FILTER=x%3D1&outputFormat=json&VERSION=1.0.0",
		Settings: Settings{TypeName: "ms:nc", SortBy: "FIPS", Version: Auto, OutputFormat: Auto}, PageSize: 17}
	u, err := CapabilitiesURL(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := "token=abc&CQL_FILTER=x%3D1&service=WFS&request=GetCapabilities&acceptVersions=2.0.0%2C1.1.0"; u.RawQuery != want {
		t.Errorf("capabilities query %s; want %s", u.RawQuery, want)
	}
	setSettings(&l, func(s *Settings) { s.Version, s.OutputFormat = "1.1.0", "application/json" })
	if u, _ = CapabilitiesURL(l); !strings.HasSuffix(u.RawQuery, "version=1.1.0&acceptVersions=1.1.0") {
		t.Errorf("capabilities query %s; want the configured version", u.RawQuery)
	}
	u, err = HitsURL(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := "token=abc&CQL_FILTER=x%3D1&service=WFS&version=1.1.0&request=GetFeature&typeName=ms%3Anc&resultType=hits"; u.RawQuery != want {
		t.Errorf("hits query %s; want %s", u.RawQuery, want)
	}
	setSettings(&l, func(s *Settings) { s.Version = Auto })
	if _, err := HitsURL(l); !errors.Is(err, source.ErrInvalidLayer) {
		t.Errorf("hits of an unnegotiated layer: err %v; want source.ErrInvalidLayer", err)
	}
}

// capsServer answers GetCapabilities with a recorded document and hits with
// a count, and counts the requests of each kind.
type capsServer struct {
	caps         []byte
	hits         string
	capsRequests atomic.Int32
	hitsRequests atomic.Int32
}

func (s *capsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("request") == "GetCapabilities":
		s.capsRequests.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		w.Write(s.caps)
	case q.Get("resultType") == "hits":
		s.hitsRequests.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		w.Write([]byte(s.hits))
	default:
		http.Error(w, "unexpected request "+r.URL.RawQuery, http.StatusBadRequest)
	}
}

func TestClientPrepareCaches(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "capabilities", "mapserver8_wfs_2_0_0.xml"))
	if err != nil {
		t.Fatal(err)
	}
	cs := &capsServer{caps: b}
	srv := serve(t, cs)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newTestClient(t, 2, WithNegotiationTTL(time.Hour), WithClock(func() time.Time { return now }))
	l := source.Layer{Kind: Kind, URL: srv.URL + "/wfs?token=" + testToken, Settings: Settings{TypeName: "nc", Version: Auto, OutputFormat: Auto}, PageSize: 17}

	for i, step := range []time.Duration{0, 30 * time.Minute, 31 * time.Minute} {
		now = now.Add(step)
		got, _, err := c.Prepare(t.Context(), l)
		if err != nil {
			t.Fatal(err)
		}
		if settingsOf(got).Version != "2.0.0" || settingsOf(got).OutputFormat != "application/json; subtype=geojson" || got.SRID != 0 {
			t.Errorf("prepare %d: %+v", i, got)
		}
	}
	if n := cs.capsRequests.Load(); n != 2 {
		t.Errorf("%d capabilities requests; want 2 (the second prepare is cached, the third is past the TTL)", n)
	}
	fixed := l
	setSettings(&fixed, func(s *Settings) { s.Version, s.OutputFormat = "2.0.0", "application/json" })
	if got, w, err := c.Prepare(t.Context(), fixed); err != nil || !reflect.DeepEqual(got, fixed) || w != nil || cs.capsRequests.Load() != 2 {
		t.Errorf("a fully configured layer must pass through without a request: %+v %v %v", got, w, err)
	}
}

func TestClientCapabilitiesErrors(t *testing.T) {
	t.Parallel()
	l := func(url string) source.Layer {
		return source.Layer{Kind: Kind, URL: url + "/wfs?token=" + testToken, Settings: Settings{TypeName: "nc", Version: Auto, OutputFormat: Auto}}
	}
	t.Run("exception report is the server's verdict", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, body(t, 200, "mapserver_service_exception_1_1.xml"))
		_, err := newTestClient(t, 1).Capabilities(t.Context(), l(srv.URL))
		var rep *ows.ExceptionReportError
		if !errors.As(err, &rep) || !strings.HasPrefix(err.Error(), "wfs: GetCapabilities (") || strings.Count(err.Error(), "wfs: ") != 1 {
			t.Errorf("err %v; want *ows.ExceptionReportError, named wfs once", err)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("error leaks the token: %v", err)
		}
	})
	t.Run("malformed document names wfs once", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/xml")
			io.WriteString(w, `<wfs:WFS_Capabilities xmlns:wfs="http://www.opengis.net/wfs/2.0" version="2.0.0"><wfs:FeatureTypeList>`)
		}))
		_, err := newTestClient(t, 1).Capabilities(t.Context(), l(srv.URL))
		if err == nil || !strings.HasPrefix(err.Error(), "wfs: GetCapabilities (") || strings.Count(err.Error(), "wfs: ") != 1 ||
			!strings.Contains(err.Error(), "capabilities: malformed XML") {
			t.Errorf("err %v; want one wfs: GetCapabilities error saying the XML is malformed", err)
		}
	})
	t.Run("HTML error page is retried", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		inner := body(t, 200, "proxy_maintenance.html")
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			inner.ServeHTTP(w, r)
		}))
		_, err := newTestClient(t, 3).Capabilities(t.Context(), l(srv.URL))
		if !errors.Is(err, httpcall.ErrHTMLBody) || n.Load() != 3 {
			t.Errorf("err %v after %d requests; want httpcall.ErrHTMLBody after 3", err, n.Load())
		}
	})
}

func TestClientHits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       int
		err        error
	}{
		{"2.0 numberMatched", `<?xml version="1.0"?><wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" numberMatched="100" numberReturned="0"/>`, 100, nil},
		{"1.1 numberOfFeatures", `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" numberOfFeatures="42"></wfs:FeatureCollection>`, 42, nil},
		{"json numberMatched", `{"type":"FeatureCollection","numberMatched":7,"features":[]}`, 7, nil},
		{"json totalFeatures", `{"type":"FeatureCollection","totalFeatures":"8","features":[]}`, 8, nil},
		{"unknown", `<wfs:FeatureCollection numberMatched="unknown" numberReturned="0"/>`, 0, ErrNoHitCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := &capsServer{hits: tt.body}
			srv := serve(t, cs)
			n, err := newTestClient(t, 1).Hits(t.Context(), source.Layer{Kind: Kind, URL: srv.URL, Settings: Settings{TypeName: "nc", Version: "2.0.0"}})
			if n != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("hits %d, err %v; want %d, %v", n, err, tt.want, tt.err)
			}
		})
	}
}

// TestNegotiatedRequestAsksWGS84: a GeoJSON request of a layer whose
// capabilities offer EPSG:4326 asks for it (MapServer would otherwise write
// the NAD27 layer's own coordinates, stored 30 m off as WGS 84); one that
// cannot be served in 4326 asks for nothing and is read in its DefaultCRS;
// a srsName in the feed's URL is the operator's and is kept.
func TestNegotiatedRequestAsksWGS84(t *testing.T) {
	t.Parallel()
	ms20 := readCapabilities(t, "mapserver8_wfs_2_0_0.xml")
	nad27Only := readCapabilities(t, "mapserver8_wfs_2_0_0.xml")
	for i := range nad27Only.FeatureTypes {
		nad27Only.FeatureTypes[i].OtherCRS = nil
	}
	for _, tt := range []struct {
		name    string
		caps    *Capabilities
		url     string
		format  string
		wantSRS string
	}{
		{"offers 4326", ms20, "http://h/wfs", Auto, GeoJSONSRSName},
		{"native CRS only", nad27Only, "http://h/wfs", Auto, ""},
		{"operator's srsName", ms20, "http://h/wfs?srsName=EPSG:4267", Auto, "EPSG:4267"},
		{"GML says its own CRS", ms20, "http://h/wfs", "application/gml+xml; version=3.2", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Negotiate(tt.caps, source.Layer{Kind: Kind, URL: tt.url, Settings: Settings{TypeName: "nc", Version: Auto, OutputFormat: tt.format}})
			if err != nil {
				t.Fatal(err)
			}
			u, err := RequestURL(got, 0)
			if err != nil {
				t.Fatal(err)
			}
			if srs := u.Query().Get("srsName"); srs != tt.wantSRS {
				t.Errorf("request %s: srsName %q; want %q", u, srs, tt.wantSRS)
			}
		})
	}
	// Without negotiation (a fixed version and format), a GeoJSON request
	// asks for WGS 84 too.
	u, err := RequestURL(source.Layer{Kind: Kind, URL: "http://h/wfs", Settings: Settings{TypeName: "nc", Version: "1.1.0", OutputFormat: "geojson"}}, 0)
	if err != nil || u.Query().Get("srsName") != GeoJSONSRSName {
		t.Errorf("fixed format: %v, %v; want srsName %s", u, err, GeoJSONSRSName)
	}
}
