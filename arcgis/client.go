package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// DefaultMaxRecordCount is the page size when a layer advertises no
// maxRecordCount (ArcGIS Server's own default).
const DefaultMaxRecordCount = 1000

// DefaultMaxPageSize bounds the page size of a feed that sets no page_size,
// whatever maxRecordCount the layer advertises: a page is one request of
// object ids (a POST body of about 8 bytes an id), one staging
// transaction, and a set of its object ids checked as its answers stream.
const DefaultMaxPageSize = 5000

// Bounds of the documents around the features, after decompression. Each
// is far above what an ArcGIS server sends and far below what would cost
// the process its memory; a feed's lower limits.body_bytes bounds them
// too. Exceeding one is a *DocumentLimitError naming the document.
const (
	// MaxDescriptionBytes bounds the layer's description (?f=json): its
	// fields, their domains, its drawing info. The largest seen are a few
	// MB (thousands of coded values).
	MaxDescriptionBytes int64 = 16 << 20
	// MaxCountBytes bounds the answer to returnCountOnly ({"count":N}).
	MaxCountBytes int64 = 1 << 20
	// MaxStatisticsBytes bounds the answer to outStatistics (one row of
	// two numbers).
	MaxStatisticsBytes int64 = 1 << 20
	// The id list's bound grows with the layer: IDListBaseBytes plus
	// IDListBytesPerID for every feature the count announced (an id is at
	// most 20 characters and a comma). Its ids are also bounded by the
	// count itself: the list is read as it streams and refused at the
	// first id past the count, and the count by limits.poll_features, so
	// the list held for the proof costs at most 8 bytes a counted feature
	// (160 MB at the default 20 million).
	IDListBaseBytes  int64 = 1 << 20
	IDListBytesPerID int64 = 32
)

// Option configures a Client.
type Option func(*Client)

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.callOpts = append(c.callOpts, httpcall.WithUserAgent(ua)) }
}

// WithClock replaces time.Now, for Retry-After dates in tests.
func WithClock(now func() time.Time) Option {
	return func(c *Client) { c.now = now }
}

// Client dumps ArcGIS REST feature layers (FeatureServer and MapServer),
// every request one logical call through the breaker of its origin
// (package httpcall). It is safe for concurrent use.
type Client struct {
	calls    *httpcall.Client
	callOpts []httpcall.Option
	logger   *slog.Logger
	now      func() time.Time
	// noted holds the layers' change-tracking warnings already said
	// (noteOnce).
	noted sync.Map
}

// NewClient returns a Client calling servers through httpcall.New(
// httpClient, breakers, logger); breakers nil makes every request a single
// attempt with no breaker.
func NewClient(httpClient *http.Client, breakers *breaker.Registry, logger *slog.Logger, opts ...Option) *Client {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{logger: logger, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	c.calls = httpcall.New(httpClient, breakers, logger, c.callOpts...)
	c.callOpts = nil
	return c
}

// Prepare returns layer as it is: the layer is probed at every Fetch,
// since its lastEditDate is what a cheap refresh compares.
func (c *Client) Prepare(_ context.Context, layer source.Layer) (source.Layer, []string, error) {
	return layer, nil, nil
}

// LayerInfo is what the probe (the layer's ?f=json) says.
type LayerInfo struct {
	Name           string           `json:"name"`
	Type           string           `json:"type"`
	GeometryType   string           `json:"geometryType"`
	HasZ           bool             `json:"hasZ"`
	HasM           bool             `json:"hasM"`
	ObjectIDField  string           `json:"objectIdField"`
	MaxRecordCount int              `json:"maxRecordCount"`
	Fields         []esrijson.Field `json:"fields"`
	// SupportsStatistics is the layer's top-level flag (older servers);
	// AdvancedQueryCapabilities has the newer one.
	SupportsStatistics        bool `json:"supportsStatistics"`
	SupportsPagination        bool `json:"supportsPagination"`
	AdvancedQueryCapabilities struct {
		SupportsPagination bool `json:"supportsPagination"`
		SupportsStatistics bool `json:"supportsStatistics"`
		SupportsOrderBy    bool `json:"supportsOrderBy"`
	} `json:"advancedQueryCapabilities"`
	Extent *struct {
		SpatialReference esrijson.SpatialReference `json:"spatialReference"`
	} `json:"extent"`
	SourceSpatialReference *esrijson.SpatialReference `json:"sourceSpatialReference"`
	EditingInfo            *struct {
		LastEditDate int64 `json:"lastEditDate"`
	} `json:"editingInfo"`
	// EditFieldsInfo names the layer's edit tracking fields; its
	// editDateField (epoch milliseconds, UTC) is what an incremental
	// refresh asks by (incremental.go).
	EditFieldsInfo *struct {
		EditDateField string `json:"editDateField"`
	} `json:"editFieldsInfo"`
	// Capabilities lists the layer's operations ("Query,ChangeTracking").
	Capabilities string `json:"capabilities"`
	// Layers is set when the URL is a service, not a layer.
	Layers []json.RawMessage `json:"layers"`
}

// SRID is the EPSG code of the layer's spatial reference (the extent's,
// which is what a query without outSR answers in), 0 when unknown.
func (li *LayerInfo) SRID() int {
	if li.Extent != nil {
		if s := li.Extent.SpatialReference.SRID(); s > 0 {
			return s
		}
	}
	if li.SourceSpatialReference != nil {
		return li.SourceSpatialReference.SRID()
	}
	return 0
}

// LastEditDate is editingInfo.lastEditDate, 0 when the layer has none.
func (li *LayerInfo) LastEditDate() int64 {
	if li.EditingInfo == nil {
		return 0
	}
	return li.EditingInfo.LastEditDate
}

// Pagination and Statistics say what the layer claims to support.
func (li *LayerInfo) Pagination() bool {
	return li.SupportsPagination || li.AdvancedQueryCapabilities.SupportsPagination
}

// Statistics says whether the layer claims outStatistics.
func (li *LayerInfo) Statistics() bool {
	return li.SupportsStatistics || li.AdvancedQueryCapabilities.SupportsStatistics
}

// check makes sense of a probe, or says why the URL is not a layer ingestd
// can dump.
func (li *LayerInfo) check() error {
	if len(li.Layers) > 0 || (li.Type == "" && li.Fields == nil) {
		return fmt.Errorf("%w: the url is not a layer (a service or folder?); end it with the layer's number, e.g. …/FeatureServer/0", ErrNotALayer)
	}
	if li.GeometryType == esrijson.TypeMultiPatch {
		return fmt.Errorf("%w: the layer's geometry type is esriGeometryMultiPatch (3D multipatch), which ingestd does not store", ErrNotALayer)
	}
	if li.ObjectIDField == "" {
		for _, f := range li.Fields {
			if f.Type == esrijson.FieldOID {
				li.ObjectIDField = f.Name
				break
			}
		}
	}
	if li.ObjectIDField == "" {
		return fmt.Errorf("%w: the layer has no objectIdField and no field of type esriFieldTypeOID, so a dump cannot be proven complete", ErrNotALayer)
	}
	if li.MaxRecordCount <= 0 {
		li.MaxRecordCount = DefaultMaxRecordCount
	}
	return nil
}

// dump is the state of one Fetch. The requests of a page are made by a
// goroutine of its own (see pageStream) while the page is handed over,
// but never while Fetch's goroutine reads this state.
type dump struct {
	c        *Client
	layer    source.Layer
	limits   feature.Limits // the layer's, defaults filled in
	info     LayerInfo
	query    *url.URL // the layer's /query
	redacted string   // the layer, redacted
	batch    int      // ids per request now (shrinks when the server caps)
	pageSize int      // ids per page
	idField  string   // the feature id: id_property, else the object id field
	stats    *source.FetchStats
	log      *slog.Logger
	capNoted bool
	attempts int          // attempts of feature queries so far, numbering them
	srids    map[int]bool // SRIDs the store said it knows
	// The fallbacks (windows, offsets): the object ids of the pages handed
	// over, and the bound on features read (the count and a margin).
	seen    map[int64]struct{}
	readMax int
	read    int
	// Incremental refresh: the layer's edit date field ("" when it has
	// none an incremental refresh can use) and the greatest edit date seen
	// in the features handed over (Unix ms).
	editField string
	maxEdit   int64
	// tracking is the layer's server generations (change tracking), nil
	// when its service does not track changes.
	tracking *trackingInfo
}

// Fetch dumps the layer completely or not at all:
//
//  1. probe the layer (?f=json): object id field, maxRecordCount, geometry
//     type, hasZ/hasM, spatial reference, fields, editingInfo.lastEditDate;
//  2. count the features (returnCountOnly), at most limits.poll_features;
//     when lastEditDate, the count and the fields (a digest) equal
//     Layer.Validators.Version, the layer is unchanged since the last
//     applied snapshot: NotModified, nothing fetched; otherwise the fields
//     are FetchStats.Declared, and the layer's spatial reference is checked
//     with Layer.KnownSRID;
//  3. fetch the id list (returnIdsOnly, POST) as it streams, at most as
//     many ids as the count, and sort it;
//  4. fetch the features by objectIds in pages of page_size (capped at
//     maxRecordCount), POST, each page streamed to handle as its answers
//     are decoded and checked against the ids asked; a request that fails
//     on the server's side (an error object wherever it sits, 5xx, a
//     timeout, after the breaker's retries) is halved down to one id, so
//     one broken feature is named and does not hide the rest; ids the
//     server leaves out of an answer (a cap below maxRecordCount) are
//     asked again in smaller requests;
//  5. prove it: every id of the list fetched exactly once, the list's size
//     equal to the count, and the lastEditDate unchanged at the end.
//
// Every document around the features has its own bound (Max*Bytes). When
// the id list fails on the server's side (it times out on huge layers),
// the layer is read in object-id windows from outStatistics (min/max), or
// else by resultOffset ordered by the object id; both are proven by the
// count and distinct ids, and stop once they read more than the count and
// a page.
//
// A resumed fetch (firstPage > 0) starts again from the first page:
// restaging a page replaces it, and the id list may have changed.
//
// Every error reads "arcgis: …", once (source.Named): this package's own
// texts and the layers below (httpcall, esrijson, the limits) name no kind.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats, err := c.fetch(ctx, layer, firstPage, handle)
	return stats, source.Named(Kind, err)
}

func (c *Client) fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return stats, fmt.Errorf("%s: %w", redact.URL(layer.URL), err)
	}
	base, err := url.Parse(strings.TrimRight(layer.URL, "/"))
	if err != nil {
		return stats, fmt.Errorf("bad layer url %s: %s", redact.URL(layer.URL), httpcall.RedactErr(err, layer.URL))
	}
	query := *base
	query.Path += "/query"
	d := &dump{c: c, layer: layer, limits: layer.Limits.WithDefaults(), query: &query, redacted: redact.URL(layer.URL),
		stats: &stats, log: c.logger.With("url", redact.URL(layer.URL)), srids: map[int]bool{}}

	if err := d.probe(ctx, base); err != nil {
		return stats, err
	}
	count, err := d.count(ctx)
	if err != nil {
		return stats, err
	}
	stats.NumberMatched = count
	// The layer's fields type its view (schema.Declared): a poll answered
	// "unchanged" keeps the stored schema, so the fields are part of the
	// version, for a server whose lastEditDate does not move on a schema
	// change.
	stats.Declared = d.info.Declared(settingsOf(layer).OutFields, d.idField)
	cheap := ""
	if led := d.info.LastEditDate(); led > 0 {
		cheap = "lastEditDate=" + strconv.FormatInt(led, 10) + ";count=" + strconv.Itoa(count) + ";fields=" + d.info.fieldsDigest()
	}
	prev := parseLayerVersion(layer.Validators.Version)
	d.editField = d.editDateField()
	due, reconcile := d.due(prev)
	// A reconciliation is due even for a layer whose version says it is
	// unchanged: an edit that moved no edit date may not have moved
	// lastEditDate either.
	if cheap != "" && prev.base == cheap && !due {
		stats.NotModified = true
		stats.Mode = source.ModeNotModified
		stats.Validators.Version = layer.Validators.Version
		d.log.Debug("layer unchanged", "version", cheap)
		return stats, nil
	}
	if err := d.checkSRID(ctx, d.info.SRID(), "layer's spatial reference"); err != nil {
		return stats, err
	}
	if err := d.readTracking(ctx, base); err != nil {
		return stats, err
	}
	stats.Mode, stats.Reconcile = source.ModeFull, reconcile
	if err := d.readFeatures(ctx, base, count, prev, d.plan(prev, due), handle); err != nil {
		return stats, err
	}
	if firstPage > 0 {
		// The pages before firstPage were fetched again, and replaced the
		// parked poll's; fewer pages than it staged would leave stale ones.
		if stats.Pages < firstPage {
			return stats, &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the parked poll staged %d pages but the layer now fills %d: it changed; poll again", firstPage, stats.Pages)}
		}
		stats.Pages -= firstPage
	}
	// The layer must not have been edited while it was read.
	before := d.info.LastEditDate()
	if before > 0 {
		if err := d.probe(ctx, base); err != nil {
			return stats, err
		}
		if after := d.info.LastEditDate(); after != before {
			return stats, &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the layer was edited during the dump (lastEditDate moved from %s to %s)", millis(before), millis(after))}
		}
	}
	stats.Validators.Version = d.nextVersion(cheap, prev, stats.Delta != nil).String()
	return stats, nil
}

// readFeatures reads the layer's features: by the id list, only the edits since
// prev's watermark (incremental) or all of them, or without the id list
// when it failed on the server's side.
func (d *dump) readFeatures(ctx context.Context, base *url.URL, count int, prev layerVersion, mode readMode, handle source.PageFunc) error {
	if mode != readAll && d.layer.DeltaPlanned != nil {
		d.layer.DeltaPlanned()
	}
	ids, err := d.idList(ctx, count)
	if err == nil && mode == readChanges {
		var used bool
		if used, err = d.fromLog(ctx, base, ids, prev, handle); err == nil && !used {
			mode = d.plan(layerVersion{base: prev.base, editField: prev.editField, watermark: prev.watermark}, false)
		} else {
			return d.annotate(ctx, base, err)
		}
	}
	switch {
	case err == nil && mode == readEdits:
		err = d.changes(ctx, ids, prev, handle)
	case err == nil:
		err = d.byIDs(ctx, ids, handle)
	case fallback(err):
		d.warn(fmt.Sprintf("the id list failed (%v); reading the layer without it", err))
		err = d.withoutIDs(ctx, count, handle)
	}
	return d.annotate(ctx, base, err)
}

// annotate names an edit during the dump as the likely cause of an
// incomplete one.
func (d *dump) annotate(ctx context.Context, base *url.URL, err error) error {
	var ie *source.IncompleteError
	if errors.As(err, &ie) && d.info.LastEditDate() > 0 {
		// An id that went missing is most often an edit: say so if it was.
		before := d.info.LastEditDate()
		if perr := d.probe(ctx, base); perr == nil && d.info.LastEditDate() != before {
			ie.Reason = fmt.Sprintf("the layer was edited during the dump (lastEditDate moved from %s to %s): %s", millis(before), millis(d.info.LastEditDate()), ie.Reason)
		}
	}
	return err
}

func millis(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// fallback reports whether a failed id list is worth reading the layer
// another way: the server failed or timed out on it, or refused
// returnIdsOnly as an invalid query (some proxies and old servers).
func fallback(err error) bool {
	var open *breaker.OpenError
	var thr *breaker.ThrottledError
	if errors.As(err, &open) || errors.As(err, &thr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !timedOutAttempt(err) {
		return false
	}
	var se *ServerError
	if errors.As(err, &se) {
		return se.ServerSide || se.Code == 400
	}
	return serverFailed(err)
}

// serverFailed reports whether err is the origin's failure after its
// retries: what halving a batch may get around.
func serverFailed(err error) bool {
	var open *breaker.OpenError
	var thr *breaker.ThrottledError
	if errors.As(err, &open) || errors.As(err, &thr) {
		return false
	}
	var re *breaker.RetryError
	var se *ServerError
	var he *httpcall.HTTPStatusError
	var te *httpcall.TransportError
	switch {
	case errors.As(err, &re):
		return re.Outcome == breaker.Failure
	case errors.As(err, &se):
		return se.ServerSide
	case errors.As(err, &he):
		return he.Status >= 500
	case errors.As(err, &te), timedOutAttempt(err):
		return true
	}
	return false
}

// timedOutAttempt reports whether err is an attempt's own timeout (the
// origin's), as httpcall words it, rather than the caller's deadline.
func timedOutAttempt(err error) bool {
	return err != nil && strings.Contains(err.Error(), "attempt timed out after")
}

func (d *dump) warn(msg string) {
	d.stats.Warnings = append(d.stats.Warnings, msg)
	d.log.Warn(msg)
}

// checkSRID asks the store (Layer.KnownSRID) whether it knows srid, once
// per srid and dump: a CRS it does not know is a *CRSError before
// anything of it is handed over, not PostGIS's "Invalid reserved SRID" at
// the apply. 0 (no wkid: the store takes 4326) and 4326 are not asked.
func (d *dump) checkSRID(ctx context.Context, srid int, where string) error {
	if srid <= 0 || srid == 4326 || d.layer.KnownSRID == nil || d.srids[srid] {
		return nil
	}
	known, err := d.layer.KnownSRID(ctx, srid)
	if err != nil {
		return fmt.Errorf("%s: checking srid %d: %w", d.redacted, srid, err)
	}
	if !known {
		return &CRSError{URL: d.redacted, SRID: srid, Where: where}
	}
	d.srids[srid] = true
	return nil
}

// form is the query form every request of the dump starts from.
func (d *dump) form() url.Values {
	where := settingsOf(d.layer).Where
	if where == "" {
		where = "1=1"
	}
	return url.Values{"f": {"json"}, "where": {where}}
}

func (d *dump) request(u *url.URL, form url.Values) httpcall.Request {
	return httpcall.Request{URL: u, Home: d.layer.URL, Headers: d.layer.Headers, Accept: "application/json, */*;q=0.1",
		Timeout: d.layer.RequestTimeout, BodyLimit: d.limits.BodyBytes, CrossOriginRedirects: d.layer.CrossOriginRedirects, Form: form}
}

// document is one of the small documents around the features, and its
// bound.
type document struct {
	name string
	max  int64
	// bound says how max was set, for the error.
	bound string
}

// bodyLimit is the bound of doc's body: its own, or the feed's
// limits.body_bytes when lower; own reports which.
func (d *dump) bodyLimit(doc document) (limit int64, own bool) {
	if doc.max < d.limits.BodyBytes {
		return doc.max, true
	}
	return d.limits.BodyBytes, false
}

// limitError is err as a *DocumentLimitError when it is doc's own bound
// that was exceeded.
func (d *dump) limitError(doc document, err error) error {
	limit, own := d.bodyLimit(doc)
	var le *feature.LimitError
	if own && errors.As(err, &le) && le.Name == "body_bytes" && le.Max == limit {
		return &DocumentLimitError{URL: d.redacted, Document: doc.name, Max: limit, Bound: doc.bound}
	}
	return err
}

// callJSON makes one logical call whose answer is a small JSON document,
// bounded by doc, decoded into out. An "error" member anywhere in it
// makes it an error object, judged as one that comes first (Classify).
func (d *dump) callJSON(ctx context.Context, doc document, u *url.URL, form url.Values, out any) error {
	req := d.request(u, form)
	req.BodyLimit, _ = d.bodyLimit(doc)
	err := d.c.calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		br, _, err := a.OpenBody(doc.name)
		if err != nil {
			return a.Verdict(renamed(httpcall.ReadFailure(a.Resp, err, a.Redacted), doc.name, a.Redacted))
		}
		if cls := Classify(a.Resp, br, a.Redacted, doc.name, d.c.now()); cls != nil {
			return a.Verdict(cls)
		}
		data, err := io.ReadAll(br)
		if err != nil {
			be := &BodyError{Op: doc.name, URL: a.Redacted, Err: err}
			if httpcall.FeedsFault(err, a.BodyErr()) {
				return breaker.Result{Outcome: breaker.Success, Err: be}
			}
			return a.OriginFailure(be)
		}
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 && string(e.Error) != "null" {
			return a.Verdict(judgeError(a.Resp.StatusCode, a.Redacted, doc.name, e.Error))
		}
		if err := json.Unmarshal(data, out); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: &BodyError{Op: doc.name, URL: a.Redacted,
				Err: fmt.Errorf("does not decode: %v", feature.Bound(err))}}
		}
		return breaker.Result{Outcome: breaker.Success}
	})
	if err != nil {
		if le := d.limitError(doc, err); le != err {
			return le
		}
		return fmt.Errorf("%s of %s: %w", doc.name, d.redacted, err)
	}
	return nil
}

// probe reads the layer's description.
func (d *dump) probe(ctx context.Context, base *url.URL) error {
	u := *base
	q := u.Query()
	q.Set("f", "json")
	u.RawQuery = q.Encode()
	var info LayerInfo
	doc := document{name: "layer description", max: MaxDescriptionBytes, bound: "the bound of a layer's description"}
	if err := d.callJSON(ctx, doc, &u, nil, &info); err != nil {
		return err
	}
	if err := info.check(); err != nil {
		return fmt.Errorf("%s: %w", d.redacted, err)
	}
	d.info = info
	d.idField = d.layer.IDProperty
	if d.idField == "" {
		d.idField = info.ObjectIDField
	}
	d.pageSize = info.MaxRecordCount
	if ps := d.layer.PageSize; ps > 0 && ps < d.pageSize {
		d.pageSize = ps
	} else if ps == 0 && d.pageSize > DefaultMaxPageSize {
		// A server that advertises 100,000 must not make that a request
		// (and a staging transaction) by default.
		d.pageSize = DefaultMaxPageSize
	}
	if d.batch == 0 || d.batch > d.pageSize {
		d.batch = d.pageSize
	}
	return nil
}

// count reads the layer's count, at most limits.poll_features: the count
// bounds the id list, and a layer larger than a poll may hold is refused
// before anything is read.
func (d *dump) count(ctx context.Context) (int, error) {
	form := d.form()
	form.Set("returnCountOnly", "true")
	var res struct {
		Count *int `json:"count"`
	}
	doc := document{name: "count", max: MaxCountBytes, bound: "the bound of a count's answer"}
	if err := d.callJSON(ctx, doc, d.query, form, &res); err != nil {
		return 0, err
	}
	if res.Count == nil || *res.Count < 0 {
		return 0, fmt.Errorf("count of %s: the answer has no count", d.redacted)
	}
	if n := int64(*res.Count); n > d.limits.PollFeatures {
		return 0, &feature.LimitError{Name: "poll_features", Max: d.limits.PollFeatures,
			Where: fmt.Sprintf("the count of %s is %d features", d.redacted, n)}
	}
	return *res.Count, nil
}

// outFields is the query's outFields: the feed's, with the object id and
// the id property added when it lists fields.
func (d *dump) outFields() string {
	of := settingsOf(d.layer).OutFields
	if of == "" || of == "*" {
		return "*"
	}
	fields := strings.Split(of, ",")
	for _, need := range []string{d.info.ObjectIDField, d.idField} {
		if !slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), need) }) {
			fields = append(fields, need)
		}
	}
	return strings.Join(fields, ",")
}

// featureForm is the form of a query for features.
func (d *dump) featureForm() url.Values {
	form := d.form()
	form.Set("outFields", d.outFields())
	form.Set("returnGeometry", "true")
	form.Set("returnTrueCurves", "false")
	if d.info.HasZ {
		form.Set("returnZ", "true")
	}
	if d.info.HasM {
		form.Set("returnM", "true")
	}
	return form
}
