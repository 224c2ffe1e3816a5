package ogcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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

// WithUserAgent sets the User-Agent header of every request; "" keeps
// the default.
func WithUserAgent(ua string) Option { return func(c *Client) { c.base.UserAgent(ua) } }

// WithRequestTimeout sets the per-attempt timeout used when Layer.RequestTimeout is 0.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *Client) { c.base.Use(httpcall.WithRequestTimeout(d)) }
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
func WithClock(now func() time.Time) Option { return func(c *Client) { c.base.SetClock(now) } }

// Client fetches OGC API – Features collections. It is safe for concurrent use.
type Client struct {
	base     httpcall.ClientBase
	maxPages int
	maxEmpty int
	// discovery caches Prepare's discoveries (see WithDiscoveryTTL).
	discovery discoveryCache
	// declaredMemo keeps the collections' declared schemas (see declared).
	declaredMemo schema.Memo[string]
}

// NewClient returns a Client calling servers through httpcall.New(
// httpClient, breakers, logger); see wfs.NewClient for what nil means.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	c := &Client{maxPages: DefaultMaxPages, maxEmpty: DefaultMaxEmptyPages}
	return httpcall.BuildClient(c, &c.base, httpClient, breakers, logger, opts)
}

// FirstURL is the request of layer's first page: its items link (set by
// Prepare) exactly as the server wrote it, with limit, and crs and bbox
// when the layer has them. Nothing else is added: no format parameter (the
// link's type is the format; tipg answers f=json with an array of rows,
// not GeoJSON). Every later page is a next link as the server gave it.
func FirstURL(layer source.Layer) (*url.URL, error) {
	s := settingsOf(layer)
	if s.ItemsURL == "" {
		return nil, fmt.Errorf("%w: no items link (the layer was not prepared)", source.ErrInvalidLayer)
	}
	u, err := url.Parse(s.ItemsURL)
	if err != nil {
		return nil, fmt.Errorf("%w: items link: %s", source.ErrInvalidLayer, redact.Text(err.Error()))
	}
	limit := layer.PageSize
	if limit <= 0 {
		limit = DefaultLimit
	}
	set := [][2]string{{"limit", strconv.Itoa(limit)}}
	if s.CRS != "" && !isCRS84(s.CRS) {
		set = append(set, [2]string{"crs", s.CRS})
	}
	if len(s.BBox) == 4 {
		set = append(set, [2]string{"bbox", fmt.Sprintf("%s,%s,%s,%s", num(s.BBox[0]), num(s.BBox[1]), num(s.BBox[2]), num(s.BBox[3]))})
	} else if len(s.BBox) != 0 {
		return nil, fmt.Errorf("%w: bbox has %d numbers, want 4", source.ErrInvalidLayer, len(s.BBox))
	}
	u.RawQuery = setParams(u.RawQuery, set...)
	return u, nil
}

// setParams returns the query rawQuery with each name set to its value:
// the link's other parameters stay as the server wrote them, in its order,
// and a parameter of that name it had is replaced.
func setParams(rawQuery string, set ...[2]string) string {
	var out []string
	for _, part := range strings.Split(rawQuery, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil && slices.ContainsFunc(set, func(kv [2]string) bool { return kv[0] == n }) {
			continue
		}
		out = append(out, part)
	}
	for _, kv := range set {
		out = append(out, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
	}
	return strings.Join(out, "&")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// accept is the Accept header of items requests.
const accept = "application/geo+json, application/json;q=0.9, */*;q=0.1"

// Fetch fetches the collection, calling handle for each page while its
// body is open. A fetch at firstPage > 0 (a resumed poll, see
// RereadsPages) starts at layer.Resume.Link and counts layer.Resume.Features
// toward the total; without a link, or when the server answers it with a
// 4xx (an expired cursor), its error wraps source.ErrCannotResume. Each
// page's Next returns its next link as Storable keeps it.
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
//   - a feature comes twice, on two pages or in one (known by its id, or
//     without one by its content): *source.IncompleteError;
//   - the total differs from numberMatched, numberMatched changes between
//     pages or is a string that is not a count, or a page's numberReturned
//     differs from what it holds: *source.IncompleteError;
//   - no page reports numberMatched and the server answers none to
//     resulttype=hits either, unless the layer accepts the links alone
//     (Layer.LinksOnly; even then, not when the last page is full):
//     *source.IncompleteError;
//   - the Content-Crs header names another CRS than the one asked for
//     (CRS84 when none was): *CRSError.
//
// When the whole collection came in one page and the server sent an ETag
// or Last-Modified, FetchStats.Validators has them; a 304 to the first
// page, when the layer has validators, is FetchStats.NotModified and no
// page is handed over.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats, err := c.fetch(ctx, layer, firstPage, handle)
	return stats, source.Named(kind, err)
}

func (c *Client) fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	next, want, err := c.begin(ctx, layer, firstPage, &stats)
	if err != nil {
		return stats, err
	}
	st := newFetchState(want)
	empty := 0
	for page := firstPage; ; page++ {
		u, redacted, err := c.nextPage(layer, st, page, next)
		if err != nil {
			return stats, err
		}
		var res pageResult
		p := source.Page{Index: page, URL: redacted, StartIndex: stats.Features}
		log := c.base.Logger.With("origin", breaker.Origin(u), "page", page, "url", redacted)
		began := time.Now()
		req := request(layer, u, accept)
		if page == 0 {
			// Validators are stored only for a collection of one page (see
			// done): a 304 to its first page proves it whole.
			req.Conditional(layer.Validators.ETag, layer.Validators.LastModified)
		}
		err = c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
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
				c.discovery.drop(layer.URL, settingsOf(layer).Collection)
			}
			if page == firstPage && page > 0 && LinkExpired(err) {
				// A cursor the server has expired since the page was staged.
				return stats, fmt.Errorf("%w: %w", source.ErrCannotResume, c.pageFailed(ctx, err, page, redacted, stats, &res))
			}
			return stats, c.pageFailed(ctx, err, page, redacted, stats, &res)
		}
		log.Debug("page fetched", "features", res.features, "bytes", res.bytes, "number_matched", res.numberMatched,
			"next", res.next != "", "duration_ms", time.Since(began).Milliseconds())
		if err := c.count(&stats, &res, page, redacted, log); err != nil {
			return stats, err
		}
		if res.next == "" {
			n := len(stats.Warnings)
			stats, err = c.done(ctx, stats, page, &res, layer, redacted)
			for _, w := range stats.Warnings[n:] {
				log.Warn(w)
			}
			return stats, err
		}
		empty++
		if res.features > 0 {
			empty = 0
		}
		if empty >= c.maxEmpty {
			return stats, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("%d empty pages in a row, each with a next link", empty)}
		}
		if stats.NumberMatched >= 0 && stats.Features > stats.NumberMatched {
			return stats, &source.IncompleteError{URL: redacted, Expected: stats.NumberMatched, Got: stats.Features,
				Reason: fmt.Sprintf("page %d brings the total past numberMatched and still has a next link", page)}
		}
		n, err := resolve(u, res.next)
		if err != nil {
			return stats, &PagingError{URL: redacted, Page: page, Reason: "its next link: " + err.Error()}
		}
		next = Restore(n, layer.URL) // the feed's API key, if the server left it out
	}
}

// begin checks layer and returns the first page's URL and the CRS its
// items come in; it reads the collection's declared schema into stats.
func (c *Client) begin(ctx context.Context, layer source.Layer, firstPage int, stats *source.FetchStats) (string, wantCRS, error) {
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return "", wantCRS{}, fmt.Errorf("%w: %w", source.ErrInvalidLayer, err)
	}
	want, err := layerCRS(layer)
	if err != nil {
		return "", want, err
	}
	var start string
	switch {
	case firstPage < 0:
		return "", want, fmt.Errorf("%w: first page %d", source.ErrInvalidLayer, firstPage)
	case firstPage > 0 && layer.Resume.Link == "":
		return "", want, fmt.Errorf("%w: page %d: the page before it recorded no next link", source.ErrCannotResume, firstPage)
	case firstPage > 0:
		// The feed's API key, left out when the link was stored.
		start = Restore(layer.Resume.Link, layer.URL)
		stats.Features = layer.Resume.Features
	default:
		first, err := FirstURL(layer)
		if err != nil {
			return "", want, err
		}
		start = first.String()
	}
	declared, warning, err := c.declared(ctx, layer)
	if err != nil {
		return "", want, err
	}
	stats.Declared = declared
	if warning != "" {
		stats.Warnings = append(stats.Warnings, warning)
		c.base.Logger.Warn(warning, "url", redact.URL(layer.URL))
	}
	return start, want, nil
}

// nextPage checks the link of page before it is fetched: within the page
// limit, parsable, on the feed's origin (unless the feed follows
// redirects elsewhere), and not fetched before in this fetch.
func (c *Client) nextPage(layer source.Layer, st *fetchState, page int, next string) (*url.URL, string, error) {
	redacted := redact.URL(next)
	if page >= c.maxPages {
		return nil, redacted, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("stopped after %d pages (the page limit)", c.maxPages)}
	}
	u, err := url.Parse(next)
	if err != nil {
		return nil, redacted, &PagingError{URL: redacted, Page: page, Reason: "the next link does not parse: " + redact.Text(err.Error())}
	}
	if o, home := breaker.Origin(u), httpcall.OriginOf(layer.URL); o != home && !layer.CrossOriginRedirects {
		// Like a redirect: another origin gets neither this feed's
		// trust nor its breaker, unless the feed says redirects: follow.
		return nil, redacted, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("the link leads to another origin (%s) than the feed's (%s); set redirects: follow to allow it", o, home)}
	}
	if prev, ok := st.urls[next]; ok {
		return nil, redacted, &PagingError{URL: redacted, Page: page, Reason: fmt.Sprintf("the next link of page %d leads back to page %d (a link loop)", page-1, prev)}
	}
	st.urls[next] = page
	return u, redacted, nil
}

// count adds a fetched page to stats and checks its counts: numberMatched
// a count, the same on every page, numberReturned what the page held.
func (c *Client) count(stats *source.FetchStats, res *pageResult, page int, redacted string, log *slog.Logger) error {
	stats.Pages++
	stats.Features += res.features
	stats.Bytes += res.bytes
	if res.warning != "" {
		stats.Warnings = append(stats.Warnings, fmt.Sprintf("page %d: %s", page, res.warning))
		log.Warn(res.warning)
	}
	incomplete := func(reason string) error {
		return &source.IncompleteError{URL: redacted, Expected: stats.NumberMatched, Got: stats.Features, Reason: reason}
	}
	if res.matchedText != "" {
		// Taken for an absent count, it would let the links alone
		// call the collection whole.
		return incomplete(fmt.Sprintf("page %d: numberMatched is the string %s, not a count", page, res.matchedText))
	}
	if res.numberMatched >= 0 {
		if stats.NumberMatched >= 0 && res.numberMatched != stats.NumberMatched {
			prev := stats.NumberMatched
			stats.NumberMatched = res.numberMatched
			return incomplete(fmt.Sprintf("numberMatched changed from %d to %d between pages: the collection changed while it was paged, or the server's count is approximate", prev, res.numberMatched))
		}
		stats.NumberMatched = res.numberMatched
	}
	if res.numberReturned >= 0 && res.numberReturned != res.features {
		return incomplete(fmt.Sprintf("page %d: numberReturned says %d features, the page held %d", page, res.numberReturned, res.features))
	}
	return nil
}

// pageFailed is the error of a fetch whose page failed with err.
func (c *Client) pageFailed(ctx context.Context, err error, page int, redacted string, stats source.FetchStats, res *pageResult) error {
	var ie *source.IncompleteError
	var pe *PagingError
	var ce *CRSError
	var le *feature.LimitError
	switch {
	case errors.As(err, &ie):
		return ie
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &le):
		return fmt.Errorf("page %d (%s): %w", page, redacted, le)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, breaker.ErrPastDeadline):
		return &source.TimeoutError{Kind: kind, URL: redacted, Page: page, Pages: stats.Pages, Features: stats.Features, Err: err}
	case res.handlerErr != nil && err == res.handlerErr:
		return err
	}
	return fmt.Errorf("page %d (%s): %w", page, redacted, err)
}

// done checks the fetch once the last page (no next link) is in. Without
// numberMatched on any page it asks the server for the count
// (resulttype=hits) and checks the total against that; a server that
// answers none leaves the collection unproven, which only a layer that
// accepts its links alone (Layer.LinksOnly) applies, and not when the
// last page was full: that is what a server dropping the next link of a
// full page looks like (pygeoapi#1594).
func (c *Client) done(ctx context.Context, stats source.FetchStats, page int, res *pageResult, layer source.Layer, redacted string) (source.FetchStats, error) {
	limit := layer.PageSize
	if limit <= 0 {
		limit = DefaultLimit
	}
	total := stats.Features
	full := res.features >= limit
	completeness := CompletenessNumberMatched
	hits := false
	if stats.NumberMatched < 0 {
		n, err := c.hits(ctx, layer)
		if err != nil {
			return stats, err
		}
		stats.NumberMatched, hits = n, n >= 0
		if hits {
			stats.Warnings = append(stats.Warnings, fmt.Sprintf("the server's pages report no numberMatched: the total was checked against its resulttype=hits count, %d", n))
		}
	}
	incomplete := func(reason string) error {
		if hits {
			reason += " (numberMatched of its resulttype=hits answer; its pages reported none)"
		}
		return &source.IncompleteError{URL: redacted, Expected: stats.NumberMatched, Got: total, Reason: reason}
	}
	switch {
	case stats.NumberMatched < 0 && !settingsOf(layer).LinksOnly:
		return stats, incomplete(fmt.Sprintf("the server reports no numberMatched, on its pages nor to resulttype=hits: nothing proves the %d features the whole collection; "+
			"set completeness: links_only on the feed to accept its next links as the proof", total))
	case stats.NumberMatched < 0 && full:
		return stats, incomplete(fmt.Sprintf("page %d was full (%d features) and has no next link, and the server reports no numberMatched: "+
			"a server that drops the next link of a full page (pygeoapi#1594) looks the same; a page_size that does not divide the collection's size tells them apart", page, res.features))
	case stats.NumberMatched < 0:
		stats.Warnings = append(stats.Warnings, "the server reports no numberMatched: completeness rests on its next links alone (completeness: links_only)")
		completeness = CompletenessLinksOnly
	case total < stats.NumberMatched:
		reason := fmt.Sprintf("page %d has no next link, but numberMatched promised more", page)
		if full {
			reason += fmt.Sprintf(": the page was full (%d features), so the server dropped the next link of a full page (pygeoapi#1594)", res.features)
		} else {
			reason += ": the server's count is approximate, or it dropped pages"
		}
		return stats, incomplete(reason)
	case total > stats.NumberMatched:
		return stats, incomplete("the pages held more features than numberMatched: the server's count is approximate, or the collection changed while it was paged")
	}
	if page == 0 {
		stats.Validators = res.validators
	}
	stats.Completeness = completeness
	return stats, nil
}

// hits asks the server for the collection's count with resulttype=hits
// (an extension pygeoapi and others honour; WFS's resultType), for a
// collection whose pages report no numberMatched. It returns -1 when the
// answer has none: a server that ignores the parameter answers a page of
// one feature (limit=1). A failure of the origin fails the fetch like a
// page's; any other failure is no count.
func (c *Client) hits(ctx context.Context, layer source.Layer) (int, error) {
	u, err := FirstURL(layer)
	if err != nil {
		return -1, err
	}
	q := u.Query()
	q.Set("resulttype", "hits")
	q.Set("limit", "1")
	u.RawQuery = q.Encode()
	req := request(layer, u, accept)
	if req.BodyLimit <= 0 || req.BodyLimit > hitsDoc.bound {
		req.BodyLimit = hitsDoc.bound
	}
	n := -1
	err = c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		n = -1
		dec, done := c.scanItems(a, layer, hitsDoc.name, func(*feature.Feature) {})
		if done != nil {
			return *done
		}
		if dec.NumberMatchedText() == "" {
			n = dec.NumberMatched()
		}
		return breaker.Result{Outcome: breaker.Success}
	})
	var open *breaker.OpenError
	var retry *breaker.RetryError
	var throttled *breaker.ThrottledError
	switch {
	case err == nil:
		return n, nil
	case errors.As(err, &open), errors.As(err, &retry), errors.As(err, &throttled), errors.Is(err, breaker.ErrPastDeadline), ctx.Err() != nil:
		return -1, fmt.Errorf("asking for the count (%s): %w", redact.URL(u.String()), err)
	}
	c.base.Logger.Debug("no count from resulttype=hits", "url", redact.URL(u.String()), "error", err)
	return -1, nil
}
