package httpcall

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/errtext"
)

// The helpers below are the parts of a protocol's response classification
// that do not depend on the protocol (see wfs.ClassifyResponse for the
// rule): a 429, a status whose body is no error document of the protocol,
// and a 2xx body that is not data. What each protocol keeps is its own
// error document (an OGC exception report, an OGC API exception, an ArcGIS
// error object) and what its data may look like.

// Throttled is the verdict on a 429 (Throttled, with the Retry-After
// header read at now), or nil for any other status.
func Throttled(resp *http.Response, redacted string, now time.Time) *breaker.Result {
	if resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	ra := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return &breaker.Result{Outcome: breaker.Throttled, RetryAfter: ra,
		Err: &HTTPStatusError{Status: resp.StatusCode, URL: redacted, RetryAfter: ra}}
}

// StatusVerdict is the verdict on a status that is not 2xx and whose body
// is not the protocol's error document: a 5xx is the origin's failure,
// anything else (4xx, an unfollowed 3xx, 1xx) the feed's. It is nil for a
// 2xx status.
func StatusVerdict(status int, redacted string) *breaker.Result {
	if status >= 200 && status <= 299 {
		return nil
	}
	return ErrorVerdict(&HTTPStatusError{Status: status, URL: redacted}, status >= 500)
}

// ErrorVerdict is the verdict on err, an error whose side is already
// known, such as a protocol's error document: the origin's (serverSide: a
// Failure) or the feed's (a Success: the server answered).
func ErrorVerdict(err error, serverSide bool) *breaker.Result {
	if serverSide {
		return &breaker.Result{Outcome: breaker.Failure, Err: err}
	}
	return &breaker.Result{Outcome: breaker.Success, Err: err}
}

// BodyFailure is the origin's failure to send a body that can be trusted:
// a *BodyError wrapping err.
func BodyFailure(redacted string, err error) *breaker.Result {
	return &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{URL: redacted, Err: err}}
}

// The errors of a 2xx body that is neither the data a kind asked for nor
// its error document. They are declared here, once, so that errors.Is
// finds them whichever kind fetched; a *NotDataError carries one of them
// with the kind's words for what it wanted.
var (
	// ErrHTMLBody is an HTML page (a proxy's error page, a login page).
	ErrHTMLBody = errors.New("HTML page")
	// ErrEmptyBody is a successful status with nothing in the body, which
	// is never a valid answer (an empty layer is an empty document).
	ErrEmptyBody = errors.New("empty response body")
	// ErrUnrecognizedBody is a body that is none of what the kind knows:
	// a plain text error page, most likely, or a JSON value cut short. It
	// is the origin's failure (a whole document that is not a layer is a
	// *feature.DecodeError instead, the feed's).
	ErrUnrecognizedBody = errors.New("unrecognized response body")
)

// NotDataError is a 2xx body that is not the data a kind asked for: an
// HTML page, an empty body or one the kind does not recognise. Its text
// says what the body was and what was expected ("HTML page instead of
// JSON (title \"502 Bad Gateway\")"); errors.Is sees Body.
type NotDataError struct {
	// Body is what the body is: ErrHTMLBody, ErrEmptyBody or
	// ErrUnrecognizedBody.
	Body error
	// Expected is what the kind asked for, in its words.
	Expected Expected
	// Detail says more: an HTML page's title, an XML document's root.
	Detail string
}

func (e *NotDataError) Error() string {
	msg := e.Body.Error() + " instead of " + e.Expected.words()
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *NotDataError) Unwrap() error { return e.Body }

// Expected is what a kind expects a 2xx body to hold, in the kind's words
// ("JSON", "a GeoJSON document", "a file"; "" says data): the errors on a
// body that holds something else name it.
type Expected string

func (x Expected) words() string {
	if x == "" {
		return "data"
	}
	return string(x)
}

// HTMLPage is the error of an HTML page, with the page's <title> if it has
// one, so that the error says which failure it was.
func (x Expected) HTMLPage(br *bufio.Reader) *NotDataError {
	e := &NotDataError{Body: ErrHTMLBody, Expected: x}
	if t := HTMLTitle(br); t != "" {
		e.Detail = fmt.Sprintf("title %q", t)
	}
	return e
}

// Empty is the error of an empty body.
func (x Expected) Empty() *NotDataError { return &NotDataError{Body: ErrEmptyBody, Expected: x} }

// Unrecognized is the error of a body the kind does not recognise; detail
// ("XML root element <x>"), if any, says what it is.
func (x Expected) Unrecognized(detail string) *NotDataError {
	return &NotDataError{Body: ErrUnrecognizedBody, Expected: x, Detail: detail}
}

// NotDataVerdict is the verdict on a 2xx body of the given sniffed kind
// that the kind did not claim as data or as its error document: an HTML
// page, an empty body or an unrecognized one is the origin's failure (a
// *BodyError wrapping a *NotDataError); a read error (rerr, from Sniff)
// before the first bytes said what the body is is judged by ReadFailure.
func (x Expected) NotDataVerdict(resp *http.Response, br *bufio.Reader, kind BodyKind, rerr error, redacted string) *breaker.Result {
	switch {
	case kind == KindHTML:
		return BodyFailure(redacted, x.HTMLPage(br))
	case kind == KindEmpty:
		return BodyFailure(redacted, x.Empty())
	case kind == KindUnknown && rerr != nil:
		return ReadFailure(resp, rerr, redacted)
	}
	return BodyFailure(redacted, x.Unrecognized(""))
}

// JSONValueError describes a body that Sniff found to be a whole JSON
// document that is a scalar (KindJSONValue) as the feed's content error:
// the server answered, with a document that is not a layer. want names
// what the kind expected ("a FeatureCollection").
func JSONValueError(br *bufio.Reader, want string) *feature.DecodeError {
	p, _ := br.Peek(SniffLen)
	doc := bytes.TrimSpace(bytes.TrimPrefix(p, utf8BOM))
	var what string
	switch doc[0] {
	case 'n':
		what = "JSON null"
	case 't', 'f':
		what = "the JSON boolean " + string(doc)
	case '"':
		what = "a JSON string " + strings.ToValidUTF8(errtext.Head(string(doc), 80), "")
	default:
		what = "the JSON number " + errtext.Head(string(doc), 40)
	}
	return &feature.DecodeError{Index: -1, Msg: "document is " + what + ", not " + want}
}
