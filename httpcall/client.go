package httpcall

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/redact"
)

// Client defaults.
const (
	// DefaultMaxBodyBytes bounds one response body (decompressed) of a
	// request whose BodyLimit is 0.
	DefaultMaxBodyBytes int64 = 1 << 30
	// DefaultRequestTimeout bounds one attempt of a request whose Timeout
	// is 0.
	DefaultRequestTimeout = 60 * time.Second
)

// Option configures a Client.
type Option func(*Client)

// WithMaxBodyBytes bounds each response body (decompressed) of requests
// whose BodyLimit is 0.
func WithMaxBodyBytes(n int64) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxBodyBytes = n
		}
	}
}

// WithRequestTimeout sets the per-attempt timeout of requests whose Timeout
// is 0.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.requestTimeout = d
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// Client makes logical calls to sources. It is safe for concurrent use.
type Client struct {
	http           *http.Client
	breakers       *breaker.Registry
	logger         *slog.Logger
	maxBodyBytes   int64
	requestTimeout time.Duration
	userAgent      string
}

// New returns a Client. httpClient nil means http.DefaultClient. The Client
// uses a copy of it whose CheckRedirect is its own (the redirect policy is
// per request: see Request.CrossOriginRedirects and MaxRedirects), and asks
// for gzip itself, so that the transport hands bodies over as sent and a
// Content-Encoding that lies can be caught. breakers nil makes every call a
// single attempt with no breaker (for one-off fetches; the daemon always
// passes its registry). logger nil discards.
func New(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	hc := *httpClient
	hc.CheckRedirect = checkRedirect
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		http:           &hc,
		breakers:       breakers,
		logger:         logger,
		maxBodyBytes:   DefaultMaxBodyBytes,
		requestTimeout: DefaultRequestTimeout,
		userAgent:      "ingestd",
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Request is one logical GET of a source.
type Request struct {
	// URL is what to GET.
	URL *url.URL
	// Home is the feed's configured URL: Headers go to its origin only, so
	// that a followed cross-origin redirect does not carry the feed's token.
	Home string
	// Headers are sent with every request to Home's origin.
	Headers map[string]string
	// Accept is the Accept header.
	Accept string
	// Timeout bounds one attempt, from dialing to the last byte of the
	// body; 0 means the Client's default.
	Timeout time.Duration
	// BodyLimit bounds the decompressed body; 0 means the Client's default.
	BodyLimit int64
	// CrossOriginRedirects allows following a redirect to another origin,
	// through that origin's breaker; by default it fails the attempt with
	// a *RedirectError.
	CrossOriginRedirects bool

	// Form, when set, makes the call a POST of Form
	// (application/x-www-form-urlencoded) to URL, sent again at every
	// attempt: ArcGIS REST queries with long id lists, which IIS and web
	// application firewalls refuse in a GET's query string (404, 414).
	Form url.Values

	// IfNoneMatch and IfModifiedSince, when set, make the GET conditional
	// on the ETag and Last-Modified of the copy the caller has (sent as
	// If-None-Match and If-Modified-Since). A 304 Not Modified answer then
	// ends the call as a success of the origin without calling the
	// AttemptFunc, and Call returns ErrNotModified.
	IfNoneMatch, IfModifiedSince string
}

// Conditional makes r conditional on a stored ETag and Last-Modified (those
// a server sent with the caller's copy). A stored value that is not a valid
// header value (the table was edited) is not sent: that costs a full fetch
// rather than a transport error charged to the origin.
func (r *Request) Conditional(etag, lastModified string) {
	valid := func(s string) string {
		if strings.ContainsAny(s, "\r\n\x00") {
			return ""
		}
		return s
	}
	r.IfNoneMatch, r.IfModifiedSince = valid(etag), valid(lastModified)
}

// conditional reports whether r is a conditional GET.
func (r *Request) conditional() bool { return r.IfNoneMatch != "" || r.IfModifiedSince != "" }

// ErrNotModified is Call's answer when the server answered a conditional
// request with 304 Not Modified: the caller's copy is current. The origin
// answered well (a breaker success), and there is no body.
var ErrNotModified = errors.New("httpcall: 304 not modified")

// ResponseValidators returns the validators of a response (its ETag and
// Last-Modified headers, as sent), for the caller to send back with its
// next conditional request; "" for a header the response lacks.
func ResponseValidators(resp *http.Response) (etag, lastModified string) {
	return resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
}

// AttemptFunc judges one attempt that got a response: it opens the body
// (Attempt.OpenBody) when the protocol's rules want it, classifies it and
// decodes it, and returns what the attempt means to the origin's breaker.
// It returns Attempt.OriginFailure(err) for the origin's failures, so that
// the caller's cancellation is Ignored and the attempt's own timeout says
// so.
type AttemptFunc func(a *Attempt) breaker.Result

// Attempt is one attempt of a logical call, with its response. The
// response's body is closed when the AttemptFunc returns.
type Attempt struct {
	// Ctx is the attempt's context: the call's, bounded by the timeout.
	Ctx context.Context
	// CallCtx is the call's context as the breaker passes it; its end is
	// the caller's doing.
	CallCtx context.Context
	// URL is the request's URL, or the target of a followed cross-origin
	// redirect; Redacted is it as it may be logged.
	URL      *url.URL
	Redacted string
	// Resp is the response; its body is to be read through OpenBody.
	Resp *http.Response

	client  *Client
	req     *Request
	timeout time.Duration
	body    *limitedBody
	// gunzipped: OpenBody decompressed the body (BodyBytes then counts
	// the decompressed bytes, not the Content-Length's).
	gunzipped bool
	// failure is OriginFailure's rule, which Client.attempt also applies
	// to the errors it meets before an AttemptFunc runs.
	failure func(breaker.Outcome, error) breaker.Result
}

// OriginFailure is err, judged the origin's failure, as the attempt's
// result, unless it was not the origin's doing: after the caller's
// context ended it is Ignored, and after the attempt's own timeout it is
// a Failure whose error says so.
func (a *Attempt) OriginFailure(err error) breaker.Result {
	return a.failure(breaker.Failure, err)
}

// Verdict is r, a verdict from ReadFailure or a protocol's classification,
// as the attempt's result: its Failure through OriginFailure (the caller's
// cancellation is Ignored, the attempt's own timeout says so), any other
// outcome as is.
func (a *Attempt) Verdict(r *breaker.Result) breaker.Result {
	if r.Outcome == breaker.Failure {
		return a.OriginFailure(r.Err)
	}
	return *r
}

// StreamFailed judges err, met while streaming a body let through as data:
// the feed's (a Success: the server answered) when FeedsFault says so and
// the attempt's context is still live, otherwise the origin's Failure
// through OriginFailure.
func (a *Attempt) StreamFailed(err error) breaker.Result {
	if FeedsFault(err, a.BodyErr()) && a.Ctx.Err() == nil {
		return breaker.Result{Outcome: breaker.Success, Err: err}
	}
	return a.OriginFailure(err)
}

// OpenBody returns the body decompressed (gzip by its magic number, up to
// maxGzipLayers layers), bounded by the request's body limit (exceeding it
// is a *feature.LimitError naming where), buffered, past a leading UTF-8
// BOM, and a note when the server's Content-Encoding lied. Its error is a
// read error before the first bytes, for ReadFailure to judge.
func (a *Attempt) OpenBody(where string) (*bufio.Reader, string, error) {
	limit := a.client.bodyLimit(a.req)
	raw, note, gunzipped, err := decodeContent(a.Resp, limit)
	if err != nil {
		return nil, "", err
	}
	a.gunzipped = gunzipped
	a.body = &limitedBody{r: raw, limit: limit, where: where}
	br := bufio.NewReaderSize(a.body, 32<<10)
	if p, _ := br.Peek(len(utf8BOM)); string(p) == string(utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	return br, note, nil
}

// Gunzipped reports whether OpenBody decompressed a gzip body, labelled
// so or not: its Content-Length then counts other bytes than BodyBytes.
func (a *Attempt) Gunzipped() bool { return a.gunzipped }

// BodyBytes is the number of body bytes (decompressed) read so far.
func (a *Attempt) BodyBytes() int64 {
	if a.body == nil {
		return 0
	}
	return a.body.read
}

// BodyErr is the first error the body's reader met other than io.EOF (a
// connection cut, a timeout, a damaged gzip stream), or nil: when it is
// set, the bytes did not arrive whole, and a decoder's complaint about them
// is the origin's failure (see FeedsFault).
func (a *Attempt) BodyErr() error {
	if a.body == nil {
		return nil
	}
	return a.body.err
}

// Logger returns the Client's logger.
func (c *Client) Logger() *slog.Logger { return c.logger }

// Call runs req as one logical call through the breaker of its URL's
// origin, calling fn for every attempt that got a response. A transport
// error, a refused redirect and an attempt's timeout are judged here; a
// response that is a redirect to another origin the request allows is
// followed with a fresh logical call through the target's breaker (see
// CrossOriginRedirects). The error is the breaker's (*breaker.OpenError,
// *breaker.RetryError, …) around the last attempt's.
func (c *Client) Call(ctx context.Context, req Request, fn AttemptFunc) error {
	return c.call(ctx, req.URL, req.CrossOriginRedirects, func(cctx context.Context, target *url.URL) breaker.Result {
		return c.attempt(cctx, &req, target, fn)
	})
}

// Attempt runs one attempt of req outside any breaker, with no redirect
// followed to another origin, and returns its Result: what the origin's
// breaker would be told. Protocol packages test their AttemptFuncs with it.
func (c *Client) Attempt(ctx context.Context, req Request, fn AttemptFunc) breaker.Result {
	return c.attempt(ctx, &req, req.URL, fn)
}

// attempt is one attempt of req at u: GET, then fn on the response.
func (c *Client) attempt(ctx context.Context, req *Request, u *url.URL, fn AttemptFunc) breaker.Result {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = c.requestTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	failure := func(out breaker.Outcome, err error) breaker.Result {
		if ctx.Err() != nil {
			return breaker.Result{Outcome: breaker.Ignored, Err: err}
		}
		if errors.Is(actx.Err(), context.DeadlineExceeded) {
			return breaker.Result{Outcome: breaker.Failure, Err: fmt.Errorf("attempt timed out after %s: %w", timeout, err)}
		}
		return breaker.Result{Outcome: out, Err: err}
	}
	redacted := redact.URL(u.String())
	resp, rr := c.get(actx, req, u, redacted)
	if rr != nil {
		return failure(rr.Outcome, rr.Err)
	}
	defer resp.Body.Close()
	if r := followed(ctx, resp); r != nil {
		return *r
	}
	if resp.StatusCode == http.StatusNotModified && req.conditional() {
		// The origin answered, cheaply and well; a 304 has no body. (A
		// 304 to a request that was not conditional is left to fn: the
		// status is not 2xx.)
		return breaker.Result{Outcome: breaker.Success, Err: ErrNotModified}
	}
	return fn(&Attempt{Ctx: actx, CallCtx: ctx, URL: u, Redacted: redacted, Resp: resp,
		client: c, req: req, timeout: timeout, failure: failure})
}

// do runs one logical call through the origin's breaker, or, without a
// registry, as a single attempt (a one-off fetch from the command line).
func (c *Client) do(ctx context.Context, origin string, fn breaker.AttemptFunc) error {
	if c.breakers != nil {
		return c.breakers.Do(ctx, origin, fn)
	}
	return fn(ctx, 1).Err
}

// get sends one GET of u for req. A nil Result means resp is the answer
// (its body to be closed by the caller); otherwise the Result says whose
// fault the failure was: a refused redirect is the feed's (Success, the
// server answered), any other transport error the origin's.
func (c *Client) get(ctx context.Context, r *Request, u *url.URL, redacted string) (*http.Response, *breaker.Result) {
	method, body := http.MethodGet, io.Reader(nil)
	if r.Form != nil {
		method, body = http.MethodPost, strings.NewReader(r.Form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, &breaker.Result{Outcome: breaker.Success, Err: fmt.Errorf("GET %s: %s", redacted, RedactErr(err, u.String()))}
	}
	req.Header.Set("Accept", r.Accept)
	if r.Form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	// Asked for explicitly, the transport leaves the body as sent, and
	// decodeContent decides from the bytes whether it is gzip.
	req.Header.Set("Accept-Encoding", "gzip")
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if r.IfNoneMatch != "" {
		req.Header.Set("If-None-Match", r.IfNoneMatch)
	}
	if r.IfModifiedSince != "" {
		req.Header.Set("If-Modified-Since", r.IfModifiedSince)
	}
	if breaker.Origin(u) == OriginOf(r.Home) {
		// The feed's headers (a token) are for its own origin only: a
		// followed cross-origin redirect does not get them.
		for k, v := range r.Headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if re := refusedRedirect(err); re != nil {
			return nil, &breaker.Result{Outcome: breaker.Success, Err: re}
		}
		// *url.Error quotes the full URL, token included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &breaker.Result{Outcome: breaker.Failure, Err: &TransportError{URL: redacted, Err: err}}
	}
	return resp, nil
}

// CheckHeaders refuses a header that net/http would refuse to send, before
// any request: as a transport error it would be charged to the origin. The
// message names the header, never its value.
func CheckHeaders(headers map[string]string) error {
	for k, v := range headers {
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) {
			return fmt.Errorf("header name %q is not a valid HTTP header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("the value of header %q contains a line break or NUL", k)
		}
	}
	return nil
}

// bodyLimit is the most decompressed bytes one response of req may have:
// its BodyLimit, else the Client's WithMaxBodyBytes.
func (c *Client) bodyLimit(req *Request) int64 {
	if req.BodyLimit > 0 {
		return req.BodyLimit
	}
	return c.maxBodyBytes
}

// OriginOf is the origin (scheme://host:port) of a raw URL, "" when it does
// not parse.
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return breaker.Origin(u)
}

// RedactErr is err's message with raw, and every other URL in it, redacted:
// raw first, whole, because url.Parse quotes it and a raw that failed to
// parse may hold white space that ends a URL in text early.
func RedactErr(err error, raw string) string {
	return redact.Text(strings.ReplaceAll(err.Error(), raw, redact.URL(raw)))
}
