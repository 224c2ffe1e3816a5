package geojson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Option configures a Client.
type Option func(*Client)

// WithUserAgent sets the User-Agent header of every request; "" keeps
// the default.
func WithUserAgent(ua string) Option { return func(c *Client) { c.base.UserAgent(ua) } }

// WithMaxBodyBytes bounds each body (decompressed) of layers whose
// Limits.BodyBytes is 0.
func WithMaxBodyBytes(n int64) Option {
	return func(c *Client) { c.base.Use(httpcall.WithMaxBodyBytes(n)) }
}

// WithClock replaces time.Now, for Retry-After dates in tests.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.base.SetClock(now) } }

// Client fetches GeoJSON documents, each one logical call through the
// breaker of its origin. It is safe for concurrent use.
type Client struct {
	base httpcall.ClientBase
}

// NewClient returns a Client that calls servers through httpcall.BuildClient,
// which says what nil httpClient, breakers and logger mean.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	c := &Client{}
	return httpcall.BuildClient(c, &c.base, httpClient, breakers, logger, opts)
}

// Prepare returns layer as it is: a document needs no discovery.
func (c *Client) Prepare(_ context.Context, layer source.Layer) (source.Layer, []string, error) {
	return layer, nil, nil
}

// Validate reports why layer cannot be requested, wrapping source.ErrInvalidLayer.
func Validate(l source.Layer) error {
	return source.Named(Kind, validate(l))
}

func validate(l source.Layer) error {
	if l.Kind != Kind {
		return fmt.Errorf("%w: kind %q: want %q", source.ErrInvalidLayer, l.Kind, Kind)
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return fmt.Errorf("%w: url %s: %v", source.ErrInvalidLayer, redact.URL(l.URL), httpcall.RedactErr(err, l.URL))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %s: want an absolute http or https URL", source.ErrInvalidLayer, redact.URL(l.URL))
	}
	if err := httpcall.CheckHeaders(l.Headers); err != nil {
		return fmt.Errorf("%w: %v", source.ErrInvalidLayer, err)
	}
	return nil
}

// Fetch reads layer's document in one request (firstPage must be 0) and
// hands its features to handle as page 0. When layer.Validators hold the
// ETag or Last-Modified of the last applied snapshot they are sent back,
// and a 304 ends the fetch with FetchStats.NotModified.
//
// The error is an *source.IncompleteError, a *source.TimeoutError, the handler's own
// error as it returned it, or an error naming the (redacted) URL, wrapping
// what httpcall and the breaker report (*httpcall.HTTPStatusError,
// *httpcall.BodyError, …); every one but the handler's starts "geojson: ".
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if err := Validate(layer); err != nil {
		return stats, err
	}
	if firstPage != 0 {
		return stats, source.Named(Kind, fmt.Errorf("%w: first page %d of a document, which is one page", source.ErrInvalidLayer, firstPage))
	}
	u, _ := url.Parse(layer.URL) // Validate parsed it
	p := source.Page{URL: redact.URL(layer.URL)}
	req := httpcall.Request{URL: u, Home: layer.URL, Headers: layer.Headers, Accept: "application/geo+json, application/json;q=0.9, */*;q=0.1",
		Timeout: layer.RequestTimeout, BodyLimit: layer.Limits.BodyBytes, CrossOriginRedirects: layer.CrossOriginRedirects}
	req.Conditional(layer.Validators.ETag, layer.Validators.LastModified)
	began := time.Now()
	var res result
	err := c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		res = result{}
		return c.attempt(a, layer, p, handle, &res)
	})
	switch {
	case errors.Is(err, httpcall.ErrNotModified):
		stats.NotModified, stats.Validators = true, layer.Validators
		return stats, nil
	case err != nil:
		return stats, c.failed(ctx, err, p, &res)
	}
	stats.Pages, stats.Features, stats.Bytes, stats.NumberMatched = 1, res.features, res.bytes, res.numberMatched
	stats.Validators = source.Validators{ETag: res.etag, LastModified: res.lastModified}
	c.base.Logger.Debug("document fetched", "url", p.URL, "features", res.features, "bytes", res.bytes,
		"duration_ms", time.Since(began).Milliseconds())
	if res.numberMatched >= 0 && res.numberMatched != res.features {
		return stats, &source.IncompleteError{Kind: Kind, URL: p.URL, Expected: res.numberMatched, Got: res.features,
			Reason: fmt.Sprintf("the document holds %d of the %d features its numberMatched promised: the server caps its responses", res.features, res.numberMatched)}
	}
	return stats, nil
}

// failed names the error of a fetch that did not complete.
func (c *Client) failed(ctx context.Context, err error, p source.Page, res *result) error {
	var ie *source.IncompleteError
	var le *feature.LimitError
	switch {
	case errors.As(err, &ie):
		return ie
	case errors.As(err, &le):
		// The limit is the whole story; where the decoder was is noise.
		return fmt.Errorf("%s: page 0 (%s): %w", Kind, p.URL, le)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, breaker.ErrPastDeadline):
		return &source.TimeoutError{Kind: Kind, URL: p.URL, Features: res.features, Err: err}
	case res.handlerErr != nil && err == res.handlerErr:
		return err
	}
	return fmt.Errorf("%s: page 0 (%s): %w", Kind, p.URL, err)
}
