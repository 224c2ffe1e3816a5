package wfs

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/ows"
)

// bodyKind is what the first bytes of a body say it is.
type bodyKind int

const (
	kindUnknown       bodyKind = iota
	kindEmpty                  // nothing but whitespace
	kindJSON                   // '{' or '['
	kindHTML                   // <!DOCTYPE html, <html, or an XHTML root
	kindException              // ows:ExceptionReport, ServiceExceptionReport
	kindJSONException          // GeoServer's {"exceptions":[…]}
	kindXML                    // any other XML root
	kindGML                    // (classify only) kindXML whose root is a FeatureCollection
	kindJSONValue              // a whole JSON document that is a scalar: null, true, a number, a string
)

func (k bodyKind) String() string {
	switch k {
	case kindEmpty:
		return "empty"
	case kindJSON:
		return "json"
	case kindHTML:
		return "html"
	case kindException:
		return "exception report"
	case kindJSONException:
		return "JSON exception report"
	case kindGML:
		return "gml"
	case kindXML:
		return "xml"
	case kindJSONValue:
		return "JSON value"
	}
	return "unknown"
}

// expected is what a 2xx body of a WFS should hold, in the words of the
// errors on a body that holds something else (httpcall.NotDataError).
const expected httpcall.Expected = "data"

// sniff is httpcall.Sniff's verdict with WFS's own kinds: an OGC exception
// report (XML, or GeoServer's JSON form: ows.FormOf) and, for XML, the
// root's qualified name. See httpcall.Sniff for err.
func sniff(br *bufio.Reader) (kind bodyKind, root string, err error) {
	s, err := httpcall.Sniff(br)
	switch ows.FormOf(s) {
	case ows.XMLReport:
		return kindException, "", err
	case ows.JSONReport:
		return kindJSONException, "", err
	}
	switch s.Kind {
	case httpcall.KindEmpty:
		return kindEmpty, "", err
	case httpcall.KindJSON:
		return kindJSON, "", err
	case httpcall.KindJSONValue:
		return kindJSONValue, "", err
	case httpcall.KindHTML:
		return kindHTML, "", err
	case httpcall.KindXML:
		root = s.Root.Local
		if s.Root.Space != "" {
			root = s.Root.Space + ":" + root
		}
		return kindXML, root, err
	}
	return kindUnknown, "", err
}

// ClassifyResponse decides, before anyone trusts the body, what a response
// means to the origin's breaker. It reads at most the first bytes of the
// body through br, plus the whole of an exception report. The rule, in order:
//
//	status   body (sniffed after a BOM and whitespace)        outcome     error
//	429      any                                              Throttled   *HTTPStatusError, RetryAfter from the header (seconds or HTTP-date)
//	any      OGC exception report, server-side code           Failure     *ows.ExceptionReportError
//	         (NoApplicableCode, OperationProcessingFailed,
//	         CannotLockAllFeatures, none, unknown)
//	any      OGC exception report, client-side code           Success     *ows.ExceptionReportError
//	         (InvalidParameterValue, MissingParameterValue,
//	         OperationNotSupported, OptionNotSupported,
//	         VersionNegotiationFailed, InvalidFormat, InvalidCRS,
//	         InvalidSRS, OperationParsingFailed, …)
//	5xx      anything else                                    Failure     *HTTPStatusError
//	other    anything else (4xx, unfollowed 3xx, 1xx)         Success     *HTTPStatusError
//	2xx      a read error before the first bytes said what    Failure     *BodyError naming the error ("reading the body: …":
//	         the body is (reset, corrupt gzip, malformed                  a reset, "gzip: flate: corrupt input", "malformed
//	         chunked encoding)                                            chunked transfer encoding"); a *LimitError: Success
//	2xx      HTML page                                        Failure     *BodyError wrapping httpcall.ErrHTMLBody
//	2xx      empty                                            Failure     *BodyError wrapping httpcall.ErrEmptyBody
//	2xx      a whole JSON document that is a scalar (null,    Success     *BodyError wrapping *DecodeError ("document is
//	         true, false, a number, a string)                             JSON null, not a FeatureCollection")
//	2xx      neither JSON nor XML (a text page, a truncated   Failure     *BodyError wrapping httpcall.ErrUnrecognizedBody
//	         scalar, a scalar longer than the sniffed bytes)
//	2xx      XML whose root is not a FeatureCollection        Failure     *BodyError wrapping httpcall.ErrUnrecognizedBody
//	2xx      GML (root wfs:/gml:FeatureCollection)            (decode)    nil: the caller streams the body
//	2xx      JSON object or array                             (decode)    nil: the caller streams the body
//
// A JSON scalar is judged whole or not at all: only when the body ends
// within the sniffed bytes and is valid JSON is it the feed's (the server
// answered, deterministically, with a document that is not a layer); a
// text page that merely starts like one ("503 Service Unavailable") is
// not valid JSON and stays the origin's. An array ([], [1,2]) or an object
// that is not a FeatureCollection is streamed, and the decoder's
// *DecodeError makes it the feed's, like any whole document that does not
// decode as a layer (below).
//
// An exception report is judged by its code whatever the status, because
// servers answer the same fault with 200 (WFS 1.x), 400 (WFS 2.0) or 500, and
// a server whose database is down may answer 400 with NoApplicableCode. A
// report with several exceptions is client-side only if all of them are. An
// exception report that does not parse is a Failure. GeoServer's JSON
// exception report ({"exceptions":[{"code":…,"locator":…,"text":…}]}) is
// an exception report too, judged by the same codes; it is recognised by
// its first members, within the sniffed bytes.
//
// The Content-Type header is not consulted: servers label GeoJSON
// text/plain or text/xml, GML application/json, and errors anything. The
// body's first bytes are what the decoders will read, so they decide.
//
// When the result is nil the response is GeoJSON or GML data, and what
// goes wrong while it streams is judged by whose fault it is:
//
//	while streaming the data                                  outcome     error
//	connection cut, reset, attempt timeout, damaged gzip      Failure     *BodyError (*TransportError before the body)
//	document ends early (unexpected EOF)                      Failure     *BodyError wrapping io.ErrUnexpectedEOF
//	whole document that does not decode as a layer: not a     Success     *BodyError wrapping *DecodeError
//	  FeatureCollection, features not an array, a bad
//	  geometry, a syntax error inside what arrived
//	a limit exceeded (limits.body_bytes, feature_bytes, …)    Success     *LimitError (wrapped)
//	the caller's context ended                                Ignored     its error
//
// The rule: transport and server errors are the origin's (connection,
// timeout, 5xx, a body cut short, an HTML or XML error page, an empty body,
// a server-side OGC exception), because they say the server is failing and
// a retry may get through. Content errors are the feed's: a well-formed
// response that does not decode as the layer, or one larger than the feed's
// limits, is what this server sends for this layer, deterministically. The
// breaker counts such a call as a success (the server answered; a breaker
// that opened on it would stop the healthy layers of the same server), the
// call is not retried, and the poll fails naming the feed and the cause,
// without being parked: polling again will not help until the layer or the
// feed's configuration changes. A redirect refused by the feed's policy
// (*RedirectError) is the feed's in the same way.
//
// Client.Fetch turns transport errors into Failure, and the caller's
// cancellation into Ignored.
func ClassifyResponse(resp *http.Response, br *bufio.Reader, redacted string, now time.Time) *breaker.Result {
	_, res := classify(resp, br, redacted, now)
	return res
}

func classify(resp *http.Response, br *bufio.Reader, redacted string, now time.Time) (bodyKind, *breaker.Result) {
	status := resp.StatusCode
	if r := httpcall.Throttled(resp, redacted, now); r != nil {
		return kindUnknown, r
	}
	kind, root, rerr := sniff(br)
	switch kind {
	case kindException:
		return kind, ows.Verdict(br, ows.XMLReport, status, redacted)
	case kindJSONException:
		return kind, ows.Verdict(br, ows.JSONReport, status, redacted)
	}
	if r := httpcall.StatusVerdict(status, redacted); r != nil {
		return kind, r
	}
	switch kind {
	case kindJSON:
		return kind, nil
	case kindJSONValue:
		return kind, &breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Err: httpcall.JSONValueError(br, "a FeatureCollection")}}
	case kindXML:
		// The root decides: wfs:FeatureCollection (WFS 1.0, 1.1, 2.0) or
		// gml:FeatureCollection (GML 3.2 outside WFS) are features.
		if _, local, _ := strings.Cut(root, ":"); root == "FeatureCollection" || local == "FeatureCollection" {
			return kindGML, nil
		}
		// An XML document that is neither features nor an OGC report: a
		// proxy's or servlet container's XML error page, most likely.
		return kind, httpcall.BodyFailure(redacted, expected.Unrecognized(fmt.Sprintf("XML root element <%s>, not a FeatureCollection", root)))
	}
	return kind, expected.NotDataVerdict(resp, br, kind.sniffed(), rerr, redacted)
}

// sniffed is the httpcall.BodyKind of a body that is none of WFS's own kinds
// (an exception report, data): what httpcall.Expected.NotDataVerdict
// judges.
func (k bodyKind) sniffed() httpcall.BodyKind {
	switch k {
	case kindEmpty:
		return httpcall.KindEmpty
	case kindHTML:
		return httpcall.KindHTML
	}
	return httpcall.KindUnknown
}
