package arcgis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
)

// expected is what a 2xx body of an ArcGIS server should hold, in the
// words of the errors on a body that holds something else.
const expected httpcall.Expected = "JSON"

// maxErrorBytes bounds how much of an error body is read.
const maxErrorBytes = 1 << 20

// feedsCode reports whether an ArcGIS error code says that our request is
// wrong (the feed's error: not retried, not counted against the origin)
// rather than that the server failed.
func feedsCode(code int) bool {
	switch code {
	case 400, // invalid query, unknown field, "Unable to complete operation" of a bad where
		403, // not authorized
		404, // "Invalid URL", "Service not found"
		498, // invalid or expired token
		499: // token required
		return true
	}
	return false
}

// Classify decides, before anyone trusts the body, what a response means to
// the origin's breaker. It reads at most the first bytes of the body
// through br, plus the whole of an error object. The rule, in order:
//
//	status   body                                           outcome     error
//	429      any                                            Throttled   *HTTPStatusError with Retry-After
//	any      {"error":{"code":429}}                         Throttled   *ServerError
//	any      {"error":{"code":400|403|404|498|499}}         Success     *ServerError (the feed's: bad query, no such layer, token)
//	any      {"error":{"code":500|503|504|other|none}}      Failure     *ServerError (the origin's)
//	498/499  anything else                                  Success     *ServerError naming the token
//	5xx      anything else                                  Failure     *HTTPStatusError
//	other    anything else (4xx: 404, 414, …)               Success     *HTTPStatusError
//	2xx      read error before the first bytes              Failure     *BodyError
//	2xx      HTML page (proxy, login page)                  Failure     *BodyError wrapping httpcall.ErrHTMLBody
//	2xx      empty                                          Failure     *BodyError wrapping httpcall.ErrEmptyBody
//	2xx      a whole JSON scalar (null, 1, "x")             Success     *BodyError (the feed's)
//	2xx      neither JSON nor HTML                          Failure     *BodyError wrapping httpcall.ErrUnrecognizedBody
//	2xx      JSON object or array                           (decode)    nil
//
// ArcGIS Server (and Koop) answer errors with status 200 and an error
// object, so the object's code decides, never the status alone. Classify
// sees an error object that comes first; one that comes after other
// members (`{"objectIdFieldName":…,"error":{…}}`, or after the features)
// is found where the answer is decoded and judged by the same codes.
func Classify(resp *http.Response, br *bufio.Reader, redacted, op string, now time.Time) *breaker.Result {
	status := resp.StatusCode
	if r := httpcall.Throttled(resp, redacted, now); r != nil {
		return r
	}
	s, rerr := httpcall.Sniff(br)
	if s.Kind == httpcall.KindJSON && errorObject(s.Head) {
		data, err := io.ReadAll(io.LimitReader(br, maxErrorBytes))
		if err != nil {
			return renamed(httpcall.ReadFailure(resp, err, redacted), op, redacted)
		}
		var doc struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return bodyFailure(op, redacted, fmt.Errorf("malformed error object: %w", err))
		}
		return judgeError(status, redacted, op, doc.Error)
	}
	if status == 498 || status == 499 {
		msg := "Invalid token"
		if status == 499 {
			msg = "Token required"
		}
		return &breaker.Result{Outcome: breaker.Success, Err: &ServerError{Status: status, URL: redacted, Op: op,
			ServerError: esrijson.ServerError{Code: status, Message: msg}}}
	}
	if r := httpcall.StatusVerdict(status, redacted); r != nil {
		return r
	}
	switch s.Kind {
	case httpcall.KindJSON:
		return nil
	case httpcall.KindJSONValue:
		return &breaker.Result{Outcome: breaker.Success, Err: &BodyError{Op: op, URL: redacted,
			Err: fmt.Errorf("the JSON value %s, not an object", snippet(s.Head))}}
	}
	return renamed(expected.NotDataVerdict(resp, br, s.Kind, rerr, redacted), op, redacted)
}

// judgeError is the verdict on an ArcGIS error object (raw, the value of
// an "error" member), wherever it sat in the answer: first, after other
// members, after the features. Its code decides, the same wherever it is.
func judgeError(status int, redacted, op string, raw json.RawMessage) *breaker.Result {
	var e esrijson.ServerError
	if err := json.Unmarshal(raw, &e); err != nil {
		return bodyFailure(op, redacted, fmt.Errorf("malformed error object: %w", feature.Bound(err)))
	}
	return judge(status, redacted, op, e)
}

// judge is the verdict on a decoded error object.
func judge(status int, redacted, op string, e esrijson.ServerError) *breaker.Result {
	se := &ServerError{Status: status, URL: redacted, Op: op, ServerError: e}
	switch {
	case e.Code == 429:
		return &breaker.Result{Outcome: breaker.Throttled, Err: se}
	case feedsCode(e.Code):
		return &breaker.Result{Outcome: breaker.Success, Err: se}
	}
	se.ServerSide = true
	return &breaker.Result{Outcome: breaker.Failure, Err: se}
}

// bodyFailure is the origin's failure to send a body that can be trusted.
func bodyFailure(op, redacted string, err error) *breaker.Result {
	return &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{Op: op, URL: redacted, Err: err}}
}

// renamed is r with a *httpcall.BodyError (which names a page, and an
// ArcGIS dump has batches) replaced by the *BodyError of op.
func renamed(r *breaker.Result, op, redacted string) *breaker.Result {
	if be, ok := r.Err.(*httpcall.BodyError); ok {
		r.Err = &BodyError{Op: op, URL: redacted, Err: be.Err}
	}
	return r
}

// errorObject reports whether the JSON object at the start of head is an
// ArcGIS error object: its first member is "error".
func errorObject(head []byte) bool {
	keys := httpcall.LeadingKeys(head, 1)
	return len(keys) == 1 && keys[0] == "error"
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 80 {
		b = append(b[:80:80], "…"...)
	}
	return fmt.Sprintf("%q", b)
}
