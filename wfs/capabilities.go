package wfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/ows"
	"github.com/ingestd/ingestd/source"
)

// Auto, as a Layer's Version or OutputFormat, asks Client.Prepare to pick the
// value from the server's GetCapabilities. A feed sets it with
// `version: auto` / `output_format: auto`.
const Auto = "auto"

// DefaultNegotiationTTL is how long Client.Prepare reuses what it learned
// from a server's capabilities: servers change formats and versions on
// upgrades, not between two hourly polls, and a GetCapabilities document can
// be larger than the layer itself.
const DefaultNegotiationTTL = time.Hour

// maxCapabilitiesBytes bounds a GetCapabilities document. A GeoServer with
// thousands of layers answers a few MB; anything past this is not a
// capabilities document we want to hold in memory.
const maxCapabilitiesBytes = 64 << 20

// Server vendors that Capabilities recognises, for behaviour the documents
// do not declare.
const (
	VendorMapServer = "mapserver"
	VendorGeoServer = "geoserver"
)

// Capabilities is what ingestd reads from a WFS GetCapabilities document.
type Capabilities struct {
	// Version is the version of the document, the one the server chose to
	// answer in: the highest that both sides accept.
	Version string
	// Versions lists every version the server says it speaks
	// (ServiceTypeVersion and the AcceptVersions/version parameters).
	Versions []string
	// OutputFormats lists the GetFeature outputFormat values the server
	// offers for all feature types, in the server's spelling and order.
	OutputFormats []string
	// ImplementsResultPaging is the WFS 2.0 OWS constraint of that name.
	// WFS 1.1 has no such declaration: see PagingSupported.
	ImplementsResultPaging bool
	// Vendor is VendorMapServer, VendorGeoServer or "" (unknown), guessed
	// from markers those servers leave in their documents.
	Vendor string
	// FeatureTypes lists the feature types of the FeatureTypeList.
	FeatureTypes []FeatureType
}

// FeatureType is one entry of a capabilities document's FeatureTypeList.
type FeatureType struct {
	// Name is the type name as advertised, often prefixed ("ms:nc", "topp:states").
	Name string
	// DefaultCRS is the CRS features come in when the request names none
	// (DefaultCRS in WFS 2.0, DefaultSRS in 1.1, SRS in 1.0).
	DefaultCRS string
	// OtherCRS lists the other CRSs the server can reproject to.
	OtherCRS []string
	// OutputFormats overrides Capabilities.OutputFormats for this type when
	// the server lists formats per type (MapServer does); empty otherwise.
	OutputFormats []string
}

// FeatureType returns the feature type called name. A name matches its
// advertised spelling exactly, or by local part when either side has no
// prefix, because MapServer advertises "ms:nc" in 2.0 and "nc" in 1.1 and
// accepts both in requests.
func (c *Capabilities) FeatureType(name string) (*FeatureType, bool) {
	for i := range c.FeatureTypes {
		if c.FeatureTypes[i].Name == name {
			return &c.FeatureTypes[i], true
		}
	}
	local := func(s string) (string, bool) {
		if _, l, ok := strings.Cut(s, ":"); ok {
			return l, true
		}
		return s, false
	}
	want, wantPrefixed := local(name)
	for i := range c.FeatureTypes {
		got, gotPrefixed := local(c.FeatureTypes[i].Name)
		if got == want && (!wantPrefixed || !gotPrefixed) {
			return &c.FeatureTypes[i], true
		}
	}
	return nil, false
}

// PagingSupported reports whether GetFeature requests of the given version
// may page with startIndex.
//
// WFS 2.0 declares it: the ImplementsResultPaging constraint is TRUE. WFS 1.1
// has no paging in the standard and no way to declare it, but both big
// servers implement startIndex there as a vendor extension: MapServer since
// 6.0 and GeoServer since 2.0 (with maxFeatures as the page size). Any other
// 1.1 server is assumed not to page, because a server that ignores startIndex
// answers every page with the first one.
func (c *Capabilities) PagingSupported(version string) bool {
	switch version {
	case "2.0.0":
		return c.ImplementsResultPaging
	case "1.1.0":
		return c.Vendor == VendorMapServer || c.Vendor == VendorGeoServer
	}
	return false
}

// xmlCapabilities mirrors the parts of WFS 1.0/1.1/2.0 capabilities that
// ingestd reads. encoding/xml matches by local name when a tag names no
// namespace, so one shape reads OWS 1.0 (WFS 1.1) and OWS 1.1 (WFS 2.0) alike.
type xmlCapabilities struct {
	XMLName              xml.Name
	Version              string        `xml:"version,attr"`
	ServiceTypeVersions  []string      `xml:"ServiceIdentification>ServiceTypeVersion"`
	Operations           []xmlOp       `xml:"OperationsMetadata>Operation"`
	Parameters           []xmlParam    `xml:"OperationsMetadata>Parameter"`
	Constraints          []xmlParam    `xml:"OperationsMetadata>Constraint"`
	FeatureTypes         []xmlFeatType `xml:"FeatureTypeList>FeatureType"`
	ServiceTitle         string        `xml:"ServiceIdentification>Title"`
	LegacyServiceTitle10 string        `xml:"Service>Title"`
}

type xmlOp struct {
	Name        string     `xml:"name,attr"`
	Parameters  []xmlParam `xml:"Parameter"`
	Constraints []xmlParam `xml:"Constraint"`
}

// xmlParam is an ows:Parameter or ows:Constraint: values directly inside
// (OWS 1.0) or inside AllowedValues (OWS 1.1), or a DefaultValue.
type xmlParam struct {
	Name         string   `xml:"name,attr"`
	Values       []string `xml:"Value"`
	Allowed      []string `xml:"AllowedValues>Value"`
	DefaultValue string   `xml:"DefaultValue"`
}

func (p xmlParam) values() []string { return append(slices.Clone(p.Values), p.Allowed...) }

type xmlFeatType struct {
	Name       string   `xml:"Name"`
	DefaultCRS string   `xml:"DefaultCRS"`
	DefaultSRS string   `xml:"DefaultSRS"`
	SRS10      string   `xml:"SRS"`
	OtherCRS   []string `xml:"OtherCRS"`
	OtherSRS   []string `xml:"OtherSRS"`
	Formats    []string `xml:"OutputFormats>Format"`
}

// ParseCapabilities reads a WFS 1.1 or 2.0 GetCapabilities document (a 1.0
// document yields its version and feature types only). An OGC exception
// report is returned as *ows.ExceptionReportError. Its errors read "wfs: …".
func ParseCapabilities(r io.Reader) (*Capabilities, error) {
	caps, err := parseCapabilities(r)
	return caps, source.Named(Kind, err)
}

// parseCapabilities is ParseCapabilities with errors that name no kind,
// for Client.Capabilities to wrap in its own "wfs: GetCapabilities …".
func parseCapabilities(r io.Reader) (*Capabilities, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCapabilitiesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading capabilities: %w", err)
	}
	if len(data) > maxCapabilitiesBytes {
		return nil, fmt.Errorf("capabilities: %w (limit %d bytes)", ErrResponseTooLarge, maxCapabilitiesBytes)
	}
	var doc xmlCapabilities
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("capabilities: malformed XML: %w", err)
	}
	switch strings.ToLower(doc.XMLName.Local) {
	case "wfs_capabilities":
	case "exceptionreport", "serviceexceptionreport":
		rep, err := ows.Parse(bytes.NewReader(data), ows.XMLReport, http.StatusOK, "")
		if err != nil {
			return nil, fmt.Errorf("capabilities: %w", err)
		}
		return nil, rep
	default:
		return nil, fmt.Errorf("capabilities: root element %s is not WFS_Capabilities", doc.XMLName.Local)
	}

	c := &Capabilities{Version: strings.TrimSpace(doc.Version)}
	addVersion := func(v string) {
		v = strings.TrimSpace(v)
		if v != "" && !slices.Contains(c.Versions, v) {
			c.Versions = append(c.Versions, v)
		}
	}
	addVersion(c.Version)
	for _, v := range doc.ServiceTypeVersions {
		addVersion(v)
	}
	for _, p := range doc.Parameters {
		if strings.EqualFold(p.Name, "version") || strings.EqualFold(p.Name, "AcceptVersions") {
			for _, v := range p.values() {
				addVersion(v)
			}
		}
	}
	constraints := slices.Clone(doc.Constraints)
	for _, op := range doc.Operations {
		switch {
		case strings.EqualFold(op.Name, "GetCapabilities"):
			for _, p := range op.Parameters {
				if strings.EqualFold(p.Name, "AcceptVersions") {
					for _, v := range p.values() {
						addVersion(v)
					}
				}
			}
		case strings.EqualFold(op.Name, "GetFeature"):
			for _, p := range op.Parameters {
				if strings.EqualFold(p.Name, "outputFormat") {
					c.OutputFormats = append(c.OutputFormats, trimAll(p.values())...)
				}
			}
			// Some servers declare the constraint on the operation only.
			constraints = append(constraints, op.Constraints...)
		}
	}
	for _, k := range constraints {
		if strings.EqualFold(k.Name, "ImplementsResultPaging") && strings.EqualFold(strings.TrimSpace(k.DefaultValue), "TRUE") {
			c.ImplementsResultPaging = true
		}
	}
	for _, ft := range doc.FeatureTypes {
		def := firstNonEmpty(ft.DefaultCRS, ft.DefaultSRS, ft.SRS10)
		c.FeatureTypes = append(c.FeatureTypes, FeatureType{
			Name:          strings.TrimSpace(ft.Name),
			DefaultCRS:    strings.TrimSpace(def),
			OtherCRS:      trimAll(append(slices.Clone(ft.OtherCRS), ft.OtherSRS...)),
			OutputFormats: trimAll(ft.Formats),
		})
	}
	c.Vendor = guessVendor(data, firstNonEmpty(doc.ServiceTitle, doc.LegacyServiceTitle10))
	return c, nil
}

// guessVendor looks for what MapServer and GeoServer leave in every
// capabilities document: MapServer its "ms" namespace (2.0), its vendor
// GetMetadata request in MetadataURL, or its comments about missing "ows_*"
// metadata (1.1); GeoServer its name in the service title or its
// /geoserver/ path in operation URLs.
func guessVendor(doc []byte, title string) string {
	lower := bytes.ToLower(doc)
	switch {
	case bytes.Contains(lower, []byte("mapserver.gis.umn.edu")),
		bytes.Contains(lower, []byte("request=getmetadata&amp;layer=")),
		bytes.Contains(lower, []byte(`metadata "ows_`)):
		return VendorMapServer
	case strings.Contains(strings.ToLower(title), "geoserver"),
		bytes.Contains(lower, []byte("/geoserver/")):
		return VendorGeoServer
	}
	return ""
}

func trimAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// Output format preferences, best first, compared after normalising case and
// spaces. GeoJSON first (the fastest decoder, and RFC 7946 axis order); then
// GML 3.2; then GML 3.1.1.
var (
	geoJSONFormats = []string{"application/json", "application/geo+json", "json", "geojson", "application/json; subtype=geojson"}
	gml32Formats   = []string{"application/gml+xml; version=3.2", "text/xml; subtype=gml/3.2", "text/xml; subtype=gml/3.2.1", "gml32"}
	gml311Formats  = []string{"text/xml; subtype=gml/3.1.1", "gml3"}
)

// normFormat lower-cases a MIME type and removes spaces so that
// "application/json;subtype=geojson" matches "application/json; subtype=geojson".
func normFormat(f string) string {
	return strings.ToLower(strings.Join(strings.Fields(f), ""))
}

// pickFormat returns the offered format (in the server's spelling) that
// comes first in prefs, or "".
func pickFormat(offered []string, prefs ...[]string) string {
	for _, group := range prefs {
		for _, p := range group {
			for _, o := range offered {
				if normFormat(o) == normFormat(p) {
					return o
				}
			}
		}
	}
	return ""
}

// IsGeoJSONFormat reports whether an outputFormat value asks for GeoJSON.
func IsGeoJSONFormat(f string) bool {
	return pickFormat([]string{f}, geoJSONFormats) != ""
}

// negotiateVersion settles s.Version (Auto: the best of Versions the
// server speaks) and warns when the capabilities came in another version.
func negotiateVersion(caps *Capabilities, s *Settings, warn func(string, ...any)) error {
	if s.Version == Auto {
		switch {
		case slices.Contains(Versions, caps.Version):
			s.Version = caps.Version
		default:
			for _, v := range Versions {
				if slices.Contains(caps.Versions, v) {
					s.Version = v
					warn("server answered capabilities in version %q; using %s, which it also lists", caps.Version, v)
					break
				}
			}
		}
		if s.Version == Auto {
			return fmt.Errorf("wfs: negotiate: server speaks WFS %s; ingestd needs %s",
				strings.Join(caps.Versions, ", "), strings.Join(Versions, " or "))
		}
	} else if caps.Version != "" && caps.Version != s.version() {
		warn("capabilities came in version %s, not the configured %s; formats and paging are read from them", caps.Version, s.version())
	}
	return nil
}

// Negotiate fills what layer leaves to the server (Version or OutputFormat
// set to Auto) from caps, and adapts the rest to what the server can do:
//
//   - Version auto: the version the server answered the capabilities in if
//     ingestd speaks it (2.0.0 or 1.1.0), else the best one it lists.
//   - OutputFormat auto: GeoJSON if the feature type (or else GetFeature)
//     offers it (application/json, application/geo+json, json, geojson,
//     "application/json; subtype=geojson"), else GML 3.2, else GML 3.1.1;
//     none of these is an error.
//   - PageSize > 0 on a server that does not page (Capabilities.PagingSupported)
//     becomes 0, one request, with a warning: the poll records it.
//   - SRID 0 with GeoJSON output: the CRS of the srsName in layer.URL; else,
//     when the feature type cannot be served in EPSG:4326 (its DefaultCRS
//     and OtherCRS lack it), its DefaultCRS; else 0, and the request asks
//     for GeoJSONSRSName. Servers write GeoJSON in the CRS asked for, or
//     the default, without a crs member before the features (MapServer
//     writes none, GeoServer writes it after them), and RFC 7946 would say
//     4326.
//
// The layer's type name must be in caps. Warnings describe every adaptation
// that an operator should hear about.
func Negotiate(caps *Capabilities, layer source.Layer) (source.Layer, []string, error) {
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	if caps == nil {
		return layer, nil, errors.New("wfs: negotiate: no capabilities")
	}
	if layer.Kind != Kind {
		return layer, nil, nil
	}
	s := settingsOf(layer)
	ft, ok := caps.FeatureType(settingsOf(layer).TypeName)
	if !ok {
		names := make([]string, 0, min(len(caps.FeatureTypes), 10))
		for _, t := range caps.FeatureTypes[:min(len(caps.FeatureTypes), 10)] {
			names = append(names, t.Name)
		}
		return withSettings(layer, s), nil, fmt.Errorf("wfs: %w: feature type %q is not in the server's capabilities (it offers %s)",
			source.ErrInvalidLayer, settingsOf(layer).TypeName, strings.Join(names, ", "))
	}

	if err := negotiateVersion(caps, &s, warn); err != nil {
		return withSettings(layer, s), warnings, err
	}

	offered := ft.OutputFormats
	if len(offered) == 0 {
		offered = caps.OutputFormats
	}
	if s.OutputFormat == Auto {
		s.OutputFormat = pickFormat(offered, geoJSONFormats, gml32Formats, gml311Formats)
		if s.OutputFormat == "" {
			return withSettings(layer, s), warnings, fmt.Errorf("wfs: negotiate: feature type %s offers none of GeoJSON, GML 3.2 or GML 3.1.1 (it offers %s)",
				ft.Name, strings.Join(offered, ", "))
		}
	} else if len(offered) > 0 && s.OutputFormat != "" && pickFormat(offered, []string{s.OutputFormat}) == "" {
		warn("server does not list outputFormat %q for %s", s.OutputFormat, ft.Name)
	}

	if layer.PageSize > 0 && !caps.PagingSupported(s.version()) {
		why := "does not declare ImplementsResultPaging"
		if s.version() != "2.0.0" {
			why = "is not known to page in WFS " + s.version()
		}
		warn("server %s: fetching %s in one request instead of pages of %d", why, ft.Name, layer.PageSize)
		layer.PageSize = 0
	}

	if layer.SRID == 0 && IsGeoJSONFormat(firstNonEmpty(s.OutputFormat, DefaultOutputFormat)) {
		srs := srsNameOf(layer.URL)
		if srs == "" && !servesWGS84(ft) {
			// The request cannot ask for EPSG:4326 (GeoJSONSRSName): the
			// GeoJSON comes in the default CRS.
			srs = ft.DefaultCRS
		}
		if srs != "" {
			// Only the SRID matters: GeoJSON is longitude first whatever
			// the name says about axis order.
			if crs, err := feature.ParseSRSName(srs); err == nil {
				layer.SRID = crs.SRID
			} else {
				warn("cannot read CRS %q of %s (%v); assuming GeoJSON in EPSG:4326", srs, ft.Name, err)
			}
		}
	}
	return withSettings(layer, s), warnings, nil
}

// servesWGS84 reports whether the feature type can be served in EPSG:4326
// (its DefaultCRS or one of its OtherCRS, in any form ParseSRSName reads),
// or names no CRS at all, in which case the request asks for 4326 and a
// server that cannot says so.
func servesWGS84(ft *FeatureType) bool {
	if ft.DefaultCRS == "" && len(ft.OtherCRS) == 0 {
		return true
	}
	for _, name := range append([]string{ft.DefaultCRS}, ft.OtherCRS...) {
		if crs, err := feature.ParseSRSName(name); err == nil && crs.SRID == 4326 {
			return true
		}
	}
	return false
}

// srsNameOf returns the srsName query parameter of a layer URL ("" if none);
// KVP keys are case-insensitive.
func srsNameOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	for k, v := range u.Query() {
		if strings.EqualFold(k, "srsName") && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// serviceURL returns layer's endpoint with the query parameters this package
// owns removed (every spelling, case-insensitively) and ours appended; the
// operator's own parameters (a token, a CQL filter, srsName) stay in order.
func serviceURL(layer source.Layer, drop []string, ours [][2]string) (*url.URL, error) {
	u, err := url.Parse(layer.URL)
	if err != nil {
		return nil, fmt.Errorf("wfs: %w: url %s: %v", source.ErrInvalidLayer, RedactURL(layer.URL), httpcall.RedactErr(err, layer.URL))
	}
	var parts []string
	for seg := range strings.SplitSeq(u.RawQuery, "&") {
		if seg == "" {
			continue
		}
		key, _, _ := strings.Cut(seg, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if slices.Contains(drop, strings.ToLower(key)) {
			continue
		}
		parts = append(parts, seg)
	}
	for _, kv := range ours {
		parts = append(parts, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
	}
	u.RawQuery = strings.Join(parts, "&")
	return u, nil
}

// kvpParams are the request parameters capabilities and hits requests set
// or must not carry over from the layer's URL.
var kvpParams = []string{"service", "version", "request", "acceptversions", "typename", "typenames",
	"outputformat", "sortby", "startindex", "count", "maxfeatures", "resulttype"}

// CapabilitiesURL returns the GetCapabilities request for layer: the version
// the layer names, or, when it leaves the version to negotiation, the
// versions ingestd speaks (AcceptVersions, best first), so that the server
// answers in the best one both sides know.
func CapabilitiesURL(layer source.Layer) (*url.URL, error) {
	ours := [][2]string{{"service", "WFS"}, {"request", "GetCapabilities"}}
	if settingsOf(layer).Version == Auto {
		ours = append(ours, [2]string{"acceptVersions", strings.Join(Versions, ",")})
	} else {
		// VERSION for 1.x servers, AcceptVersions for 2.0 ones.
		ours = append(ours, [2]string{"version", versionOf(layer)}, [2]string{"acceptVersions", versionOf(layer)})
	}
	return serviceURL(layer, kvpParams, ours)
}

// HitsURL returns the GetFeature request with resultType=hits for layer: no
// paging, sorting or output format, since only the count is wanted and the
// count comes in the server's default XML whatever the format.
func HitsURL(layer source.Layer) (*url.URL, error) {
	if err := Validate(layer); err != nil {
		return nil, err
	}
	if layer.Kind != Kind {
		return nil, fmt.Errorf("wfs: %w: resultType=hits needs a WFS layer", source.ErrInvalidLayer)
	}
	v := versionOf(layer)
	tn := "typeName"
	if v == "2.0.0" {
		tn = "typeNames"
	}
	return serviceURL(layer, kvpParams, [][2]string{
		{"service", "WFS"}, {"version", v}, {"request", "GetFeature"}, {tn, settingsOf(layer).TypeName}, {"resultType", "hits"},
	})
}

// Capabilities fetches and parses layer's GetCapabilities document, as one
// logical call through the breaker of the layer's origin, like a page. See
// CapabilitiesURL for the version asked for.
func (c *Client) Capabilities(ctx context.Context, layer source.Layer) (*Capabilities, error) {
	if layer.Kind != Kind {
		return nil, fmt.Errorf("wfs: %w: capabilities need a WFS layer", source.ErrInvalidLayer)
	}
	u, err := CapabilitiesURL(layer)
	if err != nil {
		return nil, err
	}
	var caps *Capabilities
	err = c.getXML(ctx, layer, u, func(br *bufio.Reader) error {
		var err error
		caps, err = parseCapabilities(br)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wfs: GetCapabilities (%s): %w", RedactURL(u.String()), err)
	}
	return caps, nil
}

// Hits asks the server how many features layer has (GetFeature with
// resultType=hits): numberMatched in WFS 2.0, numberOfFeatures in 1.1. It is
// one logical call through the origin's breaker. A server that answers
// "unknown" or no count at all yields an error wrapping ErrNoHitCount.
func (c *Client) Hits(ctx context.Context, layer source.Layer) (int, error) {
	u, err := HitsURL(layer)
	if err != nil {
		return 0, err
	}
	n := -1
	err = c.getXML(ctx, layer, u, func(br *bufio.Reader) error {
		var err error
		n, err = readHits(br)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("wfs: resultType=hits (%s): %w", RedactURL(u.String()), err)
	}
	return n, nil
}

// maxHitsBytes bounds how much of a JSON hits answer is read: its count is
// among its first members, and a server that sends features instead must
// not make us read them.
const maxHitsBytes = 1 << 20

// ErrNoHitCount means a resultType=hits answer held no usable count.
var ErrNoHitCount = errors.New("no feature count in the hits response")

// readHits reads the count from the root of a hits response: an XML
// FeatureCollection (numberMatched, numberOfFeatures) or, from servers that
// answer hits in the requested JSON, numberMatched or totalFeatures.
func readHits(br *bufio.Reader) (int, error) {
	kind, _, _ := sniff(br)
	if kind == kindJSON {
		var doc struct {
			NumberMatched json.RawMessage `json:"numberMatched"`
			TotalFeatures json.RawMessage `json:"totalFeatures"`
		}
		if err := json.NewDecoder(io.LimitReader(br, maxHitsBytes)).Decode(&doc); err != nil {
			return 0, fmt.Errorf("hits: %w", err)
		}
		for _, raw := range []json.RawMessage{doc.NumberMatched, doc.TotalFeatures} {
			if n, err := strconv.Atoi(strings.Trim(string(raw), `"`)); err == nil && n >= 0 {
				return n, nil
			}
		}
		return 0, ErrNoHitCount
	}
	d := xml.NewDecoder(br)
	for {
		tok, err := d.RawToken()
		if err != nil {
			return 0, fmt.Errorf("hits: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		for _, name := range []string{"numberMatched", "numberOfFeatures"} {
			for _, a := range se.Attr {
				if a.Name.Local == name {
					if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n >= 0 {
						return n, nil
					}
				}
			}
		}
		return 0, fmt.Errorf("%w (root element %s)", ErrNoHitCount, se.Name.Local)
	}
}

// getXML GETs u as one logical call through the breaker of its origin and
// hands the body to read once it is known to be data: the same rules as a
// page (ClassifyResponse), except that any XML or JSON root is read is
// passed to read, which decides. The feed's headers, body limit and
// redirect policy apply as to its pages.
func (c *Client) getXML(ctx context.Context, layer source.Layer, u *url.URL, read func(*bufio.Reader) error) error {
	if err := checkHeaders(layer); err != nil {
		return err
	}
	req := request(layer, u, "application/xml, text/xml;q=0.9, */*;q=0.1")
	return c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		actx, resp, redacted := a.Ctx, a.Resp, a.Redacted
		if r := httpcall.Throttled(resp, redacted, c.base.Now()); r != nil {
			return *r
		}
		br, note, err := a.OpenBody("response body")
		if err != nil {
			return a.Verdict(httpcall.ReadFailure(resp, err, redacted))
		}
		if note != "" {
			c.base.Logger.Warn(note, "origin", breaker.Origin(a.URL), "url", redacted)
		}

		kind, _, rerr := sniff(br)
		switch {
		case kind == kindException:
			rep, err := ows.Parse(br, ows.XMLReport, resp.StatusCode, redacted)
			if err != nil {
				return a.OriginFailure(&httpcall.BodyError{URL: redacted, Err: err})
			}
			if rep.ServerSide {
				return a.OriginFailure(rep)
			}
			return breaker.Result{Outcome: breaker.Success, Err: rep}
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			return *httpcall.StatusVerdict(resp.StatusCode, redacted)
		case kind == kindUnknown && rerr != nil:
			return a.Verdict(httpcall.ReadFailure(resp, rerr, redacted))
		case kind == kindJSONValue:
			return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Err: httpcall.JSONValueError(br, "a FeatureCollection")}}
		case kind == kindHTML:
			return a.OriginFailure(&httpcall.BodyError{URL: redacted, Err: expected.HTMLPage(br)})
		case kind == kindEmpty:
			return a.OriginFailure(&httpcall.BodyError{URL: redacted, Err: expected.Empty()})
		case kind != kindXML && kind != kindJSON:
			return a.OriginFailure(&httpcall.BodyError{URL: redacted, Err: expected.Unrecognized("")})
		}
		if err := read(br); err != nil {
			var rep *ows.ExceptionReportError
			if errors.As(err, &rep) {
				rep.URL, rep.Status = redacted, resp.StatusCode
				if rep.ServerSide {
					return a.OriginFailure(rep)
				}
				return breaker.Result{Outcome: breaker.Success, Err: rep}
			}
			// A body cut short is the origin's failure; a well-formed
			// document we cannot use (no count, not capabilities, over a
			// limit) is an answer: the server is up.
			var le *feature.LimitError
			if errors.As(err, &le) || errors.Is(err, ErrResponseTooLarge) {
				return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Err: err}}
			}
			if a.BodyErr() != nil || errors.Is(err, io.ErrUnexpectedEOF) || actx.Err() != nil || httpcall.IsTransportRead(err) {
				return a.OriginFailure(&httpcall.BodyError{URL: redacted, Err: err})
			}
			return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Err: err}}
		}
		return breaker.Result{Outcome: breaker.Success}
	})
}

// negotiationCache remembers Prepare's results per layer. Its zero value is
// ready to use; ttl 0 means DefaultNegotiationTTL.
type negotiationCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[negotiationKey]negotiated
}

// negotiationKey is what a negotiation depends on: a Layer less its
// headers (a map, not comparable) and limits.
type negotiationKey struct {
	kind, url, typeName, version, outputFormat, idProperty, sortBy string
	pageSize, srid                                                 int
}

func keyOf(l source.Layer) negotiationKey {
	s := settingsOf(l)
	return negotiationKey{kind: l.Kind, url: l.URL, typeName: s.TypeName, version: s.Version,
		outputFormat: s.OutputFormat, idProperty: l.IDProperty, sortBy: s.SortBy, pageSize: l.PageSize, srid: l.SRID}
}

type negotiated struct {
	layer    source.Layer
	warnings []string
	at       time.Time
}

// WithNegotiationTTL sets how long Prepare reuses a negotiation (default
// DefaultNegotiationTTL).
func WithNegotiationTTL(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.negotiation.ttl = d
		}
	}
}

// NeedsNegotiation reports whether layer leaves its version or output format
// to the server (Auto).
func NeedsNegotiation(l source.Layer) bool {
	s := settingsOf(l)
	return l.Kind == Kind && (s.Version == Auto || s.OutputFormat == Auto)
}

// Prepare returns layer ready for Fetch. A layer that needs no negotiation
// comes back as it is, without a request. Otherwise Prepare fetches the
// server's capabilities (one logical call through the origin's breaker) and
// applies Negotiate; the result and its warnings are reused for the
// negotiation TTL, so hourly polls cost one GetCapabilities an hour. Errors
// are not cached: the next poll asks again.
func (c *Client) Prepare(ctx context.Context, layer source.Layer) (source.Layer, []string, error) {
	if !NeedsNegotiation(layer) {
		return layer, nil, nil
	}
	nc := &c.negotiation
	ttl := nc.ttl
	if ttl <= 0 {
		ttl = DefaultNegotiationTTL
	}
	now := c.base.Now()
	nc.mu.Lock()
	if e, ok := nc.entries[keyOf(layer)]; ok && now.Sub(e.at) < ttl {
		nc.mu.Unlock()
		return e.layer, slices.Clone(e.warnings), nil
	}
	nc.mu.Unlock()

	caps, err := c.Capabilities(ctx, layer)
	if err != nil {
		return layer, nil, err
	}
	out, warnings, err := Negotiate(caps, layer)
	if err != nil {
		return layer, warnings, err
	}
	c.base.Logger.Info("negotiated WFS request", "origin", httpcall.OriginOf(layer.URL), "type_name", settingsOf(layer).TypeName,
		"version", settingsOf(out).Version, "output_format", settingsOf(out).OutputFormat, "page_size", out.PageSize, "srid", out.SRID,
		"vendor", caps.Vendor, "warnings", len(warnings))
	nc.mu.Lock()
	if nc.entries == nil {
		nc.entries = map[negotiationKey]negotiated{}
	}
	// Forget stale entries so that a config churning through URLs does not
	// grow the map without bound.
	for k, e := range nc.entries {
		if now.Sub(e.at) >= ttl {
			delete(nc.entries, k)
		}
	}
	nc.entries[keyOf(layer)] = negotiated{layer: out, warnings: warnings, at: now}
	nc.mu.Unlock()
	return out, slices.Clone(warnings), nil
}
