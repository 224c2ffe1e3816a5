package wfs

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Defaults applied when a Layer leaves a field empty.
const (
	DefaultVersion      = "2.0.0"
	DefaultOutputFormat = "application/json"
)

// paged reports whether the layer is fetched in several requests.
func paged(l source.Layer) bool {
	return l.PageSize > 0
}

func versionOf(l source.Layer) string { return settingsOf(l).version() }

// Validate reports why layer l cannot be requested, wrapping source.ErrInvalidLayer
// ("wfs: invalid layer: …").
func Validate(l source.Layer) error {
	return source.Named(Kind, validate(l))
}

func validate(l source.Layer) error {
	u, err := url.Parse(l.URL)
	if err != nil {
		return fmt.Errorf("%w: url %s: %v", source.ErrInvalidLayer, RedactURL(l.URL), httpcall.RedactErr(err, l.URL))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %s: want an absolute http or https URL", source.ErrInvalidLayer, RedactURL(l.URL))
	}
	if l.Kind != Kind {
		return fmt.Errorf("%w: kind %q: want %q", source.ErrInvalidLayer, l.Kind, Kind)
	}
	if settingsOf(l).TypeName == "" {
		return fmt.Errorf("%w: WFS layer without a type name", source.ErrInvalidLayer)
	}
	if s := settingsOf(l); s.Version == Auto || s.OutputFormat == Auto {
		return fmt.Errorf("%w: version or output format %q must be negotiated first (Client.Prepare)", source.ErrInvalidLayer, Auto)
	}
	if v := versionOf(l); !slices.Contains(Versions, v) {
		return fmt.Errorf("%w: WFS version %q: want %s", source.ErrInvalidLayer, v, strings.Join(Versions, " or "))
	}
	if l.PageSize < 0 {
		return fmt.Errorf("%w: negative page size %d", source.ErrInvalidLayer, l.PageSize)
	}
	return nil
}

// RequestURL returns the URL of the request for the page of layer that starts
// at feature startIndex (0-based).
//
// A layer gets a GetFeature request: 2.0.0 sends typeNames/count, 1.1.0 and 1.0.0 send
// typeName/maxFeatures; startIndex and the page size only when PageSize > 0.
// Query parameters already in Layer.URL (an API token, a CQL filter, srsName)
// are kept in their order and spelling, except those that name a parameter we
// set, compared case-insensitively as OGC KVP keys are: ours win.
func RequestURL(layer source.Layer, startIndex int) (*url.URL, error) {
	u, err := requestURL(layer, startIndex)
	return u, source.Named(Kind, err)
}

func requestURL(layer source.Layer, startIndex int) (*url.URL, error) {
	if err := Validate(layer); err != nil {
		return nil, err
	}
	if startIndex < 0 {
		return nil, fmt.Errorf("%w: negative start index %d", source.ErrInvalidLayer, startIndex)
	}

	version := versionOf(layer)
	format := settingsOf(layer).OutputFormat
	if format == "" {
		format = DefaultOutputFormat
	}
	ours := [][2]string{{"service", "WFS"}, {"version", version}, {"request", "GetFeature"}}
	if version == "2.0.0" {
		ours = append(ours, [2]string{"typeNames", settingsOf(layer).TypeName})
	} else {
		ours = append(ours, [2]string{"typeName", settingsOf(layer).TypeName})
	}
	ours = append(ours, [2]string{"outputFormat", format})
	if wgs84SRSName(layer, format) {
		ours = append(ours, [2]string{"srsName", GeoJSONSRSName})
	}
	if settingsOf(layer).SortBy != "" {
		ours = append(ours, [2]string{"sortBy", settingsOf(layer).SortBy})
	}
	if layer.PageSize > 0 {
		ours = append(ours, [2]string{"startIndex", strconv.Itoa(startIndex)})
		if version == "2.0.0" {
			ours = append(ours, [2]string{"count", strconv.Itoa(layer.PageSize)})
		} else {
			ours = append(ours, [2]string{"maxFeatures", strconv.Itoa(layer.PageSize)})
		}
	}
	// Every spelling of the parameters we own is dropped, including the
	// other version's names (typeName vs typeNames, count vs maxFeatures),
	// so that a server never sees two answers to one question.
	return serviceURL(layer, getFeatureParams, ours)
}

// GeoJSONSRSName is the srsName a GeoJSON GetFeature request asks for when
// the feed names no CRS: WGS 84 in the form servers honour as longitude
// first in GeoJSON. MapServer 8.0 (WFS 2.0 and 1.1) writes longitude/
// latitude for EPSG:4326 and urn:ogc:def:crs:EPSG::4326 alike and refuses
// http://www.opengis.net/def/crs/EPSG/0/4326, CRS:84 and the CRS84 URN
// ("Invalid SRS", InvalidParameterValue); GeoServer writes GeoJSON
// longitude first for EPSG:4326 (and may write latitude first for the
// URN), so the short form is the one asked for.
const GeoJSONSRSName = "EPSG:4326"

// wgs84SRSName reports whether a GetFeature request of layer in format
// must ask for GeoJSONSRSName: GeoJSON output of a layer whose URL names
// no srsName and whose SRID is not set (negotiation sets it to the
// layer's DefaultCRS when the capabilities say the layer cannot be served
// in 4326). Without it a server writes GeoJSON in the layer's native CRS,
// without saying which, and the features would be read as WGS 84.
func wgs84SRSName(layer source.Layer, format string) bool {
	return layer.SRID == 0 && IsGeoJSONFormat(format) && srsNameOf(layer.URL) == ""
}

// getFeatureParams are the parameters a GetFeature request sets itself.
var getFeatureParams = []string{"service", "version", "request", "typename", "typenames", "outputformat",
	"sortby", "startindex", "count", "maxfeatures"}

// RedactURL returns raw as it may be logged, stored or printed: every
// userinfo, every fragment and the value of every query parameter except a
// short allow-list of harmless protocol parameters (service, typeNames,
// count, …) replaced by "REDACTED". It is redact.URL, kept here because the
// package's errors and Page.URL are built with it.
func RedactURL(raw string) string { return redact.URL(raw) }

// checkHeaders refuses a layer header that net/http would refuse to send
// (httpcall.CheckHeaders): the layer is invalid, and no request is made.
func checkHeaders(layer source.Layer) error {
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return fmt.Errorf("%w: %v", source.ErrInvalidLayer, err)
	}
	return nil
}

// PageURL is the request of page of layer as a dead letter names it
// (credentials redacted): the GetFeature request at that page's
// startIndex, or the layer's URL when no request can be built for it.
func (c *Client) PageURL(layer source.Layer, page int) string {
	u, err := RequestURL(layer, page*layer.PageSize)
	if err != nil {
		return RedactURL(layer.URL)
	}
	return RedactURL(u.String())
}
