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
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/esrijson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// DefaultMaxRecordCount is the page size when a layer advertises no
// maxRecordCount (ArcGIS Server's own default).
const DefaultMaxRecordCount = 1000

// DefaultMaxPageSize bounds the page size of a feed that sets no page_size,
// whatever maxRecordCount the layer advertises: a page (its features
// decoded) is held in memory until its ids are checked.
const DefaultMaxPageSize = 5000

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

// dump is the state of one Fetch.
type dump struct {
	c        *Client
	layer    source.Layer
	info     LayerInfo
	query    *url.URL // the layer's /query
	redacted string   // the layer, redacted
	batch    int      // ids per request now (shrinks when the server caps)
	pageSize int      // ids per page
	idField  string   // the feature id: id_property, else the object id field
	stats    *source.FetchStats
	log      *slog.Logger
	seen     map[int64]struct{}
	capNoted bool
}

// Fetch dumps the layer completely or not at all:
//
//  1. probe the layer (?f=json): object id field, maxRecordCount, geometry
//     type, hasZ/hasM, spatial reference, fields, editingInfo.lastEditDate;
//  2. count the features (returnCountOnly); when lastEditDate, the count
//     and the fields (a digest) equal Layer.Validators.Version, the layer
//     is unchanged since the last applied snapshot: NotModified, nothing
//     fetched; otherwise the fields are FetchStats.Declared;
//  3. fetch the id list (returnIdsOnly, POST) and sort it;
//  4. fetch the features by objectIds in pages of page_size (capped at
//     maxRecordCount), POST; a request that fails on the server's side
//     (an error body, 5xx, a timeout, after the breaker's retries) is
//     halved down to one id, so one broken feature is named and does not
//     hide the rest; ids the server leaves out of an answer (a cap below
//     maxRecordCount) are asked again in smaller requests;
//  5. prove it: every id of the list fetched exactly once, the list's size
//     equal to the count, and the lastEditDate unchanged at the end.
//
// When the id list fails on the server's side (it times out on huge
// layers), the layer is read in object-id windows from outStatistics
// (min/max), or else by resultOffset ordered by the object id; both are
// proven by the count and distinct ids.
//
// A resumed fetch (firstPage > 0) starts again from the first page:
// restaging a page replaces it, and the id list may have changed.
func (c *Client) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	stats := source.FetchStats{NumberMatched: -1}
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return stats, fmt.Errorf("arcgis: %s: %w", redact.URL(layer.URL), err)
	}
	base, err := url.Parse(strings.TrimRight(layer.URL, "/"))
	if err != nil {
		return stats, fmt.Errorf("arcgis: bad layer url %s: %s", redact.URL(layer.URL), httpcall.RedactErr(err, layer.URL))
	}
	query := *base
	query.Path += "/query"
	d := &dump{c: c, layer: layer, query: &query, redacted: redact.URL(layer.URL), stats: &stats,
		log: c.logger.With("url", redact.URL(layer.URL))}

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
	stats.Declared = d.info.Declared(layer.OutFields, d.idField)
	version := ""
	if led := d.info.LastEditDate(); led > 0 {
		version = "lastEditDate=" + strconv.FormatInt(led, 10) + ";count=" + strconv.Itoa(count) + ";fields=" + d.info.fieldsDigest()
	}
	if version != "" && layer.Validators.Version == version {
		stats.NotModified = true
		stats.Validators.Version = version
		d.log.Debug("layer unchanged", "version", version)
		return stats, nil
	}

	ids, err := d.idList(ctx)
	switch {
	case err == nil:
		err = d.byIDs(ctx, ids, handle)
	case fallback(err):
		d.warn(fmt.Sprintf("the id list failed (%v); reading the layer without it", err))
		err = d.withoutIDs(ctx, count, handle)
	}
	var ie *IncompleteError
	if errors.As(err, &ie) && d.info.LastEditDate() > 0 {
		// An id that went missing is most often an edit: say so if it was.
		before := d.info.LastEditDate()
		if perr := d.probe(ctx, base); perr == nil && d.info.LastEditDate() != before {
			ie.Reason = fmt.Sprintf("the layer was edited during the dump (lastEditDate moved from %s to %s): %s", millis(before), millis(d.info.LastEditDate()), ie.Reason)
		}
	}
	if err != nil {
		return stats, err
	}
	if firstPage > 0 {
		// The pages before firstPage were fetched again, and replaced the
		// parked poll's; fewer pages than it staged would leave stale ones.
		if stats.Pages < firstPage {
			return stats, &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the parked poll staged %d pages but the layer now fills %d: it changed; poll again", firstPage, stats.Pages)}
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
			return stats, &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the layer was edited during the dump (lastEditDate moved from %s to %s)", millis(before), millis(after))}
		}
	}
	stats.Validators.Version = version
	return stats, nil
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

// form is the query form every request of the dump starts from.
func (d *dump) form() url.Values {
	where := d.layer.Where
	if where == "" {
		where = "1=1"
	}
	return url.Values{"f": {"json"}, "where": {where}}
}

func (d *dump) request(u *url.URL, form url.Values) httpcall.Request {
	return httpcall.Request{URL: u, Home: d.layer.URL, Headers: d.layer.Headers, Accept: "application/json, */*;q=0.1",
		Timeout: d.layer.RequestTimeout, BodyLimit: d.layer.Limits.BodyBytes, CrossOriginRedirects: d.layer.CrossOriginRedirects, Form: form}
}

// callJSON makes one logical call whose answer is a small JSON document,
// decoded into out.
func (d *dump) callJSON(ctx context.Context, op string, u *url.URL, form url.Values, out any) error {
	err := d.c.calls.Call(ctx, d.request(u, form), func(a *httpcall.Attempt) breaker.Result {
		br, _, err := a.OpenBody(op + " response")
		if err != nil {
			return a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
		}
		if cls := Classify(a.Resp, br, a.Redacted, op, d.c.now()); cls != nil {
			return a.Verdict(cls)
		}
		data, err := io.ReadAll(br)
		if err != nil {
			be := &httpcall.BodyError{URL: a.Redacted, Err: err}
			if httpcall.FeedsFault(err, a.BodyErr()) {
				return breaker.Result{Outcome: breaker.Success, Err: be}
			}
			return a.IgnoredOr(breaker.Failure, be)
		}
		if err := json.Unmarshal(data, out); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted,
				Err: fmt.Errorf("arcgis: the %s response does not decode: %v", op, feature.Bound(err))}}
		}
		return breaker.Result{Outcome: breaker.Success}
	})
	if err != nil {
		return fmt.Errorf("arcgis: %s of %s: %w", op, d.redacted, err)
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
	if err := d.callJSON(ctx, "probe", &u, nil, &info); err != nil {
		return err
	}
	if err := info.check(); err != nil {
		return fmt.Errorf("arcgis: %s: %w", d.redacted, err)
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
		// A page is held whole before it is staged: a server that
		// advertises 100,000 must not make that a page by default.
		d.pageSize = DefaultMaxPageSize
	}
	if d.batch == 0 || d.batch > d.pageSize {
		d.batch = d.pageSize
	}
	return nil
}

func (d *dump) count(ctx context.Context) (int, error) {
	form := d.form()
	form.Set("returnCountOnly", "true")
	var res struct {
		Count *int `json:"count"`
	}
	if err := d.callJSON(ctx, "count", d.query, form, &res); err != nil {
		return 0, err
	}
	if res.Count == nil || *res.Count < 0 {
		return 0, fmt.Errorf("arcgis: count of %s: the answer has no count", d.redacted)
	}
	return *res.Count, nil
}

// idList fetches the object ids the where clause selects, sorted, and
// checks them against the count.
func (d *dump) idList(ctx context.Context) ([]int64, error) {
	form := d.form()
	form.Set("returnIdsOnly", "true")
	var res struct {
		ObjectIDFieldName string  `json:"objectIdFieldName"`
		ObjectIDs         []int64 `json:"objectIds"`
	}
	if err := d.callJSON(ctx, "id list", d.query, form, &res); err != nil {
		return nil, err
	}
	ids := res.ObjectIDs
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the id list holds object id %d twice", ids[i])}
		}
	}
	if len(ids) != d.stats.NumberMatched {
		return nil, &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the count is %d but the id list holds %d ids (the layer changed between them, or the server caps the id list)", d.stats.NumberMatched, len(ids))}
	}
	return ids, nil
}

// outFields is the query's outFields: the feed's, with the object id and
// the id property added when it lists fields.
func (d *dump) outFields() string {
	of := d.layer.OutFields
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

// byIDs fetches the features of ids page by page and proves the dump.
// Page k+1 is fetched while page k is handed over (the stager waits for
// page k-1's COPY then): one request in flight to the origin at a time,
// and the server's latency overlaps with the database's work.
func (d *dump) byIDs(ctx context.Context, ids []int64, handle source.PageFunc) error {
	d.seen = make(map[int64]struct{}, len(ids))
	type fetched struct {
		page source.Page
		pr   *pageReader
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan fetched, 1)
	go func() {
		defer close(pages)
		for page, start := 0, 0; start < len(ids); page, start = page+1, start+d.pageSize {
			chunk := ids[start:min(start+d.pageSize, len(ids))]
			pr := &pageReader{}
			err := d.collect(ctx, chunk, pr)
			p := source.Page{Index: page, URL: d.redacted + " (objectIds " + strconv.FormatInt(chunk[0], 10) + "…" + strconv.FormatInt(chunk[len(chunk)-1], 10) + ")", StartIndex: start}
			select {
			case pages <- fetched{p, pr, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// Whatever ends the loop, the fetching goroutine is gone before
	// byIDs returns: it writes d's state.
	defer func() {
		cancel()
		for range pages {
		}
	}()
	for f := range pages {
		if f.err != nil {
			return f.err
		}
		if err := handle(ctx, f.page, f.pr); err != nil {
			return err
		}
		d.stats.Pages++
		d.stats.Features += len(f.pr.feats)
		d.stats.Bytes += f.pr.bytes
	}
	if len(d.seen) != len(ids) {
		return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("%d of the %d listed ids were fetched", len(d.seen), len(ids))}
	}
	return nil
}

// collect fetches the features of ids into pr, halving on the server's
// failures and asking again for ids an answer left out.
func (d *dump) collect(ctx context.Context, ids []int64, pr *pageReader) error {
	for start := 0; start < len(ids); {
		// d.batch may shrink while part is fetched.
		part := ids[start:min(start+d.batch, len(ids))]
		if err := d.collectOne(ctx, part, pr); err != nil {
			return err
		}
		start += len(part)
	}
	return nil
}

func (d *dump) collectOne(ctx context.Context, ids []int64, pr *pageReader) error {
	res, err := d.fetchIDs(ctx, ids)
	if err != nil {
		if !serverFailed(err) {
			return err
		}
		if len(ids) == 1 {
			return fmt.Errorf("arcgis: %s: object id %d cannot be fetched, even alone (the rest of its batch was): %w", d.redacted, ids[0], err)
		}
		d.log.Warn("batch failed on the server's side: halving", "ids", len(ids), "first", ids[0], "error", err)
		mid := len(ids) / 2
		if err := d.collectOne(ctx, ids[:mid], pr); err != nil {
			return err
		}
		return d.collectOne(ctx, ids[mid:], pr)
	}
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for i, oid := range res.oids {
		if !want[oid] {
			return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("asked for %d object ids from %d, the server answered object id %d, which was not asked for", len(ids), ids[0], oid)}
		}
		if _, dup := d.seen[oid]; dup {
			return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("object id %d was returned twice", oid)}
		}
		d.seen[oid] = struct{}{}
		want[oid] = false
		pr.feats = append(pr.feats, res.feats[i])
	}
	pr.bytes += res.bytes
	var missing []int64
	for _, id := range ids {
		if want[id] {
			missing = append(missing, id)
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case len(ids) == 1:
		return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("object id %d is in the id list but the server does not return it (deleted during the dump, or not readable)", ids[0])}
	}
	// The server answered fewer than asked: it caps below its
	// maxRecordCount (exceededTransferLimit set or not). Ask for the rest
	// in requests no larger than what it did return.
	if n := len(res.oids); n > 0 && n < d.batch {
		if !d.capNoted {
			d.warn(fmt.Sprintf("the server returned %d of %d features asked by objectIds (exceededTransferLimit %v): it caps below its maxRecordCount %d; asking %d at a time", n, len(ids), res.exceeded, d.info.MaxRecordCount, n))
			d.capNoted = true
		}
		d.batch = n
	} else if n == 0 {
		d.batch = max(1, len(missing)/2)
	}
	return d.collect(ctx, missing, pr)
}

// batchResult is one answer to a query for features.
type batchResult struct {
	feats    []feature.Feature
	oids     []int64
	exceeded bool
	bytes    int64
}

// fetchIDs asks for the features of ids (POST objectIds).
func (d *dump) fetchIDs(ctx context.Context, ids []int64) (batchResult, error) {
	form := d.featureForm()
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	form.Set("objectIds", b.String())
	return d.features(ctx, "features by objectIds", form)
}

// features makes one query for features and decodes its answer whole.
func (d *dump) features(ctx context.Context, op string, form url.Values) (batchResult, error) {
	var res batchResult
	meta := esrijson.Meta{GeometryType: d.info.GeometryType, HasZ: d.info.HasZ, HasM: d.info.HasM,
		SRID: d.info.SRID(), Fields: d.info.Fields, ObjectIDField: d.info.ObjectIDField}
	err := d.c.calls.Call(ctx, d.request(d.query, form), func(a *httpcall.Attempt) breaker.Result {
		res = batchResult{}
		br, _, err := a.OpenBody(op + " response")
		if err != nil {
			return a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
		}
		if cls := Classify(a.Resp, br, a.Redacted, op, d.c.now()); cls != nil {
			return a.Verdict(cls)
		}
		rd := esrijson.NewReader(br, meta, feature.WithIDProperty(d.idField), feature.WithLimits(d.layer.Limits.WithDefaults()))
		for {
			f, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return a.StreamFailed(&httpcall.BodyError{URL: a.Redacted, Err: err})
			}
			oid, ok := rd.ObjectID()
			if !ok {
				return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted,
					Err: fmt.Errorf("arcgis: feature %d has no integer %s (the object id field)", len(res.feats), d.info.ObjectIDField)}}
			}
			res.feats = append(res.feats, *f)
			res.oids = append(res.oids, oid)
		}
		res.exceeded = rd.ExceededTransferLimit()
		res.bytes = a.BodyBytes()
		return breaker.Result{Outcome: breaker.Success}
	})
	if err != nil {
		return res, fmt.Errorf("arcgis: %s of %s: %w", op, d.redacted, err)
	}
	return res, nil
}

// pageReader hands a page's features, fetched whole, to a PageFunc.
type pageReader struct {
	feats []feature.Feature
	next  int
	bytes int64
}

// Next returns the page's next feature.
func (r *pageReader) Next() (*feature.Feature, error) {
	if r.next >= len(r.feats) {
		return nil, io.EOF
	}
	r.next++
	return &r.feats[r.next-1], nil
}

// BodyBytes is the bytes of the page's answers, for limits.poll_bytes.
func (r *pageReader) BodyBytes() int64 { return r.bytes }
