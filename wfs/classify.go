package wfs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
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

// sniffLen is how much of a body is looked at before trusting it. XML roots
// may follow a prolog, comments and a stylesheet instruction, hence not 512.
const sniffLen = 4096

// maxExceptionBytes bounds how much of an exception report or error body is
// read: reports are small, and the rest is of no use in an error message.
const maxExceptionBytes = 1 << 20

// sniff tells what a body is from its first bytes, skipping a UTF-8 BOM and
// whitespace. It reads nothing: br still yields the whole body.
//
// err is the read error that stopped the peek short of sniffLen bytes (nil
// when the body ended there, or went on): the kind is then a guess from
// the bytes that did arrive, and a verdict of kindEmpty or kindUnknown is
// never given for them (kindUnknown and the error instead), so that a
// caller reports what happened (a reset, a corrupt gzip stream, a
// malformed chunked encoding) rather than "empty" or "unrecognized".
func sniff(br *bufio.Reader) (kind bodyKind, root string, err error) {
	p, err := br.Peek(sniffLen)
	switch err {
	case nil, bufio.ErrBufferFull:
		kind, root = sniffBytes(p, false)
		return kind, root, nil
	case io.EOF:
		kind, root = sniffBytes(p, true)
		return kind, root, nil
	}
	kind, root = sniffBytes(p, false)
	return kind, root, err
}

// sniffBytes is sniff's verdict on p, the first bytes of a body; whole
// says that p is the entire body.
func sniffBytes(p []byte, whole bool) (bodyKind, string) {
	p = bytes.TrimPrefix(p, []byte("\xef\xbb\xbf"))
	p = bytes.TrimLeft(p, " \t\r\n")
	if len(p) == 0 {
		if whole {
			return kindEmpty, ""
		}
		return kindUnknown, ""
	}
	switch c := p[0]; {
	case c == '{':
		if jsonException(p) {
			return kindJSONException, ""
		}
		return kindJSON, ""
	case c == '[':
		return kindJSON, ""
	case c == '<':
	case whole && jsonScalarStart(c) && json.Valid(p):
		// A well-formed JSON document, all of it, that is not an object
		// or an array: the feed's content. Only a body seen whole counts,
		// so that a text page that starts like a number ("503 Service
		// Unavailable") or a truncated "nul" stays unrecognized.
		return kindJSONValue, ""
	default:
		return kindUnknown, ""
	}
	head := bytes.ToLower(p[:min(len(p), 64)])
	if bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) {
		return kindHTML, ""
	}
	// The root element decides; the xml decoder skips the prolog, comments
	// and doctype for us. Strict off: a truncated peek or HTML-ish markup
	// must not stop us from seeing the root's name.
	d := xml.NewDecoder(bytes.NewReader(p))
	d.Strict = false
	for {
		tok, err := d.RawToken()
		if err != nil {
			return kindUnknown, ""
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch strings.ToLower(se.Name.Local) {
		case "html":
			return kindHTML, ""
		case "exceptionreport", "serviceexceptionreport":
			return kindException, ""
		}
		root := se.Name.Local
		if se.Name.Space != "" {
			root = se.Name.Space + ":" + root
		}
		return kindXML, root
	}
}

// jsonScalarStart reports whether c can begin a JSON document that is not
// an object or an array.
func jsonScalarStart(c byte) bool {
	return c == 'n' || c == 't' || c == 'f' || c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// jsonValueError describes doc, a whole JSON document that sniff found to
// be a scalar, as the feed's content error: the server answered, with a
// document that is not a layer.
func jsonValueError(br *bufio.Reader) *feature.DecodeError {
	p, _ := br.Peek(sniffLen)
	doc := bytes.TrimSpace(bytes.TrimPrefix(p, []byte("\xef\xbb\xbf")))
	var what string
	switch doc[0] {
	case 'n':
		what = "JSON null"
	case 't', 'f':
		what = "the JSON boolean " + string(doc)
	case '"':
		what = "a JSON string " + strings.ToValidUTF8(truncate(string(doc), 80), "")
	default:
		what = "the JSON number " + truncate(string(doc), 40)
	}
	return &feature.DecodeError{Index: -1, Msg: "document is " + what + ", not a FeatureCollection"}
}

// jsonException reports whether the JSON object at the start of p is
// GeoServer's JSON exception report ({"version":"1.1.0","exceptions":[…]}),
// sent with status 200 when exceptions=application/json. It reads the
// object's first members from the peeked bytes only, never the body: a
// member "exceptions" before "type" or "features" decides.
func jsonException(p []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(p))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for range 8 {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case "exceptions":
			return true
		case "type", "features":
			return false
		}
		if err := skipValue(dec); err != nil {
			return false
		}
	}
	return false
}

// Exception codes whose report means "our request is wrong": retrying will
// not help and the origin is healthy. Every other code, an empty one and a
// code we do not know mean "the server failed", because a server whose
// database is down answers NoApplicableCode, and an unknown code is more
// likely a vendor's server fault than a fault of the fixed requests we send.
//
// CannotLockAllFeatures counts as server-side: we never ask for locks, so it
// can only be server state (another client's lock), which a retry may outlive.
// ResponseCacheExpired (WFS 2.0 paging via stored results) is transient too.
func clientSideCode(code string) bool {
	switch code {
	case "InvalidParameterValue", "MissingParameterValue", "OperationNotSupported",
		"OptionNotSupported", "VersionNegotiationFailed", "InvalidFormat", "InvalidCRS",
		"InvalidSRS", "OperationParsingFailed", "LayerNotDefined", "InvalidUpdateSequence",
		"DuplicateStoredQueryIdValue", "DuplicateStoredQueryParameterName":
		return true
	}
	return false
}

type xmlException struct {
	Code     string   `xml:"exceptionCode,attr"`
	Code10   string   `xml:"code,attr"`
	Locator  string   `xml:"locator,attr"`
	Texts    []string `xml:"ExceptionText"`
	CharData string   `xml:",chardata"`
}

type xmlExceptionReport struct {
	Exceptions        []xmlException `xml:"Exception"`
	ServiceExceptions []xmlException `xml:"ServiceException"`
}

// parseExceptionReport reads an exception report. The report counts as
// client-side only if every exception in it has a client-side code.
func parseExceptionReport(r io.Reader, status int, redacted string) (*ExceptionReportError, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxExceptionBytes))
	if err != nil {
		return nil, err
	}
	var rep xmlExceptionReport
	if err := xml.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("malformed exception report: %w", err)
	}
	return judgeExceptions(append(rep.Exceptions, rep.ServiceExceptions...), status, redacted), nil
}

// jsonExceptionReport is GeoServer's JSON form of an exception report.
type jsonExceptionReport struct {
	Exceptions []struct {
		Code    string `json:"code"`
		Locator string `json:"locator"`
		Text    string `json:"text"`
	} `json:"exceptions"`
}

// parseJSONExceptionReport reads a JSON exception report and judges it by
// its codes exactly as parseExceptionReport does an XML one.
func parseJSONExceptionReport(r io.Reader, status int, redacted string) (*ExceptionReportError, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxExceptionBytes))
	if err != nil {
		return nil, err
	}
	var rep jsonExceptionReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("malformed JSON exception report: %w", err)
	}
	all := make([]xmlException, len(rep.Exceptions))
	for i, x := range rep.Exceptions {
		all[i] = xmlException{Code: x.Code, Locator: x.Locator, Texts: []string{x.Text}}
	}
	return judgeExceptions(all, status, redacted), nil
}

// judgeExceptions applies the rule: a report is client-side only if every
// exception in it has a client-side code.
func judgeExceptions(all []xmlException, status int, redacted string) *ExceptionReportError {
	e := &ExceptionReportError{Status: status, URL: redacted, ServerSide: true}
	if len(all) == 0 {
		return e
	}
	first := all[0]
	e.Code = first.Code
	if e.Code == "" {
		e.Code = first.Code10
	}
	e.Locator = first.Locator
	texts := first.Texts
	if len(texts) == 0 {
		texts = []string{first.CharData}
	}
	for i := range texts {
		texts[i] = strings.Join(strings.Fields(texts[i]), " ")
	}
	e.Text = truncate(strings.Join(texts, "; "), 2000)
	e.ServerSide = false
	for _, x := range all {
		code := x.Code
		if code == "" {
			code = x.Code10
		}
		if !clientSideCode(code) {
			e.ServerSide = true
		}
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// htmlTitle digs the <title> out of an error page so the error says which
// failure it was ("502 Bad Gateway", "HTTP Status 500 – Internal Server Error").
func htmlTitle(br *bufio.Reader) string {
	p, _ := br.Peek(sniffLen)
	lower := bytes.ToLower(p)
	i := bytes.Index(lower, []byte("<title"))
	if i < 0 {
		return ""
	}
	j := bytes.IndexByte(lower[i:], '>')
	if j < 0 {
		return ""
	}
	start := i + j + 1
	end := bytes.Index(lower[start:], []byte("</title"))
	if end < 0 {
		return ""
	}
	return truncate(strings.Join(strings.Fields(string(p[start:start+end])), " "), 200)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date.
// A date in the past, a negative or an unreadable value mean "none given".
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(7*24*time.Hour/time.Second) { // keep the Duration from overflowing
			s = int64(7 * 24 * time.Hour / time.Second)
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// ClassifyResponse decides, before anyone trusts the body, what a response
// means to the origin's breaker. It reads at most the first bytes of the
// body through br, plus the whole of an exception report. The rule, in order:
//
//	status   body (sniffed after a BOM and whitespace)        outcome     error
//	429      any                                              Throttled   *HTTPStatusError, RetryAfter from the header (seconds or HTTP-date)
//	any      OGC exception report, server-side code           Failure     *ExceptionReportError
//	         (NoApplicableCode, OperationProcessingFailed,
//	         CannotLockAllFeatures, none, unknown)
//	any      OGC exception report, client-side code           Success     *ExceptionReportError
//	         (InvalidParameterValue, MissingParameterValue,
//	         OperationNotSupported, OptionNotSupported,
//	         VersionNegotiationFailed, InvalidFormat, InvalidCRS,
//	         InvalidSRS, OperationParsingFailed, …)
//	5xx      anything else                                    Failure     *HTTPStatusError
//	other    anything else (4xx, unfollowed 3xx, 1xx)         Success     *HTTPStatusError
//	2xx      a read error before the first bytes said what    Failure     *BodyError naming the error ("reading the body: …":
//	         the body is (reset, corrupt gzip, malformed                  a reset, "gzip: flate: corrupt input", "malformed
//	         chunked encoding)                                            chunked transfer encoding"); a *LimitError: Success
//	2xx      HTML page                                        Failure     *BodyError wrapping ErrHTMLBody
//	2xx      empty                                            Failure     *BodyError wrapping ErrEmptyBody
//	2xx      a whole JSON document that is a scalar (null,    Success     *BodyError wrapping *DecodeError ("document is
//	         true, false, a number, a string)                             JSON null, not a FeatureCollection")
//	2xx      neither JSON nor XML (a text page, a truncated   Failure     *BodyError wrapping ErrUnrecognizedBody
//	         scalar, a scalar longer than the sniffed bytes)
//	2xx      XML whose root is not a FeatureCollection        Failure     *BodyError wrapping ErrUnrecognizedBody
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
	if status == http.StatusTooManyRequests {
		ra := parseRetryAfter(resp.Header.Get("Retry-After"), now)
		return kindUnknown, &breaker.Result{
			Outcome:    breaker.Throttled,
			Err:        &HTTPStatusError{Status: status, URL: redacted, RetryAfter: ra},
			RetryAfter: ra,
		}
	}
	kind, root, rerr := sniff(br)
	if kind == kindException || kind == kindJSONException {
		parse := parseExceptionReport
		if kind == kindJSONException {
			parse = parseJSONExceptionReport
		}
		rep, err := parse(br, status, redacted)
		if err != nil {
			return kind, &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{URL: redacted, Err: err}}
		}
		out := breaker.Success
		if rep.ServerSide {
			out = breaker.Failure
		}
		return kind, &breaker.Result{Outcome: out, Err: rep}
	}
	if status < 200 || status > 299 {
		out := breaker.Success
		if status >= 500 {
			out = breaker.Failure
		}
		return kind, &breaker.Result{Outcome: out, Err: &HTTPStatusError{Status: status, URL: redacted}}
	}
	fail := func(err error) (bodyKind, *breaker.Result) {
		return kind, &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{URL: redacted, Err: err}}
	}
	switch kind {
	case kindJSON:
		return kind, nil
	case kindJSONValue:
		return kind, &breaker.Result{Outcome: breaker.Success, Err: &BodyError{URL: redacted, Err: jsonValueError(br)}}
	case kindUnknown:
		if rerr != nil {
			return kind, readFailure(resp, rerr, redacted)
		}
	case kindHTML:
		if t := htmlTitle(br); t != "" {
			return fail(fmt.Errorf("%w (title %q)", ErrHTMLBody, t))
		}
		return fail(ErrHTMLBody)
	case kindEmpty:
		return fail(ErrEmptyBody)
	case kindXML:
		// The root decides: wfs:FeatureCollection (WFS 1.0, 1.1, 2.0) or
		// gml:FeatureCollection (GML 3.2 outside WFS) are features.
		if _, local, _ := strings.Cut(root, ":"); root == "FeatureCollection" || local == "FeatureCollection" {
			return kindGML, nil
		}
		// An XML document that is neither features nor an OGC report: a
		// proxy's or servlet container's XML error page, most likely.
		return fail(fmt.Errorf("%w (XML root element <%s>, not a FeatureCollection)", ErrUnrecognizedBody, root))
	}
	return fail(ErrUnrecognizedBody)
}

// readFailure judges a read error met before the body's first bytes said
// what it is: what little arrived says nothing, the error says what
// happened (a reset, a corrupt gzip stream, a malformed chunked encoding),
// and it is the origin's failure, except a limit exceeded or a body gzipped
// too many times over (a *DecodeError), which are the feed's as anywhere.
// The error of the Result is always a *BodyError.
func readFailure(resp *http.Response, err error, redacted string) *breaker.Result {
	var le *feature.LimitError
	var de *feature.DecodeError
	if errors.As(err, &le) || errors.As(err, &de) {
		return &breaker.Result{Outcome: breaker.Success, Err: &BodyError{URL: redacted, Err: err}}
	}
	return &breaker.Result{Outcome: breaker.Failure, Err: &BodyError{URL: redacted, Err: readError(resp, err)}}
}

// readError says that err came from reading resp's body, and names a
// broken chunked transfer encoding as such: net/http's own words for it
// ("invalid byte in chunk length") do not say that the server broke HTTP.
func readError(resp *http.Response, err error) error {
	var le *feature.LimitError
	if errors.As(err, &le) {
		return err
	}
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	if chunked && strings.Contains(err.Error(), "chunk") {
		return fmt.Errorf("reading the body: malformed chunked transfer encoding: %w", err)
	}
	return fmt.Errorf("reading the body: %w", err)
}

// feedsFault reports whether err, met while streaming a body that classify
// let through as data, is the feed's rather than the origin's (see
// ClassifyResponse): a limit exceeded, or a document that arrived whole and
// does not decode as a layer. readErr is the error the body's reader itself
// met (limitedBody.err): when the bytes did not arrive whole, a decoder's
// complaint about them is the origin's failure, whatever it says.
func feedsFault(err, readErr error) bool {
	var le *feature.LimitError
	switch {
	case errors.As(err, &le):
		return true
	case readErr != nil, errors.Is(err, io.ErrUnexpectedEOF), isTransportRead(err):
		return false
	}
	var de *feature.DecodeError
	return errors.As(err, &de)
}

// errIsBody reports whether err came from reading or decoding a body.
func errIsBody(err error) bool {
	var be *BodyError
	return errors.As(err, &be)
}

// skipValue consumes one JSON value from dec without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}
