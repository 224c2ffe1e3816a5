package ogcapi

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/ingestd/ingestd/httpcall"
)

// Storable returns link as a store may keep it: without the userinfo of
// home (the feed's configured url) and without every query parameter that
// home has with the same value (an API key), so that no credential the
// configuration holds is written to a table. Restore puts them back. A link
// to another origin is kept whole: home's credentials are not for it.
func Storable(link, home string) string {
	u, err := url.Parse(link)
	h, herr := url.Parse(home)
	if err != nil || herr != nil || u.Host != h.Host || u.Scheme != h.Scheme {
		return link
	}
	u.User = nil
	q := u.Query()
	for k, hv := range h.Query() {
		if vs, ok := q[k]; ok && len(vs) == 1 && len(hv) == 1 && vs[0] == hv[0] {
			delete(q, k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Restore is the inverse of Storable: stored with home's userinfo and the
// query parameters of home it lacks.
func Restore(stored, home string) string {
	u, err := url.Parse(stored)
	h, herr := url.Parse(home)
	if err != nil || herr != nil || u.Host != h.Host || u.Scheme != h.Scheme {
		return stored
	}
	if u.User == nil {
		u.User = h.User
	}
	q := u.Query()
	for k, hv := range h.Query() {
		if _, ok := q[k]; !ok {
			q[k] = hv
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
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
