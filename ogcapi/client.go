package ogcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Client defaults.
const (
	// DefaultMaxPages stops a fetch whose links never end.
	DefaultMaxPages = 100_000
	// DefaultMaxEmptyPages is how many empty pages in a row, each with a
	// next link, a fetch follows before it calls the paging broken.
	DefaultMaxEmptyPages = 10
	// DefaultLimit is the limit asked for when the layer's PageSize is 0:
	// servers default to tiny pages (GDAL's driver to 10, OSGeo/gdal#8522;
	// the spec's example to 10), and the server caps it at its maximum.
	DefaultLimit = 1000
)

// Option configures a Client.
type Option func(*Client)

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.callOpts = append(c.callOpts, httpcall.WithUserAgent(ua)) }
}

// WithRequestTimeout sets the per-attempt timeout used when Layer.RequestTimeout is 0.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *Client) { c.callOpts = append(c.callOpts, httpcall.WithRequestTimeout(d)) }
}

// WithMaxPages bounds the pages of one Fetch.
func WithMaxPages(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxPages = n
		}
	}
}

// WithClock replaces time.Now, for Retry-After dates in tests.
func WithClock(now func() time.Time) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
	}
}

// Client fetches OGC API – Features collections. It is safe for concurrent use.
type Client struct {
	calls    *httpcall.Client
	callOpts []httpcall.Option
	logger   *slog.Logger
	maxPages int
	maxEmpty int
	now      func() time.Time
	// discovery caches Prepare's discoveries (see WithDiscoveryTTL).
	discovery discoveryCache
	// declaredMemo keeps the collections' declared schemas (see declared).
	declaredMemo schema.Memo[string]
}

// NewClient returns a Client calling servers through httpcall.New(
// httpClient, breakers, logger); see wfs.NewClient for what nil means.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{logger: logger, maxPages: DefaultMaxPages, maxEmpty: DefaultMaxEmptyPages, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	c.calls = httpcall.New(httpClient, breakers, logger, c.callOpts...)
	c.callOpts = nil
	return c
}

// FirstURL is the request of layer's first page: its items link (set by
// Prepare) with limit, crs and bbox. Every later page is a next link as
// the server gave it.
func FirstURL(layer source.Layer) (*url.URL, error) {
	if layer.ItemsURL == "" {
		return nil, fmt.Errorf("%w: no items link (the layer was not prepared)", ErrInvalidLayer)
	}
	u, err := url.Parse(layer.ItemsURL)
	if err != nil {
		return nil, fmt.Errorf("%w: items link: %s", ErrInvalidLayer, redact.Text(err.Error()))
	}
	q := u.Query()
	limit := layer.PageSize
	if limit <= 0 {
		limit = DefaultLimit
	}
	q.Set("limit", strconv.Itoa(limit))
	if layer.CRS != "" && !isCRS84(layer.CRS) {
		q.Set("crs", layer.CRS)
	}
	if len(layer.BBox) == 4 {
		q.Set("bbox", fmt.Sprintf("%s,%s,%s,%s", num(layer.BBox[0]), num(layer.BBox[1]), num(layer.BBox[2]), num(layer.BBox[3])))
	} else if len(layer.BBox) != 0 {
		return nil, fmt.Errorf("%w: bbox has %d numbers, want 4", ErrInvalidLayer, len(layer.BBox))
	}
	if !q.Has("f") {
		q.Set("f", "json")
	}
	u.RawQuery = q.Encode()
	return u, nil
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// accept is the Accept header of items requests.
const accept = "application/geo+json, application/json;q=0.9, */*;q=0.1"

// Fetch fetches the collection from page firstPage on (0, or the page a
// parked poll resumes at, from layer.ResumeURL: the Page.Next its store
// recorded for the page before), calling handle for each page while its
// body is open. Page.Next gives each page's next link in the form
// Storable makes.
//
// Paging follows each page's rel="next" link exactly as given (never an
// offset built here) and stops only at a page without one; a page shorter
// than the limit with a next link is followed. The fetch fails, and nothing
// it staged may be applied, when:
//
//   - a next link leads to a URL already fetched in this fetch (a link
//     loop; a limit=0 page whose next link points to itself): *PagingError;
//   - a page starts with the feature an earlier page started with, or holds
//     exactly the features of an earlier page (a server ignoring offset,
//     MapServer#6613): *PagingError naming both pages;
//   - more than DefaultMaxEmptyPages empty pages come in a row: *PagingError;
//   - a feature id comes on two pages: *IncompleteError;
//   - the total differs from numberMatched, numberMatched changes between
//     pages, or a page's numberReturned differs from what it holds:
//     *IncompleteError;
//   - the Content-Crs header names another CRS than the one asked for
//     (CRS84 when none was): *CRSError.
//
// Without numberMatched the fetch succeeds with a warning that completeness
// rests on the links alone. When the whole collection came in one page and
// the server sent an ETag or Last-Modified, FetchStats.Validators has them;
// a 304 to the first page, when the layer has validators, is
// FetchStats.NotModified and no page is handed over.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return stats, fmt.Errorf("%w: %w", ErrInvalidLayer, err)
	}
	want, err := layerCRS(layer)
	if err != nil {
		return stats, err
	}
	var next string
	switch {
	case firstPage == 0:
		u, err := FirstURL(layer)
		if err != nil {
			return stats, err
		}
		next = u.String()
	case firstPage > 0 && layer.ResumeURL != "":
		next = Restore(layer.ResumeURL, layer.URL)
	default:
		return stats, fmt.Errorf("%w: resuming at page %d needs the next link of page %d", ErrInvalidLayer, firstPage, firstPage-1)
	}
	declared, warning, err := c.declared(ctx, layer)
	if err != nil {
		return stats, err
	}
	stats.Declared = declared
	if warning != "" {
		stats.Warnings = append(stats.Warnings, warning)
		c.logger.Warn(warning, "url", redact.URL(layer.URL))
	}
	st := newFetchState(want)
	home := httpcall.OriginOf(layer.URL)
	empty := 0
	for page := firstPage; ; page++ {
		if page-firstPage >= c.maxPages {
			return stats, &PagingError{URL: redact.URL(next), Page: page, Reason: fmt.Sprintf("stopped after %d pages (the page limit)", c.maxPages)}
		}
		u, err := url.Parse(next)
		if err != nil {
			return stats, &PagingError{URL: redact.URL(next), Page: page, Reason: "the next link does not parse: " + redact.Text(err.Error())}
		}
		redacted := redact.URL(next)
		if o := breaker.Origin(u); o != home && !layer.CrossOriginRedirects {
			// Like a redirect: another origin gets neither this feed's
			// trust nor its breaker, unless the feed says redirects: follow.
			return stats, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("the link leads to another origin (%s) than the feed's (%s); set redirects: follow to allow it", o, home)}
		}
		if prev, ok := st.urls[next]; ok {
			return stats, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("the next link of page %d leads back to page %d (a link loop)", page-1, prev)}
		}
		st.urls[next] = page
		var res pageResult
		p := source.Page{Index: page, URL: redacted, StartIndex: stats.Features, Next: func() string { return res.next }}
		log := c.logger.With("origin", breaker.Origin(u), "page", page, "url", redacted)
		began := time.Now()
		req := request(layer, u, accept)
		if page == 0 {
			// Validators are stored only for a collection of one page (see
			// the end of Fetch): a 304 to its first page proves it whole.
			req.Conditional(layer.Validators.ETag, layer.Validators.LastModified)
		}
		err = c.calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
			res = pageResult{}
			return c.attempt(a, layer, p, st, handle, &res)
		})
		if errors.Is(err, httpcall.ErrNotModified) {
			stats.NotModified, stats.Validators = true, layer.Validators
			return stats, nil
		}
		if err != nil {
			if page == 0 && LinkExpired(err) {
				// The items link of a cached discovery may be stale.
				c.discovery.drop(layer.URL, layer.Collection)
			}
			var ie *IncompleteError
			var pe *PagingError
			var ce *CRSError
			var le *feature.LimitError
			switch {
			case errors.As(err, &ie):
				return stats, ie
			case errors.As(err, &pe):
				return stats, pe
			case errors.As(err, &ce):
				return stats, ce
			case errors.As(err, &le):
				return stats, fmt.Errorf("ogcapi: page %d (%s): %w", page, redacted, le)
			case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, breaker.ErrPastDeadline):
				return stats, &TimeoutError{URL: redacted, Page: page, Pages: stats.Pages, Features: stats.Features, Err: err}
			case res.handlerErr != nil && err == res.handlerErr:
				return stats, err
			}
			return stats, fmt.Errorf("ogcapi: page %d (%s): %w", page, redacted, err)
		}
		stats.Pages++
		stats.Features += res.features
		stats.Bytes += res.bytes
		log.Debug("page fetched", "features", res.features, "bytes", res.bytes, "number_matched", res.numberMatched,
			"next", res.next != "", "duration_ms", time.Since(began).Milliseconds())
		if res.warning != "" {
			stats.Warnings = append(stats.Warnings, fmt.Sprintf("page %d: %s", page, res.warning))
			log.Warn(res.warning)
		}
		total := st.resumed + stats.Features
		incomplete := func(reason string) error {
			return &IncompleteError{URL: redacted, Expected: stats.NumberMatched, Got: total, Reason: reason}
		}
		if res.numberMatched >= 0 {
			if stats.NumberMatched >= 0 && res.numberMatched != stats.NumberMatched {
				prev := stats.NumberMatched
				stats.NumberMatched = res.numberMatched
				return stats, incomplete(fmt.Sprintf("numberMatched changed from %d to %d between pages: the collection changed while it was paged, or the server's count is approximate", prev, res.numberMatched))
			}
			stats.NumberMatched = res.numberMatched
		}
		if res.numberReturned >= 0 && res.numberReturned != res.features {
			return stats, incomplete(fmt.Sprintf("page %d: numberReturned says %d features, the page held %d", page, res.numberReturned, res.features))
		}
		if res.next == "" {
			n := len(stats.Warnings)
			stats, err = c.done(stats, page, firstPage, total, &res, layer, incomplete)
			for _, w := range stats.Warnings[n:] {
				log.Warn(w)
			}
			return stats, err
		}
		if res.features == 0 {
			empty++
			if empty >= c.maxEmpty {
				return stats, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("%d empty pages in a row, each with a next link", empty)}
			}
		} else {
			empty = 0
		}
		if st.resumed == 0 && firstPage == 0 && stats.NumberMatched >= 0 && total > stats.NumberMatched {
			return stats, incomplete(fmt.Sprintf("page %d brings the total past numberMatched and still has a next link", page))
		}
		n, err := resolve(u, res.next)
		if err != nil {
			return stats, &PagingError{URL: redacted, Page: page, Reason: "its next link: " + err.Error()}
		}
		next = Restore(n, layer.URL) // the feed's API key, if the server left it out
	}
}

// done checks the fetch once the last page (no next link) is in.
func (c *Client) done(stats source.FetchStats, page, firstPage, total int, res *pageResult, layer source.Layer, incomplete func(string) error) (source.FetchStats, error) {
	limit := layer.PageSize
	if limit <= 0 {
		limit = DefaultLimit
	}
	switch {
	case stats.NumberMatched < 0:
		msg := "the server reports no numberMatched: completeness rests on its next links alone"
		if res.features >= limit {
			msg += fmt.Sprintf(" (and the last page, %d, was full: a server that omits the next link of a full page would look complete)", page)
		}
		stats.Warnings = append(stats.Warnings, msg)
	case firstPage > 0:
		// A resumed fetch does not know what the pages it did not fetch
		// held; the store's count at apply and its duplicate check stand
		// in (see feeds/postgis).
	case total < stats.NumberMatched:
		reason := fmt.Sprintf("page %d has no next link, but numberMatched promised more", page)
		if res.features >= limit {
			reason += fmt.Sprintf(": the page was full (%d features), so the server dropped the next link of a full page (pygeoapi#1594)", res.features)
		} else {
			reason += ": the server's count is approximate, or it dropped pages"
		}
		return stats, incomplete(reason)
	case total > stats.NumberMatched:
		return stats, incomplete("the pages held more features than numberMatched: the server's count is approximate, or the collection changed while it was paged")
	}
	if page == 0 && firstPage == 0 {
		stats.Validators = res.validators
	}
	stats.Completeness = CompletenessNumberMatched
	if stats.NumberMatched < 0 {
		stats.Completeness = CompletenessLinksOnly
	}
	return stats, nil
}
