package httpcall

import (
	"bufio"
	"bytes"
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

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date.
// A date in the past, a negative or an unreadable value mean "none given".
func ParseRetryAfter(v string, now time.Time) time.Duration {
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

// ReadFailure judges a read error met before the body's first bytes said
// what it is: what little arrived says nothing, the error says what
// happened (a reset, a corrupt gzip stream, a malformed chunked encoding),
// and it is the origin's failure, except a limit exceeded or a body gzipped
// too many times over (a *DecodeError), which are the feed's as anywhere.
// The error of the Result is always a *BodyError.
func ReadFailure(resp *http.Response, err error, redacted string) *breaker.Result {
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

// FeedsFault reports whether err, met while streaming a body that a protocol
// let through as data, is the feed's rather than the origin's (see
// wfs.ClassifyResponse): a limit exceeded, or a document that arrived whole and
// does not decode as a layer. readErr is the error the body's reader itself
// met (Attempt.BodyErr): when the bytes did not arrive whole, a decoder's
// complaint about them is the origin's failure, whatever it says.
func FeedsFault(err, readErr error) bool {
	var le *feature.LimitError
	switch {
	case errors.As(err, &le):
		return true
	case readErr != nil, errors.Is(err, io.ErrUnexpectedEOF), IsTransportRead(err):
		return false
	}
	var de *feature.DecodeError
	return errors.As(err, &de)
}

// IsBodyError reports whether err came from reading or decoding a body (a
// *BodyError), however the handler wrapped it.
func IsBodyError(err error) bool {
	var be *BodyError
	return errors.As(err, &be)
}

// IsTransportRead reports whether err came from reading the connection
// rather than from the document's content. encoding/xml reports a body cut
// short as a syntax error on unexpected EOF.
func IsTransportRead(err error) bool {
	var se *xml.SyntaxError
	if errors.As(err, &se) && strings.Contains(se.Msg, "unexpected EOF") {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne)
}

// SniffLen is how much of a body is looked at before trusting it. XML roots
// may follow a prolog, comments and a stylesheet instruction, hence not 512.
const SniffLen = 4096

// HTMLTitle digs the <title> out of an error page so the error says which
// failure it was ("502 Bad Gateway", "HTTP Status 500 – Internal Server Error").
func HTMLTitle(br *bufio.Reader) string {
	p, _ := br.Peek(SniffLen)
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
	title := strings.Join(strings.Fields(string(p[start:start+end])), " ")
	if len(title) > 200 {
		title = title[:200] + "…"
	}
	return title
}
