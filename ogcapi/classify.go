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
)

// notData is what a 2xx body that is neither JSON nor an exception is.
var notData = httpcall.NotData{HTML: ErrHTMLBody, Empty: ErrEmptyBody, Unrecognized: ErrUnrecognizedBody}

// maxExceptionBytes bounds how much of an exception document is read.
const maxExceptionBytes = 1 << 20

// classify decides, before the body is trusted, what a response means to
// the origin's breaker. nil means the body is a JSON object or array to be
// decoded. The rule, in order:
//
//	status  body                                         outcome    error
//	429     any                                          Throttled  *HTTPStatusError (Retry-After)
//	any     exception document, status ≥ 500 or a code   Failure    *ExceptionError
//	        that is not client-side (see clientSideCode)
//	any     exception document, client-side code, or     Success    *ExceptionError
//	        status 4xx
//	5xx     anything else                                Failure    *HTTPStatusError
//	other   anything else (4xx, unfollowed 3xx)          Success    *HTTPStatusError
//	2xx     read error before the first bytes            Failure    *BodyError
//	2xx     HTML page, empty body, text or XML           Failure    *BodyError (ErrHTMLBody, ErrEmptyBody, ErrUnrecognizedBody)
//	2xx     a whole JSON scalar (null, 1, "x")           Success    *BodyError wrapping *DecodeError
//	2xx     JSON object or array                         (decode)   nil
//
// An exception document is an object whose first members are "code" or
// "description" (with no "type", "features" or "links" before them),
// recognised within the sniffed bytes. With status 200 it is still an
// exception: a server that answers 200 to a failed query must not make its
// error look like an empty page. Like WFS's OGC exception reports, it is
// the origin's failure unless its code (or a 4xx status) says our request
// is wrong.
func classify(resp *http.Response, br *bufio.Reader, redacted string, now time.Time) *breaker.Result {
	status := resp.StatusCode
	if r := httpcall.Throttled(resp, redacted, now); r != nil {
		return r
	}
	s, rerr := httpcall.Sniff(br)
	if s.Kind == httpcall.KindJSON && s.Head[0] == '{' && isException(s.Head) {
		e := parseException(br, status, redacted)
		return httpcall.Judged(e, e.ServerSide)
	}
	if r := httpcall.StatusVerdict(status, redacted); r != nil {
		return r
	}
	switch s.Kind {
	case httpcall.KindJSON:
		return nil
	case httpcall.KindJSONValue:
		doc := bytes.TrimSpace(s.Head)
		return &breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted,
			Err: &feature.DecodeError{Index: -1, Msg: "document is the JSON value " + feature.Snippet(string(doc)) + ", not an object"}}}
	case httpcall.KindXML:
		return httpcall.BodyFailure(redacted, fmt.Errorf("%w (XML root element <%s>)", ErrUnrecognizedBody, s.Root.Local))
	}
	return notData.Verdict(resp, br, s.Kind, rerr, redacted)
}

// isException reports whether the JSON object at the start of p is an
// exception document: it has a member "code" and none of the members a
// landing page, a collection or a FeatureCollection has. "description"
// alone decides nothing: MapServer's collection documents begin with it.
func isException(p []byte) bool {
	code := false
	for _, k := range httpcall.LeadingKeys(p, 16) {
		switch k {
		case "code":
			code = true
		case "type", "features", "links", "id", "collections", "conformsTo":
			return false
		}
	}
	return code
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

// parseException reads an exception document, bounded.
func parseException(r io.Reader, status int, redacted string) *ExceptionError {
	data, _ := io.ReadAll(io.LimitReader(r, maxExceptionBytes))
	var doc struct {
		Code        json.RawMessage `json:"code"`
		Description string          `json:"description"`
	}
	e := &ExceptionError{Status: status, URL: redacted}
	if err := json.Unmarshal(data, &doc); err != nil {
		e.Description = "malformed exception document: " + err.Error()
		e.ServerSide = true
		return e
	}
	var code string
	if json.Unmarshal(doc.Code, &code) != nil {
		code = string(doc.Code) // some servers send a number
	}
	e.Code = truncate(strings.TrimSpace(code), 200)
	e.Description = truncate(strings.Join(strings.Fields(doc.Description), " "), 2000)
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
