package socrata

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Bounds of the documents around the rows, after decompression; a feed's
// lower limits.body_bytes bounds them too.
const (
	// MaxMetadataBytes bounds the dataset's metadata: its columns with
	// their descriptions and cached statistics, a few MB at most.
	MaxMetadataBytes int64 = 16 << 20
	// MaxCountBytes bounds the answer to count(*) (one row).
	MaxCountBytes int64 = 1 << 20
	// maxErrorBodyBytes bounds what is read of an error answer.
	maxErrorBodyBytes int64 = 64 << 10
)

// Option configures a Client.
type Option func(*Client)

// WithUserAgent sets the User-Agent header of every request; "" keeps
// the default.
func WithUserAgent(ua string) Option { return func(c *Client) { c.base.UserAgent(ua) } }

// WithClock replaces time.Now, for Retry-After dates in tests.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.base.SetClock(now) } }

// Client reads Socrata datasets, every request one logical call through
// the breaker of its portal (package httpcall), which paces it and waits
// out a 429's Retry-After. It is safe for concurrent use.
type Client struct {
	base httpcall.ClientBase
}

// NewClient returns a Client that calls portals through httpcall.BuildClient,
// which says what nil httpClient, breakers and logger mean.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	c := &Client{}
	return httpcall.BuildClient(c, &c.base, httpClient, breakers, logger, opts)
}

// Prepare returns layer as it is: the metadata is read at every Fetch,
// since its rowsUpdatedAt is what a cheap refresh compares.
func (c *Client) Prepare(_ context.Context, layer source.Layer) (source.Layer, []string, error) {
	return layer, nil, nil
}

// RestartReason says why a resumed poll starts over: pages by $offset
// shift when rows are added or removed while the poll is parked, so the
// staged pages cannot be trusted to meet the next ones.
func (c *Client) RestartReason(source.Layer) string {
	return "a socrata dataset is paged by $offset, and rows added or removed while the poll was parked shift its pages"
}

// PageURL names the request of page of layer (credentials redacted).
func (c *Client) PageURL(layer source.Layer, page int) string {
	u, err := url.Parse(layer.URL)
	if err != nil {
		return redact.URL(layer.URL)
	}
	size := pageSize(layer)
	u.RawQuery = pageQuery(size, page*size).Encode()
	return redact.URL(u.String())
}

// pageSize is layer's $limit.
func pageSize(layer source.Layer) int {
	if layer.PageSize <= 0 {
		return DefaultPageSize
	}
	return min(layer.PageSize, MaxPageSize)
}

// pageQuery is the query of the page at offset: every column and the
// system fields, ordered by :id, as the paging guide asks for a stable
// order.
func pageQuery(limit, offset int) url.Values {
	return url.Values{"$select": {":id, :created_at, :updated_at, *"}, "$order": {":id"},
		"$limit": {strconv.Itoa(limit)}, "$offset": {strconv.Itoa(offset)}}
}

// dataset is the URLs of a layer's dataset.
type dataset struct {
	id       string
	resource *url.URL // /resource/<4x4>.json
	views    *url.URL // /api/views/<4x4>.json
	redacted string
}

// datasetOf checks layer and builds its URLs.
func datasetOf(layer source.Layer) (*dataset, error) {
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", source.ErrInvalidLayer, redact.URL(layer.URL), err)
	}
	u, err := url.Parse(layer.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: url %s: %s", source.ErrInvalidLayer, redact.URL(layer.URL), httpcall.RedactErr(err, layer.URL))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: url %s: want an absolute http or https URL", source.ErrInvalidLayer, redact.URL(layer.URL))
	}
	id := settingsOf(layer).Dataset
	if id == "" {
		last := u.Path[strings.LastIndex(u.Path, "/")+1:]
		id = strings.TrimSuffix(last, ".json")
	}
	if !fourByFour.MatchString(id) {
		return nil, fmt.Errorf("%w: url %s names no dataset (a 4x4 like abcd-1234)", source.ErrInvalidLayer, redact.URL(layer.URL))
	}
	res := &url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, Path: "/resource/" + id + ".json"}
	views := &url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, Path: "/api/views/" + id + ".json"}
	return &dataset{id: id, resource: res, views: views, redacted: redact.URL(res.String())}, nil
}

// Fetch reads the dataset completely or not at all:
//
//  1. its metadata (/api/views/<4x4>.json): the columns, which type the
//     view (FetchStats.Declared) and name the geometry column, and
//     rowsUpdatedAt;
//  2. its count ($select=count(*), with max(:updated_at) when the
//     metadata has no rowsUpdatedAt), at most limits.poll_features; when
//     the update time, the count and the columns equal
//     Layer.Validators.Version, the dataset is unchanged since the last
//     applied snapshot: NotModified, no row read;
//  3. its rows in pages of page_size ($limit, $offset, $order=:id), each
//     streamed to handle, until a short page;
//  4. the proof: every :id once, as many as the count (the ids missing
//     are asked for and named), and the update time and the columns
//     unchanged at the end; one schema throughout (a column the metadata
//     does not list may not first come on a later page).
//
// A 429 (and its Retry-After) is paced by the portal's breaker; a SODA
// error body is a *ServerError with the portal's words; an answer that is
// not what SODA sends is a *ContentError (the feed's). Every error reads
// "socrata: …", once, and numbers pages from 0.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if firstPage != 0 {
		return stats, source.Named(Kind, fmt.Errorf("%w: a socrata read starts from the first page (RestartReason), not page %d", source.ErrInvalidLayer, firstPage))
	}
	ds, err := datasetOf(layer)
	if err != nil {
		return stats, source.Named(Kind, err)
	}
	r := &read{c: c, layer: layer, ds: ds, limits: layer.Limits.WithDefaults(), stats: &stats, pageSize: pageSize(layer),
		log: c.base.Logger.With("url", ds.redacted), seen: make(map[uint64]int32), seed: maphash.MakeSeed()}
	return stats, source.Named(Kind, r.run(ctx, handle))
}
