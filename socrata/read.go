package socrata

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// idListPage is the $limit of the id list asked for to name the rows a
// read missed: ids only, a few MB a page.
const idListPage = 50000

// namedIDs is how many missing ids an error names.
const namedIDs = 5

// expected is what a 2xx body of a portal should hold, in the words of the
// errors on a body that holds something else.
const expected httpcall.Expected = "a SODA answer"

// read is the state of one Fetch.
type read struct {
	c        *Client
	layer    source.Layer
	ds       *dataset
	limits   feature.Limits // the layer's, defaults filled in
	stats    *source.FetchStats
	pageSize int
	log      *slog.Logger

	view       View
	geomCol    string
	cols       *columnSet // the columns of the rows read so far
	count      int
	maxUpdated string // max(:updated_at), asked when the metadata has no rowsUpdatedAt

	// seen maps the hash of every :id read to its page.
	seen map[uint64]int32
	seed maphash.Seed
}

func (r *read) run(ctx context.Context, handle source.PageFunc) error {
	if err := r.metadata(ctx); err != nil {
		return err
	}
	if err := r.countRows(ctx); err != nil {
		return err
	}
	r.stats.NumberMatched = r.count
	r.stats.Declared = r.view.Declared(r.geomCol)
	version := r.version()
	if r.layer.Validators.Version == version {
		r.stats.NotModified = true
		r.stats.Validators.Version = version
		r.log.Debug("dataset unchanged", "version", version)
		return nil
	}
	before := r.stamp()
	r.cols = newColumnSet(&r.view)
	total, err := r.pages(ctx, handle)
	if len(r.cols.extra) > 0 {
		r.log.Warn("the rows have columns the dataset's metadata does not list: they are typed from their values", "columns", r.cols.extra)
	}
	if err == nil {
		err = r.prove(ctx, total)
	}
	var ie *source.IncompleteError
	if errors.As(err, &ie) {
		// A row missed or read twice is most often an edit: say so if it was.
		if moved, merr := r.moved(ctx, before); merr == nil && moved != "" {
			ie.Reason = moved + ": " + ie.Reason
		}
	}
	if err != nil {
		return err
	}
	moved, err := r.moved(ctx, before)
	if err != nil {
		return err
	}
	if moved != "" {
		return &source.IncompleteError{URL: r.ds.redacted, Expected: -1, Reason: moved}
	}
	r.stats.Validators.Version = version
	return nil
}

// version is the dataset's version for a cheap refresh: its update time,
// its count, its columns and the geometry column.
func (r *read) version() string {
	when := "rowsUpdatedAt=" + strconv.FormatInt(r.view.RowsUpdatedAt, 10)
	if r.view.RowsUpdatedAt == 0 {
		when = "maxUpdatedAt=" + r.maxUpdated
	}
	return when + ";count=" + strconv.Itoa(r.count) + ";columns=" + r.view.columnsDigest() + ";geometry=" + r.geomCol
}

// stamp is the dataset's update time as the read began, for the check
// that it did not move during the read.
func (r *read) stamp() string {
	if r.view.RowsUpdatedAt > 0 {
		return "rowsUpdatedAt " + time.Unix(r.view.RowsUpdatedAt, 0).UTC().Format(time.RFC3339)
	}
	return "max(:updated_at) " + r.maxUpdated + " and count(*) " + strconv.Itoa(r.count)
}

// moved asks for the update time again and says how it moved since
// before ("" when it did not).
func (r *read) moved(ctx context.Context, before string) (string, error) {
	cols, digest := r.view.columnNames(), r.view.columnsDigest()
	err := r.metadata(ctx)
	if err == nil && r.view.RowsUpdatedAt == 0 {
		err = r.countRows(ctx)
	}
	if err != nil {
		return "", err
	}
	if after := r.stamp(); after != before {
		return fmt.Sprintf("the dataset was updated during the read (%s, then %s)", before, after), nil
	}
	if r.view.columnsDigest() != digest {
		return fmt.Sprintf("the dataset's columns changed during the read (%s, then %s): a read that mixes two schemas is not applied",
			cols, r.view.columnNames()), nil
	}
	return "", nil
}

func (r *read) request(u *url.URL) httpcall.Request {
	return httpcall.Request{URL: u, Home: r.layer.URL, Headers: r.layer.Headers, Accept: "application/json, */*;q=0.1",
		Timeout: r.layer.RequestTimeout, BodyLimit: r.limits.BodyBytes, CrossOriginRedirects: r.layer.CrossOriginRedirects}
}

// metadata reads the dataset's metadata and picks its geometry column.
func (r *read) metadata(ctx context.Context) error {
	var v View
	if err := r.callJSON(ctx, "metadata", r.ds.views, MaxMetadataBytes, &v); err != nil {
		return err
	}
	if len(v.Columns) == 0 {
		return &MetadataError{URL: redact.URL(r.ds.views.String()), Reason: "it lists no columns: not a dataset ingestd can read"}
	}
	geomCol, err := v.geometryColumn(settingsOf(r.layer).GeometryColumn)
	if err != nil {
		return &MetadataError{URL: redact.URL(r.ds.views.String()), Reason: err.Error()}
	}
	r.view, r.geomCol = v, geomCol
	return nil
}

// countRows asks for count(*), and max(:updated_at) when the metadata
// has no rowsUpdatedAt; a count over limits.poll_features is refused
// before any row is read.
func (r *read) countRows(ctx context.Context) error {
	sel := "count(*) AS n"
	if r.view.RowsUpdatedAt == 0 {
		sel += ", max(:updated_at) AS last_updated"
	}
	u := *r.ds.resource
	u.RawQuery = url.Values{"$select": {sel}}.Encode()
	var rows []map[string]json.RawMessage
	if err := r.callJSON(ctx, "count", &u, MaxCountBytes, &rows); err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("count of %s: the answer has %d rows, want 1", r.ds.redacted, len(rows))
	}
	n, err := countOf(rows[0]["n"])
	if err != nil {
		return fmt.Errorf("count of %s: %w", r.ds.redacted, err)
	}
	if int64(n) > r.limits.PollFeatures {
		return &feature.LimitError{Name: "poll_features", Max: r.limits.PollFeatures,
			Where: fmt.Sprintf("the count of %s is %d rows", r.ds.redacted, n)}
	}
	r.count = n
	r.maxUpdated = ""
	if raw := rows[0]["last_updated"]; raw != nil {
		_ = json.Unmarshal(raw, &r.maxUpdated) // null: an empty dataset
	}
	return nil
}

// countOf reads a count: SODA sends numbers as strings ("123").
func countOf(raw json.RawMessage) (int, error) {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		what := "missing"
		if raw != nil {
			what = describeJSON(raw)
		}
		return 0, fmt.Errorf("the answer has no count: n is %s, want a whole number", what)
	}
	return n, nil
}

// callJSON makes one logical call whose answer is a small JSON document,
// bounded by max, decoded into out.
func (r *read) callJSON(ctx context.Context, what string, u *url.URL, max int64, out any) error {
	req := r.request(u)
	req.BodyLimit = min(max, r.limits.BodyBytes)
	err := r.c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		want := "an object"
		if what != "metadata" {
			want = "an array of rows"
		}
		br, ok, v := r.c.open(a, what, "", want)
		if !ok {
			return v
		}
		data, err := io.ReadAll(br)
		if err != nil {
			return a.StreamFailed(&httpcall.BodyError{URL: a.Redacted, Err: err})
		}
		if code, msg, ok := parseServerError(data); ok {
			return a.Verdict(httpcall.ErrorVerdict(&ServerError{Status: a.Resp.StatusCode, Code: code, Message: msg}, false))
		}
		if err := json.Unmarshal(data, out); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: newContentError("", -1, "", jsonReason(err, "the "+what))}
		}
		return breaker.Result{Outcome: breaker.Success}
	})
	if err != nil {
		return fmt.Errorf("%s of %s: %w", what, r.ds.redacted, err)
	}
	return nil
}

// open opens an attempt's body and judges what is not JSON data: a
// status that is not 2xx (a SODA error body as a *ServerError with the
// portal's words; a 429 Throttled with its Retry-After), an HTML page, an
// empty body. ok is false when v is the attempt's verdict.
//
// A whole JSON document that is a scalar (42, null, "text") is the feed's
// content error (a *ContentError naming the answer as name does, and what
// it should be, want), as for every kind: the portal answered, and would
// answer a retry the same.
func (c *Client) open(a *httpcall.Attempt, what, name, want string) (br *bufio.Reader, ok bool, v breaker.Result) {
	br, _, err := a.OpenBody(what)
	if err != nil {
		if thr := httpcall.Throttled(a.Resp, a.Redacted, c.base.Now()); thr != nil {
			return nil, false, a.Verdict(thr)
		}
		return nil, false, a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
	}
	if status := a.Resp.StatusCode; status < 200 || status > 299 {
		body, _ := io.ReadAll(io.LimitReader(br, maxErrorBodyBytes))
		code, msg, isErr := parseServerError(body)
		if thr := httpcall.Throttled(a.Resp, a.Redacted, c.base.Now()); thr != nil {
			if isErr {
				thr.Err = &ServerError{Status: status, Code: code, Message: msg, RetryAfter: thr.RetryAfter}
			}
			return nil, false, a.Verdict(thr)
		}
		if isErr {
			se := &ServerError{Status: status, Code: code, Message: msg}
			return nil, false, a.Verdict(httpcall.ErrorVerdict(se, se.serverSide()))
		}
		return nil, false, a.Verdict(httpcall.StatusVerdict(status, a.Redacted))
	}
	s, rerr := httpcall.Sniff(br)
	if s.Kind == httpcall.KindJSONValue {
		return nil, false, breaker.Result{Outcome: breaker.Success,
			Err: newContentError(name, -1, "", "the answer is the JSON value "+jsonText(s.Head)+", not "+want)}
	}
	if s.Kind != httpcall.KindJSON {
		return nil, false, a.Verdict(expected.NotDataVerdict(a.Resp, br, s.Kind, rerr, a.Redacted))
	}
	return br, true, breaker.Result{}
}
