package arcgis

import (
	"errors"
	"fmt"

	"github.com/ingestd/ingestd/esrijson"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrHTMLBody is an HTML page (a proxy's, a login page) where JSON was
	// expected.
	ErrHTMLBody = errors.New("arcgis: HTML page instead of JSON")
	// ErrEmptyBody is a successful status with no body.
	ErrEmptyBody = errors.New("arcgis: empty response body")
	// ErrUnrecognizedBody is a successful status with a body that is
	// neither JSON nor HTML.
	ErrUnrecognizedBody = errors.New("arcgis: unrecognized response body")
	// ErrNotALayer is a layer URL whose ?f=json is not a layer (a service,
	// a folder) or a layer of a type ingestd cannot store.
	ErrNotALayer = errors.New("arcgis: not a feature layer")
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
	msg := fmt.Sprintf("arcgis: %s (%s): server answered %s", e.Op, e.URL, e.ServerError.Error())
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

// IncompleteError is a dump that did not prove complete: the object ids
// fetched are not the server's id list, the count and the id list
// disagree, an id came twice, or the layer was edited while it was dumped.
// Nothing is applied; the next poll retries.
type IncompleteError struct {
	// URL is the layer, redacted.
	URL    string
	Reason string
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("arcgis: %s: incomplete dump: %s; nothing applied, the next poll retries", e.URL, e.Reason)
}
