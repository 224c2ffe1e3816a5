package ows

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
)

// TestVerdict: a report is recognised from its first bytes in either form
// and judged by its codes whatever the status; one that does not parse is
// the origin's failure; a FeatureCollection is no report.
func TestVerdict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		status     int
		form       Form
		outcome    breaker.Outcome
		code       string
	}{
		{"xml server-side", `<?xml version="1.0"?><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1"><ows:Exception exceptionCode="NoApplicableCode"><ows:ExceptionText>db down</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`, 200, XMLReport, breaker.Failure, "NoApplicableCode"},
		{"xml client-side", `<ServiceExceptionReport><ServiceException code="InvalidParameterValue">bad typeName</ServiceException></ServiceExceptionReport>`, 400, XMLReport, breaker.Success, "InvalidParameterValue"},
		{"json client-side", `{"version":"1.1.0","exceptions":[{"code":"InvalidParameterValue","locator":"typeName","text":"no such type"}]}`, 200, JSONReport, breaker.Success, "InvalidParameterValue"},
		{"mixed codes", `<ExceptionReport><Exception exceptionCode="InvalidParameterValue"/><Exception exceptionCode="NoApplicableCode"/></ExceptionReport>`, 200, XMLReport, breaker.Failure, "InvalidParameterValue"},
		{"malformed", `{"exceptions": [ {"code": 1}`, 200, JSONReport, breaker.Failure, ""},
		{"features", `{"type":"FeatureCollection","exceptions":[]}`, 200, NotReport, 0, ""},
		{"gml", `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0"/>`, 200, NotReport, 0, ""},
	}
	for _, c := range cases {
		br := bufio.NewReader(strings.NewReader(c.body))
		s, _ := httpcall.Sniff(br)
		if f := FormOf(s); f != c.form {
			t.Fatalf("%s: form %v, want %v", c.name, f, c.form)
		}
		if c.form == NotReport {
			continue
		}
		r := Verdict(br, c.form, c.status, "http://example.test/wfs")
		if r.Outcome != c.outcome {
			t.Errorf("%s: outcome %v, want %v (%v)", c.name, r.Outcome, c.outcome, r.Err)
		}
		var rep *ExceptionReportError
		if c.code == "" {
			if !httpcall.IsBodyError(r.Err) {
				t.Errorf("%s: err %v, want a *BodyError", c.name, r.Err)
			}
		} else if !errors.As(r.Err, &rep) || rep.Code != c.code || rep.Status != c.status {
			t.Errorf("%s: err %v, want an *ExceptionReportError with code %s", c.name, r.Err, c.code)
		}
	}
}
