package ogcapi

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Storable returns link as a store may keep it: without the userinfo of
// home (the feed's configured url), without every query parameter that
// home has with the same value (an API key), its name matched in any case
// (a server may write APIKEY= where the feed has apikey=), and without
// every parameter whose value is one of home's credentials under another
// name (api_key=), so that no credential the configuration holds is
// written to a table. Restore puts them back. A link to another origin is
// kept whole: home's credentials are not for it (the store still scrubs
// the configuration's secrets from it by value).
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
	q := u.Query()
	for k, vs := range q {
		if len(vs) != 1 {
			continue
		}
		if hv, ok := lookupFold(hq, k); (ok && len(hv) == 1 && hv[0] == vs[0]) || creds[vs[0]] {
			delete(q, k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Restore is the inverse of Storable: stored with home's userinfo and the
// query parameters of home it lacks, names matched in any case. A value a
// scrub replaced by redact.Marker is home's again where home has the
// parameter (any case), and left out where it has not: it was a secret of
// the configuration, which home's own parameters carry.
func Restore(stored, home string) string {
	u, err := url.Parse(stored)
	h, herr := url.Parse(home)
	if err != nil || herr != nil || u.Host != h.Host || u.Scheme != h.Scheme {
		return stored
	}
	if u.User == nil || strings.Contains(u.User.String(), redact.Marker) {
		u.User = h.User
	}
	hq := h.Query()
	q := u.Query()
	for k, vs := range q {
		if slices.Contains(vs, redact.Marker) {
			delete(q, k)
		}
	}
	for k, hv := range hq {
		if _, ok := lookupFold(q, k); !ok {
			q[k] = hv
		}
	}
	u.RawQuery = q.Encode()
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

// LinkExpired reports whether err, from a Fetch resumed at a stored next
// link that failed before its first page, says the link is no longer good
// (a 4xx other than 429, or an exception document blaming the request:
// servers whose cursors expire answer so); the caller then restarts from
// the first page.
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
	// server's numberMatched.
	CompletenessNumberMatched = "number_matched"
	// CompletenessLinksOnly: the server reported no numberMatched, so only
	// the last page's missing next link says the collection was whole.
	CompletenessLinksOnly = "links_only"
)

// PageURL is the request of page of layer as a dead letter names it
// (credentials redacted): the first page's request, or, for a poll resumed
// at a later page, the next link it resumed at. Later pages are the
// server's own links, which only the fetch knows.
func (c *Client) PageURL(layer source.Layer, page int) string {
	if page > 0 && layer.ResumeURL != "" {
		return redact.URL(layer.ResumeURL)
	}
	if u, err := FirstURL(layer); err == nil {
		return redact.URL(u.String())
	}
	return redact.URL(layer.URL)
}

// ResumesAtCursor reports that a poll of any layer of this kind resumes at
// the next link (source.Page.Next) its last staged page recorded: an OGC API
// server's pages are reached only by its links.
func (c *Client) ResumesAtCursor(source.Layer) bool { return true }

// ResumeAt returns layer set to continue at cursor, a next link a staged
// page recorded in the form Storable makes; Fetch restores it.
func (c *Client) ResumeAt(layer source.Layer, cursor string) source.Layer {
	layer.ResumeURL = cursor
	return layer
}

// CursorExpired reports whether err, from a Fetch resumed at a stored next
// link before its first page came in, says the link is no longer good
// (LinkExpired): the poll starts over from the first page.
func (c *Client) CursorExpired(_ source.Layer, err error) bool { return LinkExpired(err) }
