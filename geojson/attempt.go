package geojson

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
	"github.com/ingestd/ingestd/internal/pageids"
	"github.com/ingestd/ingestd/ows"
	"github.com/ingestd/ingestd/source"
)

// expected is what a 2xx body should hold, in the words of the errors on a
// body that holds something else.
const expected httpcall.Expected = "a GeoJSON document"

// result is what one successful attempt learned about the document.
type result struct {
	features, numberMatched int
	bytes                   int64
	etag, lastModified      string
	handlerErr              error
}

// attempt is one attempt at the document: GET, classify, stream into
// handle. A retry starts over, and so does handle (see source.PageFunc).
func (c *Client) attempt(a *httpcall.Attempt, layer source.Layer, p source.Page, handle source.PageFunc, res *result) breaker.Result {
	br, _, err := a.OpenBody("response body")
	if err != nil {
		return a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
	}
	if r := httpcall.Throttled(a.Resp, a.Redacted, c.base.Now()); r != nil {
		return a.Verdict(r)
	}
	s, rerr := httpcall.Sniff(br)
	switch s.Kind {
	case httpcall.KindJSON, httpcall.KindJSONValue, httpcall.KindXML:
		if r := classifyDocument(a.Resp, br, s, a.Redacted); r != nil {
			return a.Verdict(r)
		}
	default:
		if r := httpcall.StatusVerdict(a.Resp.StatusCode, a.Redacted); r != nil {
			return a.Verdict(r)
		}
		return a.Verdict(expected.NotDataVerdict(a.Resp, br, s.Kind, rerr, a.Redacted))
	}
	if s.Kind == httpcall.KindXML {
		// A GML FeatureCollection: the server answered, not in GeoJSON.
		return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted,
			Err: expected.Unrecognized("the document is XML <" + s.Root.Local + ">, not GeoJSON; a WFS? use kind wfs, or ask for outputFormat=application/json")}}
	}
	dec := geojson.NewReader(br, feature.WithIDProperty(layer.IDProperty), feature.WithSRID(layer.SRID), feature.WithLimits(layer.Limits.WithDefaults()))
	fr := &docReader{dec: dec, url: a.Redacted, ids: pageids.New(false), idProperty: layer.IDProperty, body: a}
	if herr := handle(a.CallCtx, p, fr); herr != nil {
		var ie *source.IncompleteError
		switch {
		case errors.As(herr, &ie):
			return breaker.Result{Outcome: breaker.Success, Err: ie}
		case httpcall.IsBodyError(herr):
			return a.StreamFailed(herr)
		}
		res.handlerErr = herr
		return breaker.Result{Outcome: breaker.Ignored, Err: herr}
	}
	// The handler may have stopped early or swallowed an error; the
	// document counts only if the body really ended where it does.
	if f, err := fr.Next(); err != io.EOF {
		var ie *source.IncompleteError
		switch {
		case errors.As(err, &ie):
			return breaker.Result{Outcome: breaker.Success, Err: ie}
		case err == nil:
			res.handlerErr = fmt.Errorf("%s: page 0 (%s): handler returned before reading feature %d (id %q)", Kind, a.Redacted, fr.n-1, f.ID)
			return breaker.Result{Outcome: breaker.Ignored, Err: res.handlerErr}
		}
		return a.StreamFailed(err)
	}
	if n := dec.NumberReturned(); n >= 0 && n != fr.n {
		return breaker.Result{Outcome: breaker.Success, Err: &source.IncompleteError{Kind: Kind, URL: a.Redacted, Expected: -1, Got: fr.n,
			Reason: fmt.Sprintf("numberReturned says %d features, the body held %d", n, fr.n)}}
	}
	res.features, res.bytes, res.numberMatched = fr.n, a.BodyBytes(), dec.NumberMatched()
	res.etag, res.lastModified = httpcall.ResponseValidators(a.Resp)
	return breaker.Result{Outcome: breaker.Success}
}

// classifyDocument is the verdict on a body that Sniff (s) found to be
// JSON or XML, nil when it is to be decoded. A plain GeoJSON URL is often
// a WFS GetFeature request pasted whole (outputFormat=application/json):
// its errors are OGC exception reports, judged by their codes (a
// server-side code counts against the origin, a client-side one is the
// feed's), whatever the status. Then the status decides; with a 2xx, a
// whole JSON document that is a scalar (null, a number) is the feed's
// content, XML other than a FeatureCollection (a proxy's XML error page)
// the origin's failure, and a GML FeatureCollection is left to the caller.
func classifyDocument(resp *http.Response, br *bufio.Reader, s httpcall.Sniffed, redacted string) *breaker.Result {
	if f := ows.FormOf(s); f != ows.NotReport {
		return ows.Verdict(br, f, resp.StatusCode, redacted)
	}
	if r := httpcall.StatusVerdict(resp.StatusCode, redacted); r != nil {
		return r
	}
	switch s.Kind {
	case httpcall.KindJSONValue:
		return &breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Err: httpcall.JSONValueError(br, "a FeatureCollection")}}
	case httpcall.KindXML:
		if s.Root.Local != "FeatureCollection" {
			return httpcall.BodyFailure(redacted, expected.Unrecognized("XML root element <"+xmlName(s.Root)+">, not a FeatureCollection"))
		}
	}
	return nil
}

// xmlName is n as the document wrote it, prefix or namespace and local
// name.
func xmlName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// docReader is the FeatureReader handed to the PageFunc: it counts
// features, refuses an id that comes twice, and wraps every decoder error
// in *httpcall.BodyError so that Fetch recognises it through the
// handler's wrapping.
type docReader struct {
	dec        *geojson.Reader
	url        string
	n          int
	err        error
	ids        *pageids.Set
	idProperty string
	body       *httpcall.Attempt
}

// BodyBytes returns the body bytes (decompressed) read so far, so that a
// PageFunc can bound a poll's bytes as they arrive.
func (r *docReader) BodyBytes() int64 { return r.body.BodyBytes() }

// Next returns the document's next feature.
func (r *docReader) Next() (*feature.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	f, err := r.dec.Next()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		r.err = &httpcall.BodyError{URL: r.url, Err: err}
		return nil, r.err
	}
	r.n++
	if f.ID != "" {
		if _, dup := r.ids.Add(f.ID); dup {
			// Kept once, the layer would look whole with a feature missing.
			reason := fmt.Sprintf("id %q comes twice in the document: the ids are not unique", errtext.Head(f.ID, 200))
			if r.idProperty != "" {
				reason += " (id_property " + r.idProperty + " does not identify features)"
			}
			r.err = &source.IncompleteError{Kind: Kind, URL: r.url, Expected: -1, Got: r.n - 1, Reason: reason}
			return nil, r.err
		}
	}
	return f, nil
}
