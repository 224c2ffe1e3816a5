package ows

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
)

// MaxReportBytes bounds how much of an exception report is read: reports
// are small, and the rest is of no use in an error message.
const MaxReportBytes = 1 << 20

// Form is the form of an OGC exception report a body is, if it is one.
type Form int

// Forms of exception report.
const (
	// NotReport is a body that is no exception report.
	NotReport Form = iota
	// XMLReport is ows:ExceptionReport (WFS 1.1, 2.0) or
	// ServiceExceptionReport (WFS 1.0, MapServer).
	XMLReport
	// JSONReport is GeoServer's {"version":…,"exceptions":[…]}, sent
	// with status 200 when exceptions=application/json.
	JSONReport
)

// FormOf tells from a body's first bytes (httpcall.Sniff's verdict)
// whether it is an exception report, and in which form, without reading
// the body on: an XML root ExceptionReport or ServiceExceptionReport, or
// a JSON object whose member "exceptions" comes before "type" or
// "features".
func FormOf(s httpcall.Sniffed) Form {
	switch s.Kind {
	case httpcall.KindXML:
		switch strings.ToLower(s.Root.Local) {
		case "exceptionreport", "serviceexceptionreport":
			return XMLReport
		}
	case httpcall.KindJSON:
		if s.Head[0] == '{' && jsonException(s.Head) {
			return JSONReport
		}
	}
	return NotReport
}

// Verdict is the verdict on a body that FormOf found to be a report of
// form f, whatever the HTTP status it came with: a report whose codes say
// the server failed is the origin's Failure, one whose codes all say our
// request is wrong the feed's (a Success: the server answered), both with
// the *ExceptionReportError; a report that does not parse is the origin's
// failure to send one (a *httpcall.BodyError). It reads the report,
// bounded, from br.
func Verdict(br *bufio.Reader, f Form, status int, redacted string) *breaker.Result {
	rep, err := Parse(br, f, status, redacted)
	if err != nil {
		return httpcall.BodyFailure(redacted, err)
	}
	return httpcall.ErrorVerdict(rep, rep.ServerSide)
}

// Parse reads a report of form f (at most MaxReportBytes of r) and judges
// it by its codes: the report counts as client-side only if every
// exception in it has a client-side code.
func Parse(r io.Reader, f Form, status int, redacted string) (*ExceptionReportError, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxReportBytes))
	if err != nil {
		return nil, err
	}
	if f == JSONReport {
		return parseJSON(data, status, redacted)
	}
	var rep xmlExceptionReport
	if err := xml.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("malformed exception report: %w", err)
	}
	return judgeExceptions(append(rep.Exceptions, rep.ServiceExceptions...), status, redacted), nil
}

// jsonException reports whether the JSON object at the start of p is
// GeoServer's JSON exception report ({"version":"1.1.0","exceptions":[…]}),
// sent with status 200 when exceptions=application/json. It reads the
// object's first members from the peeked bytes only, never the body: a
// member "exceptions" before "type" or "features" decides.
func jsonException(p []byte) bool {
	for _, k := range httpcall.LeadingKeys(p, 8) {
		switch k {
		case "exceptions":
			return true
		case "type", "features":
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

// jsonExceptionReport is GeoServer's JSON form of an exception report.
type jsonExceptionReport struct {
	Exceptions []struct {
		Code    string `json:"code"`
		Locator string `json:"locator"`
		Text    string `json:"text"`
	} `json:"exceptions"`
}

// parseJSON reads a JSON exception report and judges it by its codes
// exactly as Parse does an XML one.
func parseJSON(data []byte, status int, redacted string) (*ExceptionReportError, error) {
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
	e.Text = errtext.Head(strings.Join(texts, "; "), 2000)
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
