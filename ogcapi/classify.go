package ogcapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
)

// expected is what a 2xx body of an OGC API should hold, in the words of
// the errors on a body that holds something else (an HTML page: a proxy's
// error page, or f=json not honoured).
const expected httpcall.Expected = "JSON"

// maxExceptionBytes bounds how much of an exception document is read.
const maxExceptionBytes = 1 << 20

// classify decides, before the body is trusted, what a response means to
// the origin's breaker. nil means the body is a JSON object to be decoded.
// The rule, in order:
//
//	status  body                                         outcome    error
//	429     any                                          Throttled  *HTTPStatusError (Retry-After)
//	any     error document, status ≥ 500 or a code       Failure    *ExceptionError
//	        that is not client-side (see clientSideCode)
//	any     error document, client-side code, or         Success    *ExceptionError
//	        status 4xx
//	5xx     anything else                                Failure    *HTTPStatusError
//	other   anything else (4xx, unfollowed 3xx)          Success    *HTTPStatusError
//	2xx     read error before the first bytes            Failure    *BodyError
//	2xx     HTML page, empty body, text or XML           Failure    *BodyError (httpcall.ErrHTMLBody, ErrEmptyBody, ErrUnrecognizedBody)
//	2xx     a whole JSON scalar (null, 1, "x")           Success    *BodyError wrapping *DecodeError
//	2xx     a JSON array                                 Success    *BodyError wrapping *DecodeError
//	2xx     JSON object                                  (decode)   nil
//
// An error document is one of the shapes the common servers send (see
// errorDocument), recognised within the sniffed bytes. With status 200 it
// is still an error: a server that answers 200 to a failed query must not
// make its error look like an empty page. Like WFS's OGC exception
// reports, it is the origin's failure unless its code (or a 4xx status)
// says our request is wrong. No document of OGC API – Features is a JSON
// array: a server that sends one answered another format than the one the
// link promised (tipg's f=json is an array of flat rows).
func classify(resp *http.Response, br *bufio.Reader, redacted string, now time.Time) *breaker.Result {
	status := resp.StatusCode
	if r := httpcall.Throttled(resp, redacted, now); r != nil {
		return r
	}
	s, rerr := httpcall.Sniff(br)
	if s.Kind == httpcall.KindJSON && s.Head[0] == '{' && errorDocument(s.Head, resp.Header.Get("Content-Type")) {
		e := parseException(br, status, redacted)
		return httpcall.ErrorVerdict(e, e.ServerSide)
	}
	if r := httpcall.StatusVerdict(status, redacted); r != nil {
		return r
	}
	switch s.Kind {
	case httpcall.KindJSON:
		if s.Head[0] == '[' {
			return &breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted,
				Err: &feature.DecodeError{Index: -1, Msg: "the server answered a JSON array: it may be ignoring the media type (Content-Type " +
					feature.Snippet(resp.Header.Get("Content-Type")) + "; no OGC API document is an array)"}}}
		}
		return nil
	case httpcall.KindJSONValue:
		doc := bytes.TrimSpace(s.Head)
		return &breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted,
			Err: &feature.DecodeError{Index: -1, Msg: "document is the JSON value " + feature.Snippet(string(doc)) + ", not an object"}}}
	case httpcall.KindXML:
		return httpcall.BodyFailure(redacted, expected.Unrecognized("XML root element <"+s.Root.Local+">"))
	}
	return expected.NotDataVerdict(resp, br, s.Kind, rerr, redacted)
}

// errorDocument reports whether the JSON object at the start of p (a body
// of Content-Type contentType) is an error document of one of the shapes
// the common servers send:
//
//   - OGC API's exception, {"code", "description"}: MapServer, ldproxy, and
//     pygeoapi, which adds a "type" member equal to the code;
//   - FastAPI's {"detail": "…"} or {"detail": [{"loc", "msg"}…]} (tipg);
//   - RFC 7807 problem details, {"type", "title", "status", "detail"}, or
//     any object of Content-Type application/problem+json.
//
// An object with a member a landing page, a collection or a
// FeatureCollection has is none ("description" or "title" alone decides
// nothing: MapServer's collection documents begin with "description"), nor
// is one whose "type" is Feature or FeatureCollection.
func errorDocument(p []byte, contentType string) bool {
	keys, typ := leadingMembers(p, 16)
	has := map[string]bool{}
	for _, k := range keys {
		switch k {
		case "features", "links", "id", "collections", "conformsTo", "properties", "geometry":
			return false
		}
		has[k] = true
	}
	if typ == "Feature" || typ == "FeatureCollection" {
		return false
	}
	mt, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	return has["code"] || has["detail"] || (has["title"] && has["status"]) ||
		(strings.TrimSpace(mt) == "application/problem+json" && len(keys) > 0)
}

// leadingMembers returns the names of the first members (at most max) of
// the JSON object at the start of p, as far as p holds them whole, and the
// value of its "type" member when that is a string among them.
func leadingMembers(p []byte, max int) (keys []string, typ string) {
	dec := json.NewDecoder(bytes.NewReader(p))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ""
	}
	for len(keys) < max {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			break
		}
		keys = append(keys, key)
		v, err := dec.Token()
		if err != nil {
			break
		}
		switch v := v.(type) {
		case string:
			if key == "type" {
				typ = v
			}
		case json.Delim:
			if skipRest(dec, 1) != nil {
				return keys, typ
			}
		}
	}
	return keys, typ
}

// clientSideCode reports whether an exception code says that our request
// is wrong (a retry will not help, the origin is healthy). The codes are
// those pygeoapi, ldproxy and MapServer send for bad parameters.
func clientSideCode(code string) bool {
	switch strings.ToLower(code) {
	case "invalidparametervalue", "missingparametervalue", "invalidquery", "notfound", "not found",
		"invalidrequest", "badrequest", "bad request", "operationnotsupported", "invalidcrs":
		return true
	}
	return false
}

// errorDoc is the members of the error documents errorDocument knows.
type errorDoc struct {
	Code        json.RawMessage `json:"code"`
	Description string          `json:"description"`
	Title       string          `json:"title"`
	Detail      json.RawMessage `json:"detail"`
}

// fastAPIDetail is one item of FastAPI's validation error list.
type fastAPIDetail struct {
	Loc []any  `json:"loc"`
	Msg string `json:"msg"`
}

// parseException reads an error document, bounded, into the server's
// words: OGC's code and description, RFC 7807's title and detail, or
// FastAPI's detail (each item of a list as "query.limit: msg").
func parseException(r io.Reader, status int, redacted string) *ExceptionError {
	data, _ := io.ReadAll(io.LimitReader(r, maxExceptionBytes))
	var doc errorDoc
	e := &ExceptionError{Status: status, URL: redacted}
	if err := json.Unmarshal(data, &doc); err != nil {
		e.Description = "malformed error document: " + err.Error()
		e.ServerSide = true
		return e
	}
	var code string
	if json.Unmarshal(doc.Code, &code) != nil {
		code = string(doc.Code) // some servers send a number
	}
	if code == "" {
		code = doc.Title
	}
	desc := doc.Description
	if desc == "" {
		desc = detailText(doc.Detail)
	}
	e.Code = errtext.Head(strings.TrimSpace(code), 200)
	e.Description = errtext.Head(strings.Join(strings.Fields(desc), " "), 2000)
	switch {
	case status >= 500:
		e.ServerSide = true
	case status >= 400:
		e.ServerSide = false
	default:
		e.ServerSide = !clientSideCode(e.Code)
	}
	return e
}

// detailText is the text of a "detail" member: a string (RFC 7807,
// FastAPI's HTTPException) or FastAPI's list of validation errors.
func detailText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []fastAPIDetail
	if json.Unmarshal(raw, &list) != nil {
		return strings.TrimSpace(string(raw))
	}
	parts := make([]string, 0, len(list))
	for _, d := range list {
		loc := make([]string, 0, len(d.Loc))
		for _, l := range d.Loc {
			loc = append(loc, fmt.Sprint(l))
		}
		if len(loc) > 0 {
			parts = append(parts, strings.Join(loc, ".")+": "+d.Msg)
		} else {
			parts = append(parts, d.Msg)
		}
	}
	return strings.Join(parts, "; ")
}
