package arcgis

import (
	"errors"
	"fmt"

	"github.com/ingestd/ingestd/encoding/esrijson"
)

// Sentinel errors, tested with errors.Is. Neither they nor the typed errors
// below name the kind: Client.Fetch puts "arcgis: " before every error
// once (source.Named).
var (
	// ErrNotALayer is a layer URL whose ?f=json is not a layer (a service,
	// a folder) or a layer of a type ingestd cannot store.
	ErrNotALayer = errors.New("not a feature layer")
)

// ServerError is an ArcGIS error object ({"error":{"code":…}}) that a
// server sent, with any HTTP status, as the answer to one request.
// ServerSide says whether it counts against the origin (500, 503, 504
// and codes ArcGIS uses for its own failures) or is the feed's (400 bad
// query, 404 / "Invalid URL", 403, 498/499 token).
type ServerError struct {
	// Status is the HTTP status the body came with (often 200).
	Status int
	// URL is the request, redacted.
	URL string
	// Op is what the request was for ("probe", "count", "id list", …).
	Op string
	esrijson.ServerError
	ServerSide bool
}

func (e *ServerError) Error() string {
	msg := fmt.Sprintf("%s (%s): server answered %s", e.Op, e.URL, e.ServerError.Error())
	if e.Status != 200 {
		msg += fmt.Sprintf(" with HTTP %d", e.Status)
	}
	switch e.Code {
	case 498:
		msg += ": the feed's token is invalid or expired; renew it (token:)"
	case 499:
		msg += ": the layer needs a token; set the feed's token:"
	case 400:
		msg += ": the query is invalid for this layer (check where, out_fields, id_property)"
	case 404:
		msg += ": no such layer; check the feed's url"
	case 403:
		msg += ": the token or user may not read this layer"
	}
	return msg
}

// BodyError is an answer whose body could not be read or trusted: cut
// short, malformed, over a bound, an HTML page. It names the request it
// answered (the document, or the batch of object ids with its range),
// since an ArcGIS dump has batches, not pages. Whose fault it is follows
// the rule every kind follows (see Classify): a body cut short or an error
// page is the origin's, a whole document that does not decode, or that
// exceeds a bound, is the feed's.
type BodyError struct {
	// Op is what the request was for: "layer description", "count",
	// "id list", "statistics", "batch of objectIds 1…1000", …
	Op string
	// URL is the request, redacted.
	URL string
	Err error
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("the answer to the %s (%s): %v", e.Op, e.URL, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// DocumentLimitError is a document around the features (the layer's
// description, its count, its id list, its statistics) larger than the
// bound of that document, after decompression. Each has its own bound, far
// above what a server sends (see the Max* constants), so that a small
// gzip that inflates to gigabytes costs a bounded read; the id list's
// grows with the layer's count. The feed's error: not retried, not
// counted against the origin.
type DocumentLimitError struct {
	// URL is the layer, redacted.
	URL string
	// Document names it: "layer description", "count", "id list",
	// "statistics".
	Document string
	// Max is the bound, in bytes.
	Max int64
	// Bound says how Max was set.
	Bound string
}

func (e *DocumentLimitError) Error() string {
	return fmt.Sprintf("%s: the %s answer is larger than %d bytes decompressed (%s); no ArcGIS server sends that: refused",
		e.URL, e.Document, e.Max, e.Bound)
}

// CRSError is a layer whose spatial reference PostGIS cannot transform: a
// wkid it does not know (not in spatial_ref_sys). It fails the poll
// before anything is staged, rather than the apply with PostGIS's own
// words.
type CRSError struct {
	// URL is the layer, redacted.
	URL string
	// SRID is the EPSG code the layer's spatial reference names
	// (latestWkid first, then wkid).
	SRID int
	// Where says where the spatial reference was read.
	Where string
}

func (e *CRSError) Error() string {
	return fmt.Sprintf("%s: the %s names wkid %d, which PostGIS does not know (no srid %d in spatial_ref_sys), so its coordinates cannot be transformed to EPSG:4326; add the CRS to spatial_ref_sys, or ask the server for another spatial reference; nothing is applied",
		e.URL, e.Where, e.SRID, e.SRID)
}
