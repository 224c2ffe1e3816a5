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
// (credentials redacted): the first page's request, where a parked poll
// of this kind starts over. Later pages are the server's own links, which
// only the fetch knows.
func (c *Client) PageURL(layer source.Layer, _ int) string {
	if u, err := FirstURL(layer); err == nil {
		return redact.URL(u.String())
	}
	return redact.URL(layer.URL)
}

// RestartReason says why a parked poll of any layer of this kind drops the
// pages it staged and starts over from the first page rather than resume
// at its next cursor: nothing an OGC API server sends proves that those
// pages are still its collection. Re-reading the first page (the same ids
// and content) says nothing of the pages after it (a feature replaced on
// page 1 leaves page 0 as it was), numberMatched stays the same when a
// feature is replaced, and servers send no validator for the collection as
// a whole (MapServer 8.0 sends none at all). Only reading every staged page
// again would prove them, and that costs what starting over does; a resumed
// poll that continued at its next link applied a snapshot the server never
// had (features it had replaced, beside their replacements).
func (c *Client) RestartReason(source.Layer) string {
	return "nothing an OGC API server sends proves that the pages staged before the poll parked are still its collection"
}
