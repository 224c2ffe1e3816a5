package ogcapi

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Restore returns link, a link the server gave, with home's (the feed's
// configured url's) userinfo and the query parameters of home it lacks,
// names matched in any case (a server may write APIKEY= where the feed has
// apikey=), when it leads to home's origin: every link of the server's
// (items, schema, next) carries the feed's API key this way when the server
// left it out. A value a scrub replaced by redact.Marker is dropped, and
// home's put back where home has the parameter. A link to another origin is
// returned as it is: home's credentials are not for it. The link's own
// parameters stay as the server wrote them, and home's format parameter
// (f) is never added: the link's type is its format (tipg answers f=json
// on items with an array of rows, not GeoJSON).
func Restore(link, home string) string {
	u, err := url.Parse(link)
	h, herr := url.Parse(home)
	if err != nil || herr != nil || u.Host != h.Host || u.Scheme != h.Scheme {
		return link
	}
	if u.User == nil || strings.Contains(u.User.String(), redact.Marker) {
		u.User = h.User
	}
	var parts []string
	have := url.Values{}
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if part == "" || (err1 == nil && err2 == nil && value == redact.Marker) {
			continue
		}
		have.Add(name, value)
		parts = append(parts, part)
	}
	hq := h.Query()
	for _, k := range slices.Sorted(maps.Keys(hq)) {
		if _, ok := lookupFold(have, k); ok || strings.EqualFold(k, "f") {
			continue
		}
		for _, v := range hq[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}

// lookupFold returns the values of the parameter of q named k in any case.
func lookupFold(q url.Values, k string) ([]string, bool) {
	if vs, ok := q[k]; ok {
		return vs, true
	}
	for name, vs := range q {
		if strings.EqualFold(name, k) {
			return vs, true
		}
	}
	return nil, false
}

// LinkExpired reports whether err, from the first page of a fetch, says
// the link is no longer good (a 4xx other than 429, or an exception
// document blaming the request): the items link of a cached discovery may
// be stale, and is dropped.
func LinkExpired(err error) bool {
	var se *httpcall.HTTPStatusError
	if errors.As(err, &se) {
		return se.Status >= 400 && se.Status < 500 && se.Status != http.StatusTooManyRequests
	}
	var ee *ExceptionError
	return errors.As(err, &ee) && !ee.ServerSide
}

// The values of source.FetchStats.Completeness a fetch that completed sets.
const (
	// CompletenessNumberMatched: the total was checked against the
	// server's numberMatched (of its pages, or its resulttype=hits count).
	CompletenessNumberMatched = "number_matched"
	// CompletenessLinksOnly: the server reported no numberMatched and the
	// feed accepts its links alone (completeness: links_only), so only the
	// last page's missing next link says the collection was whole.
	CompletenessLinksOnly = "links_only"
)

// PageURL is the request of page of layer as a dead letter names it
// (credentials redacted): the first page's request. Later pages are the
// server's own links, which only the fetch knows (a resume reads them back
// from the pages it staged).
func (c *Client) PageURL(layer source.Layer, _ int) string {
	if u, err := FirstURL(layer); err == nil {
		return redact.URL(u.String())
	}
	return redact.URL(layer.URL)
}

// RereadsPages reports that a poll of any layer of this kind may resume at
// a later page by reading the page before it again (feeds.PageRereader):
// the fetch starts at the next link the page before that one recorded
// (Layer.Resume, Page.Next), and the poll compares the page read again with
// what it staged, starting over when they differ. Only that comparison
// proves the staged pages still the collection: numberMatched survives a
// replacement of every feature, servers send no validator for the
// collection as a whole (MapServer 8.0 none at all), and an items page's
// timeStamp is when the answer was made, not a version.
func (c *Client) RereadsPages(source.Layer) bool { return true }

// Storable returns link, a next link the server gave, as a store may keep
// it: without home's (the feed's configured url's) userinfo and without
// each query parameter home has with the same value or that holds a
// credential of home's (an API key under another name), in the link's own
// order; the format parameter f is kept, as Restore does not add it. Restore puts them back. A link to another origin is kept whole:
// home's credentials are not for it, and the store scrubs it by value.
func Storable(link, home string) string {
	u, err := url.Parse(link)
	h, herr := url.Parse(home)
	if err != nil || herr != nil || u.Host != h.Host || u.Scheme != h.Scheme {
		return link
	}
	u.User = nil
	creds := map[string]bool{}
	for _, v := range redact.URLSecrets(home) {
		// As the store's scrub: a short value could be anything's.
		if len(v) >= redact.MinSecretLen {
			creds[v] = true
		}
	}
	hq := h.Query()
	var parts []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if part == "" {
			continue
		}
		// The format (f) stays: it carries no credential, and Restore never
		// adds home's, so a link that had it would come back without it.
		if err1 == nil && err2 == nil && !strings.EqualFold(name, "f") {
			if hv, ok := lookupFold(hq, name); (ok && slices.Contains(hv, value)) || creds[value] {
				continue
			}
		}
		parts = append(parts, part)
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}
