package ogcapi

import (
	"fmt"
)

// kind is the name every error of this package leaves it under, once
// (source.Named, in Fetch, Prepare and Discover): neither the errors below
// (but the shared *source.TimeoutError, which leads with it itself) nor the layers
// under this package (httpcall, the GeoJSON decoder, the limits) name it.
const kind = "ogcapi"

// Sentinel errors; the typed errors below wrap or accompany them.
var ()

// ExceptionError is an error document of the server: an OGC API exception
// ({"code": …, "description": …}, the spec's exception schema; pygeoapi
// adds "type"), FastAPI's {"detail": …} (tipg) or RFC 7807 problem details
// ({"title": …, "detail": …, "status": …}), whatever the HTTP status it
// came with: some servers answer 200 with one. Code and Description are
// the server's words.
type ExceptionError struct {
	Status      int
	URL         string // redacted
	Code        string // OGC's code, RFC 7807's title; "" for FastAPI's detail
	Description string // OGC's description, the detail
	// ServerSide is the verdict of the classification rule: the server
	// failed (5xx, or a code that is not a known client-side one), rather
	// than our request being wrong.
	ServerSide bool
}

func (e *ExceptionError) Error() string {
	msg := fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Status)
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	if e.Code == "" && e.Description == "" {
		msg += ": an error document with neither code nor description"
	}
	return msg
}

// PagingError means the server's links do not page through the
// collection: a next link that leads back to a page already fetched (a
// loop, a limit=0 page pointing to itself), a page that repeats an earlier
// one (a server ignoring offset, MapServer#6613), or a run of empty pages
// that never ends. Nothing fetched may be applied.
type PagingError struct {
	URL    string // redacted URL of the offending page
	Page   int
	Reason string
}

func (e *PagingError) Error() string {
	return fmt.Sprintf("paging failed at page %d (%s): %s", e.Page, e.URL, e.Reason)
}

// CRSError means a response is not in the CRS the feed needs: its
// Content-Crs header names another CRS, or is missing where Part 2 makes
// it mandatory; or the server does not offer the CRS asked for.
type CRSError struct {
	URL    string // redacted
	Want   string
	Got    string // "" when the header was missing
	Reason string
}

func (e *CRSError) Error() string {
	return fmt.Sprintf("%s: CRS %s: %s", e.URL, e.Want, e.Reason)
}
