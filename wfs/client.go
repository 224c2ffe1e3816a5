package wfs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/encoding/gml"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
	"github.com/ingestd/ingestd/internal/pageids"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Client defaults.
const (
	// DefaultMaxBodyBytes bounds one response body (decompressed) of a layer
	// whose Limits.BodyBytes is 0.
	DefaultMaxBodyBytes = httpcall.DefaultMaxBodyBytes
	// DefaultRequestTimeout bounds one attempt of one page request.
	DefaultRequestTimeout = httpcall.DefaultRequestTimeout
	// DefaultMaxPages stops a paging loop that never ends, such as a server
	// ignoring startIndex on features without ids or properties to compare.
	DefaultMaxPages = 100_000
)

// Option configures a Client.
type Option func(*Client)

// WithMaxBodyBytes bounds each response body (decompressed) of layers whose
// Limits.BodyBytes is 0; a larger body fails the call with a *LimitError
// (body_bytes), the feed's error.
func WithMaxBodyBytes(n int64) Option {
	return func(c *Client) { c.base.Use(httpcall.WithMaxBodyBytes(n)) }
}

// WithRequestTimeout sets the per-attempt timeout used when Layer.RequestTimeout is 0.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *Client) { c.base.Use(httpcall.WithRequestTimeout(d)) }
}

// WithDuplicateIDCheck makes Fetch remember every feature id of a fetch, so
// that the first id to come back on a second page fails it. Without it,
// Fetch remembers every id up to pageids.ExactIDs and a fixed sample of the
// ids after (one in pageids.Sample), which bounds its memory on huge layers
// and still stops an unstable server soon (see pageids.Set). ingestd's store makes the exact
// check over the staged pages at apply, so the daemon leaves this off.
func WithDuplicateIDCheck() Option { return func(c *Client) { c.checkIDs = true } }

// WithMaxPages bounds the pages of one Fetch.
func WithMaxPages(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxPages = n
		}
	}
}

// WithUserAgent sets the User-Agent header of every request; "" keeps
// the default.
func WithUserAgent(ua string) Option { return func(c *Client) { c.base.UserAgent(ua) } }

// WithClock replaces time.Now, for Retry-After dates in tests.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.base.SetClock(now) } }

// Client fetches layers page by page, each page one logical call through the
// breaker of its origin. It is safe for concurrent use.
type Client struct {
	base        httpcall.ClientBase
	maxPages    int
	checkIDs    bool
	negotiation negotiationCache // Prepare's results, per layer
	// declaredMemo: each layer's last DescribeFeatureType (typed layers).
	declaredMemo schema.Memo[negotiationKey]
}

// NewClient returns a Client that calls servers through httpcall.New(
// httpClient, breakers, logger): httpClient nil means http.DefaultClient,
// used through a copy whose redirect policy is per layer (see
// Layer.CrossOriginRedirects and httpcall.MaxRedirects); breakers nil makes
// every page a single attempt with no breaker (for one-off fetches; the
// daemon always passes its registry); logger nil discards.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	c := &Client{maxPages: DefaultMaxPages}
	return httpcall.BuildClient(c, &c.base, httpClient, breakers, logger, opts)
}

// pageResult is what one successful attempt learned about its page.
type pageResult struct {
	features       int
	bytes          int64
	numberMatched  int
	numberReturned int
	firstKey       string // identity of the first feature, "" if none
	handlerErr     error  // the handler's own error, returned as is
	warning        string // an oddity of the response worth a warning
	// etag and lastModified are the response's validators ("": none).
	etag, lastModified string

	// Set by Fetch before each attempt: the ids of the fetch so far and the
	// number of features of the pages before.
	ids     *pageids.Set
	fetched int
	// typer types GML's text values by the declared schema (nil: none).
	typer func(dst []byte, name string, text []byte) ([]byte, bool)
}

// Fetch fetches layer from page firstPage on (0, or the page to resume at),
// calling handle for each page while its body is open.
//
// Paging continues while a page returned exactly PageSize features and the
// server's numberMatched, when known, says there are more. It stops on a
// short page. A page larger than PageSize means the server ignored the page
// size: the fetch stops there with a warning. A page that starts with the
// same feature (id, or properties when there is no id) as the page before it
// means the server ignores startIndex: Fetch returns ErrStartIndexIgnored
// before handing that page to handle.
//
// Complete or nothing: when the server states numberMatched, the features
// delivered must add up to it, or Fetch returns *source.IncompleteError — for a
// short page while more were promised, a total above or below the promise
// (a single, unpaged request included: servers cap responses silently),
// numberMatched changing between pages, or a page whose numberReturned does
// not match its body. A feature id seen on two pages of one fetch means the
// server's paging order is unstable (features were skipped as others were
// repeated): *source.IncompleteError too, returned from the FeatureReader as the
// duplicate is read. This catches a server that pages in a random order
// without numberMatched and never sends a short page, which would otherwise
// page until the deadline. Ids are tracked as 64-bit hashes, about 16-20
// bytes per feature, all of them with WithDuplicateIDCheck and otherwise
// the first pageids.ExactIDs and a sample after (see pageids.Set); two
// different ids colliding is a chance of n²/2⁶⁵ (3·10⁻⁸ for a million features) and would
// at worst fail one poll, which the next poll, under a fresh random seed,
// retries. A fetch resumed at firstPage > 0 checks ids from that page on.
//
// The layer's Headers go with every request to its origin, its
// Limits.BodyBytes bounds every body (decompressed), and a redirect to
// another origin is refused unless CrossOriginRedirects (see httpcall.Client.Call).
//
// The error is an *source.IncompleteError as is (it names the URL); a
// *source.TimeoutError ("poll timeout after N pages") when ctx's deadline passed or
// the origin's pacing would pass it; the handler's own error as it returned
// it; otherwise an error naming the page and (redacted) URL, wrapping
// *breaker.OpenError, *breaker.RetryError, *breaker.ThrottledError,
// *HTTPStatusError, *ows.ExceptionReportError, *BodyError (which may wrap a
// *LimitError), *RedirectError, *TransportError or a sentinel of this
// package. FetchStats covers the pages fetched before the error.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	r := &fetchRun{c: c, ctx: ctx, layer: layer, firstPage: firstPage, handle: handle,
		stats: source.FetchStats{NumberMatched: -1}, ids: pageids.New(c.checkIDs)}
	// Every error of this package names the kind once: "wfs: …" (the
	// handler's own errors are its own).
	if err := r.prepare(); err != nil {
		return r.stats, source.Named(Kind, err)
	}
	for page := firstPage; ; page++ {
		if page-firstPage >= c.maxPages {
			return r.stats, fmt.Errorf("%s: %s: stopped after %d pages (the page limit)", Kind, RedactURL(layer.URL), c.maxPages)
		}
		if done, err := r.page(page); done || err != nil {
			return r.stats, err
		}
	}
}

// fetchRun is one Fetch: the layer, the pages' running totals and the
// checks that span pages (ids, a server ignoring startIndex).
type fetchRun struct {
	c         *Client
	ctx       context.Context
	layer     source.Layer
	firstPage int
	handle    source.PageFunc
	stats     source.FetchStats
	typer     func(dst []byte, name string, text []byte) ([]byte, bool)
	ids       *pageids.Set
	prevKey   string // the first feature's key of the page before
}

// prepare checks the layer and reads its declared schema.
func (r *fetchRun) prepare() error {
	if err := Validate(r.layer); err != nil {
		return err
	}
	if err := checkHeaders(r.layer); err != nil {
		return err
	}
	if r.firstPage < 0 || (!paged(r.layer) && r.firstPage != 0) {
		return fmt.Errorf("%w: first page %d of a layer with %s", source.ErrInvalidLayer, r.firstPage, pagingDesc(r.layer))
	}
	declared, warning, err := r.c.declared(r.ctx, r.layer)
	if err != nil {
		return err
	}
	if warning != "" {
		r.stats.Warnings = append(r.stats.Warnings, warning)
		r.c.base.Logger.Warn(warning, "url", RedactURL(r.layer.URL), "type_name", settingsOf(r.layer).TypeName)
	}
	r.typer = schema.Typer(declared)
	r.stats.Declared = declared
	r.stats.TypedText = r.typer != nil && !IsGeoJSONFormat(settingsOf(r.layer).OutputFormat)
	return nil
}

// page fetches page and judges it; done says it was the last one (or the
// document was not modified).
func (r *fetchRun) page(page int) (done bool, err error) {
	startIndex := page * r.layer.PageSize
	u, err := RequestURL(r.layer, startIndex)
	if err != nil {
		return true, source.Named(Kind, err)
	}
	p := source.Page{Index: page, URL: RedactURL(u.String()), StartIndex: startIndex}
	log := r.c.base.Logger.With("origin", breaker.Origin(u), "page", page, "url", p.URL)
	check := func(key string) error {
		if page > r.firstPage && key != "" && key == r.prevKey {
			return ErrStartIndexIgnored
		}
		return nil
	}
	var res pageResult
	began := time.Now()
	req := request(r.layer, u, acceptHeader(r.layer))
	if !paged(r.layer) {
		req.Conditional(r.layer.Validators.ETag, r.layer.Validators.LastModified)
	}
	err = r.c.base.Calls.Call(r.ctx, req, func(a *httpcall.Attempt) breaker.Result {
		r.ids.Begin(page) // a retry re-reads its page's ids
		res = pageResult{ids: r.ids, fetched: r.stats.Features, typer: r.typer}
		return r.c.attempt(a, r.layer, p, check, r.handle, &res)
	})
	if errors.Is(err, httpcall.ErrNotModified) {
		// The server has the document of the last applied snapshot:
		// nothing to fetch, nothing handed to handle.
		log.Debug("not modified", "duration_ms", time.Since(began).Milliseconds())
		r.stats.NotModified = true
		r.stats.Validators = r.layer.Validators
		return true, nil
	}
	if err != nil {
		return true, r.callError(err, p, &res)
	}
	log.Debug("page fetched", "features", res.features, "bytes", res.bytes,
		"number_matched", res.numberMatched, "duration_ms", time.Since(began).Milliseconds())
	return r.judge(p, &res, log)
}

// callError is the error of a page's failed call, as Fetch returns it.
func (r *fetchRun) callError(err error, p source.Page, res *pageResult) error {
	var ie *source.IncompleteError
	var le *feature.LimitError
	switch {
	case errors.As(err, &ie):
		return ie
	case errors.As(err, &le):
		// The limit is the whole story; where the decoder was when the
		// bytes ran out is noise.
		return fmt.Errorf("%s: page %d (%s): %w", Kind, p.Index, p.URL, le)
	case errors.Is(r.ctx.Err(), context.DeadlineExceeded) || errors.Is(err, breaker.ErrPastDeadline):
		// Whatever the last wait or read said (a rate limiter, a
		// cancelled COPY), the cause is the caller's deadline.
		return &source.TimeoutError{Kind: Kind, URL: p.URL, Page: p.Index, Pages: r.stats.Pages, Features: r.stats.Features, Err: err}
	case res.handlerErr != nil && err == res.handlerErr:
		return err
	}
	return fmt.Errorf("%s: page %d (%s): %w", Kind, p.Index, p.URL, err)
}

// judge adds a fetched page to the totals, checks its counts and decides
// whether it was the last.
func (r *fetchRun) judge(p source.Page, res *pageResult, log *slog.Logger) (done bool, err error) {
	st, page := &r.stats, p.Index
	st.Pages++
	st.Features += res.features
	st.Bytes += res.bytes
	incomplete := func(reason string) error {
		return &source.IncompleteError{Kind: Kind, URL: p.URL, Expected: st.NumberMatched, Got: p.StartIndex + res.features, Reason: reason}
	}
	if res.numberMatched >= 0 {
		if st.NumberMatched >= 0 && res.numberMatched != st.NumberMatched {
			prev := st.NumberMatched
			st.NumberMatched = res.numberMatched
			return true, incomplete(fmt.Sprintf("numberMatched changed from %d to %d between pages: the layer changed while it was paged", prev, res.numberMatched))
		}
		st.NumberMatched = res.numberMatched
	}
	warn := func(msg string) {
		st.Warnings = append(st.Warnings, fmt.Sprintf("page %d: %s", page, msg))
		log.Warn(msg)
	}
	if res.warning != "" {
		warn(res.warning)
	}
	if res.numberReturned >= 0 && res.numberReturned != res.features {
		return true, incomplete(fmt.Sprintf("page %d: numberReturned says %d features, the body held %d", page, res.numberReturned, res.features))
	}
	total := p.StartIndex + res.features
	var last bool
	switch {
	case !paged(r.layer):
		// A layer of one request is one document, whose validators the
		// next poll may send back (a paged layer's are per page).
		st.Validators = source.Validators{ETag: res.etag, LastModified: res.lastModified}
		if st.NumberMatched >= 0 && total != st.NumberMatched {
			return true, incomplete(fmt.Sprintf("one request returned %d of the %d features numberMatched promised: the server caps its responses (GeoServer maxFeatures, MapServer wfs_maxfeatures); set a page size", total, st.NumberMatched))
		}
		return true, nil
	case res.features > r.layer.PageSize:
		warn(fmt.Sprintf("server ignored the page size: asked for %d features, got %d; not paging further", r.layer.PageSize, res.features))
		last = true
	case res.features < r.layer.PageSize, st.NumberMatched >= 0 && total >= st.NumberMatched:
		last = true
	}
	if !last {
		r.prevKey = res.firstKey
		return false, nil
	}
	if st.NumberMatched >= 0 && total != st.NumberMatched {
		return true, incomplete(fmt.Sprintf("page %d ends the result at %d features, numberMatched promised %d", page, total, st.NumberMatched))
	}
	return true, nil
}

func pagingDesc(l source.Layer) string {
	if paged(l) {
		return "pages of " + strconv.Itoa(l.PageSize)
	}
	return "one request"
}

// attempt is one attempt of one page: GET, classify, stream into handle.
// ctx is the call's context as the breaker passes it; its end is the
// caller's doing (Ignored), while the attempt's own timeout is the origin's
// (Failure). u is the page's request, or the target of a followed
// cross-origin redirect.
func (c *Client) attempt(a *httpcall.Attempt, layer source.Layer, p source.Page, check func(string) error, handle source.PageFunc, res *pageResult) breaker.Result {
	ctx, resp, redacted := a.CallCtx, a.Resp, a.Redacted
	br, note, err := a.OpenBody("response body")
	if err != nil {
		r := httpcall.ReadFailure(resp, err, redacted)
		r.Err.(*httpcall.BodyError).Page = p.Index
		return a.Verdict(r)
	}
	res.warning = note
	kind, cls := classify(resp, br, redacted, c.base.Now())
	if cls != nil {
		var be *httpcall.BodyError
		if errors.As(cls.Err, &be) {
			be.Page = p.Index
		}
		return a.Verdict(cls)
	}

	var dec featureDecoder
	switch kind {
	case kindJSON:
		dec = geojson.NewReader(br, feature.WithIDProperty(layer.IDProperty), feature.WithSRID(layer.SRID), feature.WithLimits(layer.Limits.WithDefaults()))
	case kindGML:
		dec = gml.NewReader(br, feature.WithIDProperty(layer.IDProperty), feature.WithSRID(layer.SRID), feature.WithLimits(layer.Limits.WithDefaults()),
			feature.WithTypeValue(res.typer))
	default:
		// classify lets only decodable kinds through.
		return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: redacted, Page: p.Index, Err: expected.Unrecognized("")}}
	}
	fr := &pageReader{dec: dec, url: redacted, page: p.Index, ids: res.ids, fetched: res.fetched, sortBy: settingsOf(layer).SortBy,
		idProperty: layer.IDProperty, body: a}

	if r, failed := fr.readFirst(a, check, res); failed {
		return r
	}

	if herr := handle(ctx, p, fr); herr != nil {
		var ie *source.IncompleteError
		if errors.As(herr, &ie) {
			return breaker.Result{Outcome: breaker.Success, Err: ie}
		}
		if httpcall.IsBodyError(herr) {
			return a.StreamFailed(herr)
		}
		res.handlerErr = herr
		return breaker.Result{Outcome: breaker.Ignored, Err: herr}
	}
	// The handler may have stopped early or swallowed an error; the page
	// counts only if the body really ended where the document does.
	if f, err := fr.Next(); err != io.EOF {
		var ie *source.IncompleteError
		if errors.As(err, &ie) {
			return breaker.Result{Outcome: breaker.Success, Err: ie}
		}
		if err == nil {
			err = fmt.Errorf("%s: page %d (%s): handler returned before reading feature %d (id %q)", Kind, p.Index, redacted, fr.n-1, f.ID)
			res.handlerErr = err
			return breaker.Result{Outcome: breaker.Ignored, Err: err}
		}
		return a.StreamFailed(err)
	}
	res.features = fr.n
	res.bytes = a.BodyBytes()
	res.etag, res.lastModified = httpcall.ResponseValidators(resp)
	res.numberMatched = dec.NumberMatched()
	res.numberReturned = dec.NumberReturned()
	return breaker.Result{Outcome: breaker.Success}
}

// readFirst reads the page's first feature before the handler sees
// anything, so that a server ignoring startIndex is caught before its page
// is staged again (and before its first id counts as a duplicate); failed
// says the attempt ends with r.
func (fr *pageReader) readFirst(a *httpcall.Attempt, check func(string) error, res *pageResult) (r breaker.Result, failed bool) {
	first, err := fr.read()
	switch {
	case err == io.EOF:
	case err != nil:
		return a.StreamFailed(err), true
	default:
		res.firstKey = featureKey(first)
		if err := check(res.firstKey); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: fmt.Errorf("%w: page %d (%s) starts with the same feature as the page before", err, fr.page, fr.url)}, true
		}
		if err := fr.checkID(first); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: err}, true
		}
		fr.pending = first
	}
	return breaker.Result{}, false
}

// featureDecoder is what a body decoder offers the client: geojson.Reader
// and gml.Reader, picked by sniffing the body.
type featureDecoder interface {
	feature.FeatureReader
	NumberMatched() int
	NumberReturned() int
}

func acceptHeader(l source.Layer) string {
	if f := settingsOf(l).OutputFormat; f != "" && f != "json" && f != DefaultOutputFormat {
		return f + ", */*;q=0.1"
	}
	return "application/geo+json, application/json;q=0.9, */*;q=0.1"
}

// featureKey identifies a feature for the "startIndex ignored" check: its id,
// else a hash of its properties; "" when it has neither.
func featureKey(f *feature.Feature) string {
	if f.ID != "" {
		return "id:" + f.ID
	}
	if len(f.Properties) == 0 {
		return ""
	}
	h := fnv.New64a()
	h.Write(f.Properties)
	return "props:" + strconv.FormatUint(h.Sum64(), 16)
}

// pageReader is the FeatureReader handed to a PageFunc: it replays a feature
// read ahead, counts features, and wraps every error in *BodyError so that
// Fetch can recognise it through the handler's wrapping.
type pageReader struct {
	dec     featureDecoder
	url     string
	page    int
	pending *feature.Feature
	n       int
	err     error
	ids     *pageids.Set // nil: no duplicate check
	fetched int          // features of the fetch's pages before this one
	sortBy  string       // the layer's SortBy, for the advice of a duplicate
	// idProperty is the layer's IDProperty, for the advice of a duplicate.
	idProperty string
	body       *httpcall.Attempt // counts the body's bytes
}

// BodyBytes returns the page's body bytes (decompressed) read so far, so
// that a PageFunc can bound a poll's bytes as they arrive rather than at
// the end of a page that may never end.
func (r *pageReader) BodyBytes() int64 { return r.body.BodyBytes() }

func (r *pageReader) Next() (*feature.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	if f := r.pending; f != nil {
		r.pending = nil
		return f, nil
	}
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	if err := r.checkID(f); err != nil {
		return nil, err
	}
	return f, nil
}

// checkID fails the page when f's id was delivered on an earlier page, or
// earlier in this one.
func (r *pageReader) checkID(f *feature.Feature) error {
	if r.ids == nil || f.ID == "" {
		return nil
	}
	if prev, dup := r.ids.Add(f.ID); dup {
		// Got counts the distinct features before the duplicate.
		reason := fmt.Sprintf("server paging is unstable: id %q seen on pages %d and %d", errtext.Head(f.ID, 200), prev, r.page)
		if prev == r.page {
			// Kept once, the layer would look whole with a feature missing.
			reason = fmt.Sprintf("id %q comes twice in page %d: the ids are not unique", errtext.Head(f.ID, 200), r.page)
			if r.idProperty != "" {
				reason += " (id_property " + r.idProperty + " does not identify features)"
			}
		} else if r.sortBy == "" {
			reason += "; set sort_by to a unique property so that the server pages in a stable order"
		} else {
			reason += " (or the id is not unique)"
		}
		r.err = &source.IncompleteError{Kind: Kind, URL: r.url, Expected: -1, Got: r.fetched + r.n - 1, Reason: reason}
		return r.err
	}
	return nil
}

// read returns the decoder's next feature, counted, its errors wrapped.
func (r *pageReader) read() (*feature.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	f, err := r.dec.Next()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		r.err = &httpcall.BodyError{URL: r.url, Page: r.page, Err: err}
		return nil, r.err
	}
	r.n++
	return f, nil
}

// request is the logical request of layer for u: the layer's headers (for
// its own origin), timeout, body limit and redirect policy.
func request(layer source.Layer, u *url.URL, accept string) httpcall.Request {
	return httpcall.Request{URL: u, Home: layer.URL, Headers: layer.Headers, Accept: accept,
		Timeout: layer.RequestTimeout, BodyLimit: layer.Limits.BodyBytes, CrossOriginRedirects: layer.CrossOriginRedirects}
}

// RereadsPages reports that a paged layer's page n is asked for by its
// startIndex alone, whichever page a fetch started at: a resumed poll may
// read the page before its checkpoint again to prove what it staged
// (feeds.PageRereader). An unpaged layer is one request, never resumed.
func (c *Client) RereadsPages(layer source.Layer) bool { return paged(layer) }
