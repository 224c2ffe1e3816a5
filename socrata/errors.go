package socrata

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ingestd/ingestd/feature"
)

// ServerError is an error body of the portal, in either of the shapes
// SODA answers with: {"code":"query.compiler.malformed","error":true,
// "message":"…"} or {"error":true,"message":"…"}. Its message is the
// portal's own words, kept (bounded) so that the poll's error says what
// the portal refused; the request it answered is named around it.
type ServerError struct {
	// Status is the HTTP status.
	Status int
	// Code is the error's code ("" when the body had none).
	Code string
	// Message is the portal's message.
	Message string
	// RetryAfter is a 429's Retry-After (0: none).
	RetryAfter time.Duration
}

func (e *ServerError) Error() string {
	code := ""
	if e.Code != "" {
		code = " (" + e.Code + ")"
	}
	msg := fmt.Sprintf("the portal answered HTTP %d %s%s: %s", e.Status, http.StatusText(e.Status), code, e.Message)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// serverSide reports whether the error is the portal's failure (5xx)
// rather than the feed's request (4xx: a malformed query, a private or
// missing dataset).
func (e *ServerError) serverSide() bool { return e.Status >= 500 }

// parseServerError reads a SODA error body, or reports false when body
// is not one: an object with "error": true or a "code" and a "message".
func parseServerError(body []byte) (code, message string, ok bool) {
	var e struct {
		Code      string          `json:"code"`
		ErrorCode string          `json:"errorCode"`
		Error     json.RawMessage `json:"error"`
		Message   string          `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", false
	}
	code = e.Code
	if code == "" {
		code = e.ErrorCode
	}
	isErr := strings.TrimSpace(string(e.Error)) == "true"
	if !isErr && (code == "" || e.Message == "") {
		return "", "", false
	}
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	return feature.BoundMessage(code), feature.BoundMessage(feature.FixUTF8(msg)), true
}

// MetadataError is a dataset whose metadata ingestd cannot use: not a
// table, or a geometry_column it lacks.
type MetadataError struct {
	URL    string
	Reason string
}

func (e *MetadataError) Error() string {
	return fmt.Sprintf("metadata of %s: %s", e.URL, e.Reason)
}
