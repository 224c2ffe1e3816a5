package source

import "strings"

// Named returns err with its text led by kind's name ("arcgis: GET …"),
// unless it already is: the layers below a kind (httpcall's "GET <url>:
// HTTP 503", a decoder's "geojson: feature 17: …", a limit's
// "limits.body_bytes exceeded …") name no kind, so that each kind names
// itself once, at the edge where its errors leave its package. The chain
// is err's (errors.Is and errors.As see through it). A nil err stays nil.
func Named(kind string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), kind+": ") {
		return err
	}
	return &namedError{kind: kind, err: err}
}

type namedError struct {
	kind string
	err  error
}

func (e *namedError) Error() string { return e.kind + ": " + e.err.Error() }

func (e *namedError) Unwrap() error { return e.err }
