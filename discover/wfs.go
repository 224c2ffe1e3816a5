package discover

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/wfs"
)

// wfsParams are the request parameters a WFS endpoint's URL may carry
// that are no part of the feed's url.
var wfsParams = []string{"service", "version", "request", "acceptversions", "typename", "typenames",
	"outputformat", "sortby", "startindex", "count", "maxfeatures", "resulttype"}

// wfsEndpoint is raw without the request parameters of a WFS request.
func wfsEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	for k := range q {
		if slices.Contains(wfsParams, strings.ToLower(k)) {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// wfsURL reads the capabilities of the endpoint raw and describes each
// of its feature types.
func (d *Discoverer) wfsURL(ctx context.Context, raw string, res *Result) error {
	endpoint, err := wfsEndpoint(raw)
	if err != nil {
		return err
	}
	layer := d.layer(wfs.Kind, endpoint)
	layer.Settings = wfs.Settings{Version: wfs.Auto}
	caps, err := d.wfs.Capabilities(ctx, layer)
	if err != nil {
		return err
	}
	version := wfs.Auto
	for _, v := range []string{"2.0.0", "1.1.0"} {
		if slices.Contains(caps.Versions, v) {
			version = v
			break
		}
	}
	for _, ft := range caps.FeatureTypes {
		if !d.keep(res, ft.Name, localName(ft.Name)) {
			continue
		}
		l := Layer{Kind: KindWFS, Name: ft.Name, URL: endpoint, TypeName: ft.Name, Version: version, Count: -1,
			IDWhy: "the feature id (gml:id, or the GeoJSON id): WFS features carry one, and no property is declared unique"}
		if version == wfs.Auto || !caps.PagingSupported(version) {
			l.PageSizeZero = true
			l.Notes = append(l.Notes, fmt.Sprintf("the server does not declare paging for WFS %s: page_size 0 (one request per poll)", version))
		}
		res.Layers = append(res.Layers, l)
	}
	d.each(ctx, res.Layers, func(ctx context.Context, l *Layer) { d.wfsLayer(ctx, caps, l) })
	return nil
}

// localName is name without its namespace prefix.
func localName(name string) string {
	if _, l, ok := strings.Cut(name, ":"); ok {
		return l
	}
	return name
}

// wfsLayer describes one feature type: its geometry type from
// DescribeFeatureType and, with Check, its count from resultType=hits.
func (d *Discoverer) wfsLayer(ctx context.Context, caps *wfs.Capabilities, l *Layer) {
	layer := d.layer(wfs.Kind, l.URL)
	version := l.Version
	if version == wfs.Auto {
		version = caps.Version
	}
	layer.Settings = wfs.Settings{Version: version, TypeName: l.TypeName}
	if decl, err := d.wfs.Describe(ctx, layer); err == nil {
		l.Geometry = decl.Geometry
		if l.Geometry == "" {
			l.Geometry = "any geometry (DescribeFeatureType names no type)"
		}
	} else {
		l.Notes = append(l.Notes, "geometry type unknown: "+redact.Error(err))
	}
	if !d.opts.Check {
		return
	}
	paging := Check{What: "paging"}
	switch {
	case l.PageSizeZero:
		paging.Detail = "no paging declared (ImplementsResultPaging): one request per poll; a server capping its answers (maxFeatures) would look complete"
	case version == "2.0.0":
		paging.Detail = "ImplementsResultPaging TRUE: pages by startIndex/count"
	default:
		paging.Detail = "WFS 1.1 of a server known to page (" + caps.Vendor + "): pages by startIndex/maxFeatures"
	}
	l.Checks = append(l.Checks, paging)
	n, err := d.wfs.Hits(ctx, layer)
	if err != nil {
		l.Checks = append(l.Checks, Check{What: "count", Detail: "resultType=hits gives no count (" + redact.Error(err) + "): a poll proves a paged layer by its pages alone"})
		return
	}
	l.Count, l.CountFrom = n, "resultType=hits"
	l.Checks = append(l.Checks, Check{What: "count", Detail: fmt.Sprintf("resultType=hits answers %d", n)})
	if formats := caps.OutputFormats; len(caps.FeatureTypes) > 0 {
		if ft, ok := caps.FeatureType(l.TypeName); ok && len(ft.OutputFormats) > 0 {
			formats = ft.OutputFormats
		}
		if !slices.ContainsFunc(formats, wfs.IsGeoJSONFormat) {
			l.Checks = append(l.Checks, Check{What: "format", Detail: "no GeoJSON output format: output_format auto reads GML"})
		}
	}
}
