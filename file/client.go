package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Option configures a Client.
type Option func(*Client)

// WithUserAgent sets the User-Agent header of every request; "" keeps
// the default.
func WithUserAgent(ua string) Option { return func(c *Client) { c.base.UserAgent(ua) } }

// WithTempDir sets where downloads are written ("": os.TempDir()).
func WithTempDir(dir string) Option {
	return func(c *Client) { c.tempDir = dir }
}

// Client fetches files, each download one logical call through the
// breaker of its origin. It is safe for concurrent use.
type Client struct {
	base    httpcall.ClientBase
	tempDir string
	// breakers guard ftp:// downloads, which do not go through base.Calls
	// (nil: a single attempt, as base.Calls does without a registry).
	breakers *breaker.Registry
}

// NewClient returns a Client that downloads through httpcall.BuildClient,
// which says what nil httpClient, breakers and logger mean.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	c := &Client{breakers: breakers}
	return httpcall.BuildClient(c, &c.base, httpClient, breakers, logger, opts)
}

// Prepare returns layer as it is: a file needs no discovery.
func (c *Client) Prepare(_ context.Context, layer source.Layer) (source.Layer, []string, error) {
	return layer, nil, nil
}

// Validate reports why layer cannot be requested, wrapping source.ErrInvalidLayer.
func Validate(l source.Layer) error {
	if l.Kind != Kind {
		return source.Named(Kind, fmt.Errorf("%w: kind %q: want %q", source.ErrInvalidLayer, l.Kind, Kind))
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return source.Named(Kind, fmt.Errorf("%w: url %s: %v", source.ErrInvalidLayer, redact.URL(l.URL), httpcall.RedactErr(err, l.URL)))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https" && s != "ftp") || u.Host == "" {
		return source.Named(Kind, fmt.Errorf("%w: url %s: want an absolute http, https or ftp URL", source.ErrInvalidLayer, redact.URL(l.URL)))
	}
	if isFTP(u) {
		switch {
		case len(l.Headers) > 0:
			return source.Named(Kind, fmt.Errorf("%w: url %s: headers are HTTP's; an ftp:// download sends none", source.ErrInvalidLayer, redact.URL(l.URL)))
		case ftpPath(u) == "" || strings.HasSuffix(u.Path, "/"):
			return source.Named(Kind, fmt.Errorf("%w: url %s: an ftp:// URL names a file, not a folder", source.ErrInvalidLayer, redact.URL(l.URL)))
		}
	}
	if err := httpcall.CheckHeaders(l.Headers); err != nil {
		return source.Named(Kind, fmt.Errorf("%w: %v", source.ErrInvalidLayer, err))
	}
	return nil
}

// download is what the attempt that succeeded learned.
type download struct {
	bytes              int64
	etag, lastModified string
	// version is an ftp:// file's validator (see ftpVersion).
	version string
}

// Fetch downloads layer's file into a temporary file (removed before it
// returns, whatever happens), then hands its features to handle as page 0.
// When layer.Validators hold the file's last ETag or Last-Modified they
// are sent back, and a 304 ends the fetch with FetchStats.NotModified; an
// ftp:// file is not modified when its MDTM and SIZE are those recorded.
// Every error but the handler's own starts "file: ".
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if err := Validate(layer); err != nil {
		return stats, err
	}
	if firstPage != 0 {
		return stats, source.Named(Kind, fmt.Errorf("%w: first page %d of a file, which is one page", source.ErrInvalidLayer, firstPage))
	}
	tmp, err := os.CreateTemp(c.tempDir, "ingestd-file-*")
	if err != nil {
		return stats, source.Named(Kind, fmt.Errorf("a temporary file for the download: %w", err))
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	u, _ := url.Parse(layer.URL) // Validate parsed it
	p := source.Page{URL: redact.URL(layer.URL)}
	began := time.Now()
	var dl download
	readPath := tmp.Name()
	if isFTP(u) {
		dl, readPath, err = c.fetchFTP(ctx, layer, u, tmp, p.URL)
		defer os.Remove(readPath)
	} else {
		req := httpcall.Request{URL: u, Home: layer.URL, Headers: layer.Headers, Accept: "*/*",
			Timeout: layer.RequestTimeout, BodyLimit: layer.Limits.BodyBytes, CrossOriginRedirects: layer.CrossOriginRedirects}
		req.Conditional(layer.Validators.ETag, layer.Validators.LastModified)
		err = c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
			dl = download{}
			return c.attempt(a, tmp, &dl)
		})
	}
	switch {
	case errors.Is(err, httpcall.ErrNotModified):
		stats.NotModified, stats.Validators = true, layer.Validators
		return stats, nil
	case err != nil:
		return stats, source.Named(Kind, fmt.Errorf("page 0 (%s): %w", p.URL, err))
	}
	c.base.Logger.Debug("file downloaded", "url", p.URL, "bytes", dl.bytes, "duration_ms", time.Since(began).Milliseconds())
	stats.Bytes = dl.bytes
	stats.Validators = source.Validators{ETag: dl.etag, LastModified: dl.lastModified, Version: dl.version}
	n, declared, id, err := c.read(ctx, layer, readPath, fileName(u), p, handle)
	if err != nil {
		return stats, err
	}
	stats.Pages, stats.Features, stats.Declared = 1, n, declared
	stats.CRS, stats.CRSBy = id.Code, string(id.By)
	return stats, nil
}

// fileName is the file's name as the URL gives it (its last segment),
// without a .gz or .gzip: the HTTP client (or gunzipFTP) has gunzipped the
// body, and the name inside (a .csv) is what tells the format.
func fileName(u *url.URL) string {
	if b := path.Base(u.Path); b != "/" && b != "." {
		for _, ext := range []string{".gz", ".gzip"} {
			if len(b) > len(ext) && strings.EqualFold(b[len(b)-len(ext):], ext) {
				return b[:len(b)-len(ext)]
			}
		}
		return b
	}
	return ""
}

// attempt is one attempt at the download: GET, classify, copy the body
// into tmp (truncated first: a retry starts over).
func (c *Client) attempt(a *httpcall.Attempt, tmp *os.File, dl *download) breaker.Result {
	br, _, err := a.OpenBody("file")
	if err != nil {
		return a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
	}
	if r := httpcall.Throttled(a.Resp, a.Redacted, time.Now()); r != nil {
		return a.Verdict(r)
	}
	s, rerr := httpcall.Sniff(br)
	if r := httpcall.StatusVerdict(a.Resp.StatusCode, a.Redacted); r != nil {
		return a.Verdict(r)
	}
	if s.Kind == httpcall.KindHTML || s.Kind == httpcall.KindEmpty || (s.Kind == httpcall.KindUnknown && rerr != nil) {
		return a.Verdict(expected.NotDataVerdict(a.Resp, br, s.Kind, rerr, a.Redacted))
	}
	if err := tmp.Truncate(0); err != nil {
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("the temporary file: %w", err)}
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("the temporary file: %w", err)}
	}
	n, err := io.Copy(tmp, br)
	if err != nil {
		if a.BodyErr() == nil && !errors.Is(err, io.ErrUnexpectedEOF) && a.Ctx.Err() == nil && !isLimit(err) {
			// The disk, not the origin.
			return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("writing the download to %s: %w", tmp.Name(), err)}
		}
		return a.StreamFailed(&httpcall.BodyError{URL: a.Redacted, Err: err})
	}
	// The body as sent: OpenBody skips a leading UTF-8 BOM, which the
	// Content-Length counts. A gunzipped body (a .csv.gz served as it is)
	// has as many bytes as it uncompresses to, and gzip's own trailer
	// catches a cut one.
	if cl, sent := a.Resp.ContentLength, a.BodyBytes(); cl >= 0 && a.Resp.Header.Get("Content-Encoding") == "" && !a.Gunzipped() && sent < cl {
		return a.OriginFailure(&httpcall.BodyError{URL: a.Redacted, Err: fmt.Errorf("%w: %d of %d bytes", ErrShortBody, sent, cl)})
	}
	dl.bytes = n
	dl.etag, dl.lastModified = httpcall.ResponseValidators(a.Resp)
	return breaker.Result{Outcome: breaker.Success}
}
