package discover

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// ogcapiDefaultLimit is the page_size a feed without one sends as limit
// (feeds' default), for the checks' arithmetic.
const ogcapiDefaultLimit = 1000

// ogcapiURL lists the collections of the server at raw (its landing page
// or /collections), or the one collection raw names, and describes each.
func (d *Discoverer) ogcapiURL(ctx context.Context, raw string, res *Result) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	path := strings.TrimRight(u.Path, "/")
	if i := strings.LastIndex(path, "/collections/"); i >= 0 && !strings.Contains(path[i+len("/collections/"):], "/") {
		id, _ := url.PathUnescape(path[i+len("/collections/"):])
		root := *u
		root.Path, root.RawPath = path[:i], ""
		res.Layers = append(res.Layers, Layer{Kind: KindOGCAPI, Name: id, URL: root.String(), Collection: id, Count: -1})
		d.each(ctx, res.Layers, d.ogcapiLayer)
		return nil
	}
	root, err := ogcapi.LandingURL(raw)
	if err != nil {
		return err
	}
	colls, err := d.ogc.Collections(ctx, d.layer(KindOGCAPI, root.String()))
	if err != nil {
		return err
	}
	for _, c := range colls {
		if c.ItemType != "" && c.ItemType != "feature" {
			continue
		}
		if c.ID == "" {
			res.Problems = append(res.Problems, "a collection without an id in "+redact.URL(root.String())+"/collections")
			continue
		}
		if !d.keep(res, c.ID, c.Title) {
			continue
		}
		res.Layers = append(res.Layers, Layer{Kind: KindOGCAPI, Name: c.ID, Title: c.Title, URL: root.String(), Collection: c.ID, Count: -1})
	}
	d.each(ctx, res.Layers, d.ogcapiLayer)
	return nil
}

// ogcapiLayer describes one collection: its discovery as a poll makes it,
// then a page of one feature (its numberMatched, geometry type and id).
func (d *Discoverer) ogcapiLayer(ctx context.Context, l *Layer) {
	layer := d.layer(KindOGCAPI, l.URL)
	layer.Settings = ogcapi.Settings{Collection: l.Collection}
	prepared, warnings, err := d.ogc.Prepare(ctx, layer)
	if err != nil {
		l.Err = err
		return
	}
	for _, w := range warnings {
		l.Notes = append(l.Notes, redact.Text(w))
	}
	first, err := ogcapi.FirstPageURL(prepared, 1)
	if err != nil {
		l.Err = err
		return
	}
	p, err := d.ogc.Page(ctx, prepared, first)
	if err != nil {
		l.Err = err
		return
	}
	l.Geometry = p.FirstGeometry
	if p.NumberMatched >= 0 {
		l.Count, l.CountFrom = p.NumberMatched, "numberMatched"
	}
	switch {
	case p.FirstID != "":
		l.IDWhy = "the feature id (GeoJSON id)"
	case p.Features > 0:
		l.IDWhy = "none: the features have no id; each is known by its content (a hash)"
	default:
		l.IDWhy = "unknown: the collection is empty"
	}
	if d.opts.Check {
		l.Checks = d.ogcapiChecks(ctx, prepared, first, p)
		if p.Features == 0 {
			l.Checks = append(l.Checks, Check{What: "features", Warns: true,
				Detail: "the collection serves no features: a poll would hold an empty snapshot (the empty guard); check the collection against the server's other interfaces (WFS, its data source)"})
		}
	} else if p.NumberMatched < 0 {
		l.Notes = append(l.Notes, "its pages report no numberMatched: a poll asks resulttype=hits, and fails without a count (run -check)")
	}
}

// ogcapiChecks probes how the collection pages and proves itself whole:
// the limit=1 page's numberMatched (else resulttype=hits) and next link,
// and that the next link leads to another feature (MapServer#6613 serves
// page 1 again).
func (d *Discoverer) ogcapiChecks(ctx context.Context, layer source.Layer, first string, p ogcapi.ItemsPage) []Check {
	var cs []Check
	count := p.NumberMatched
	switch {
	case p.NumberMatchedText != "":
		cs = append(cs, Check{What: "completeness", Fails: true, Detail: "numberMatched is " + p.NumberMatchedText + ", not a count: a poll fails"})
	case count >= 0:
		cs = append(cs, Check{What: "completeness", Detail: fmt.Sprintf("numberMatched %d on a page of limit=1", count)})
	default:
		hits, err := d.ogc.Page(ctx, layer, first+"&resulttype=hits")
		if err == nil && hits.NumberMatched >= 0 {
			count = hits.NumberMatched
			cs = append(cs, Check{What: "completeness", Detail: fmt.Sprintf("no numberMatched on its pages; resulttype=hits answers %d", count)})
		} else {
			cs = append(cs, Check{What: "completeness", Fails: true, Detail: "no numberMatched on its pages nor to resulttype=hits: a poll fails; set completeness: links_only to trust its next links"})
		}
	}
	switch {
	case p.Next == "" && p.Features == 1 && count != 1:
		cs = append(cs, Check{What: "paging", Fails: count > ogcapiDefaultLimit || count < 0,
			Detail: "a full page of limit=1 has no next link: the server does not page (a poll of more than one page fails)"})
	case p.Next == "":
		cs = append(cs, Check{What: "paging", Detail: "one page holds the whole collection"})
	default:
		q, err := d.ogc.Page(ctx, layer, p.Next)
		switch {
		case err != nil:
			cs = append(cs, Check{What: "paging", Fails: count > ogcapiDefaultLimit, Detail: "its next link fails: " + redact.Error(err)})
		case q.Features > 0 && q.FirstID != "" && q.FirstID == p.FirstID:
			fails := count > ogcapiDefaultLimit || count < 0
			// Within one page a poll never follows a next link, but a
			// server whose paging repeats itself is one to watch.
			cs = append(cs, Check{What: "paging", Fails: fails, Warns: !fails,
				Detail: fmt.Sprintf("its next link serves page 1 again (feature %q; MapServer#6613): only a collection within one page (page_size %d) polls", p.FirstID, ogcapiDefaultLimit)})
		default:
			cs = append(cs, Check{What: "paging", Detail: "next links lead on (page 2 starts with another feature)"})
		}
	}
	return cs
}
