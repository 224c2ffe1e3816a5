package arcgis

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/source"
)

// errAbandoned ends the requests of a page whose handler stopped reading
// it (its staging failed, or a per-poll limit was reached).
var errAbandoned = errors.New("the page's handler stopped reading it")

// pageStream is the FeatureReader of one page. A goroutine of its own
// makes the page's requests (several when a batch is halved or asked
// again, each retried by the breaker) and hands every feature over as it
// is decoded and checked, so a page costs a feature in flight, whatever
// its answers weigh: the stager stages it in chunks, and a page that
// fails after any of them rolls back whole.
type pageStream struct {
	feats    chan feature.Feature
	done     chan struct{} // closed when the reading side is done with the page
	ended    chan struct{} // closed once the requests are over; err is set then
	err      error
	bytes    atomic.Int64 // body bytes of the page's answers read so far
	stopOnce sync.Once

	cur     feature.Feature
	pending bool // cur is read but not yet returned by Next
	eof     bool
	n       int
}

// startPage starts the requests of a page (produce, which hands its
// features to s.emit).
func startPage(produce func(s *pageStream) error) *pageStream {
	s := &pageStream{feats: make(chan feature.Feature), done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer close(s.feats)
		// No input may panic the process: the poll's own recover cannot
		// reach this goroutine.
		defer func() {
			if p := recover(); p != nil {
				s.err = fmt.Errorf("panic while fetching a page (a bug in ingestd): %v", p)
			}
		}()
		s.err = produce(s)
	}()
	return s
}

// emit hands f over, waiting for the reading side.
func (s *pageStream) emit(ctx context.Context, f *feature.Feature) error {
	select {
	case s.feats <- *f:
		return nil
	case <-s.done:
		return errAbandoned
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Next returns the page's next feature; the error of its requests once
// they failed; io.EOF after the last.
func (s *pageStream) Next() (*feature.Feature, error) {
	if s.pending {
		s.pending = false
		return &s.cur, nil
	}
	f, ok := <-s.feats
	if !ok {
		if s.err != nil {
			return nil, s.err
		}
		s.eof = true
		return nil, io.EOF
	}
	s.cur = f
	s.n++
	return &s.cur, nil
}

// BodyBytes is the body bytes of the page's answers read so far, for
// limits.poll_bytes.
func (s *pageStream) BodyBytes() int64 { return s.bytes.Load() }

// stop ends the page's requests, if they still run, and waits for them.
func (s *pageStream) stop() {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.ended
}

// handPage streams one page to handle while produce makes its requests.
// Nothing is handed over before the page's first feature is in: a page
// that fails at once stages nothing, and one that turns out empty (a
// window without features) is not a page (it returns 0 features). The
// error is the requests' own when they failed, else the handler's.
func (d *dump) handPage(ctx context.Context, p source.Page, handle source.PageFunc, produce func(s *pageStream) error) (int, int64, error) {
	s := startPage(produce)
	defer s.stop()
	if _, err := s.Next(); err == io.EOF {
		s.stop()
		return 0, s.bytes.Load(), nil
	} else if err != nil {
		return 0, 0, err
	}
	s.pending = true
	herr := handle(ctx, p, s)
	s.stop()
	switch {
	case herr != nil && s.err != nil && !errors.Is(s.err, errAbandoned):
		return 0, 0, s.err
	case herr != nil:
		return 0, 0, herr
	case !s.eof:
		return 0, 0, fmt.Errorf("page %d (%s): the handler returned before the page's end", p.Index, p.URL)
	}
	return s.n, s.bytes.Load(), nil
}

// pageState checks a page's features as they stream, against the request
// that brought them and the page's features before them.
type pageState struct {
	d *dump
	s *pageStream
	// what is the page, for errors.
	what string
	// got maps the object ids handed over to the attempt that brought
	// them: one brought again by the same attempt is a duplicate in one
	// answer; by another (a retry after an answer cut short, a narrower
	// window) it was handed over already.
	got map[int64]int
	// ids maps the hashes of the feature ids handed over (id_property) to
	// their object ids, when the feature id is not the object id.
	ids  map[uint64]int64
	seed maphash.Seed
	// global: the fallbacks, which check the object ids against the
	// pages before (d.seen) and bound the features read (d.readMax).
	global bool
}

func (d *dump) newPage(what string, global bool) *pageState {
	p := &pageState{d: d, what: what, got: map[int64]int{}, global: global}
	if !strings.EqualFold(d.idField, d.info.ObjectIDField) {
		p.ids, p.seed = map[uint64]int64{}, maphash.MakeSeed()
	}
	return p
}

// take checks the feature of object id oid, brought by attempt, and hands
// it over; asked refuses an object id the request did not ask for.
func (p *pageState) take(ctx context.Context, oid int64, f *feature.Feature, attempt int, asked func(int64) error) error {
	d := p.d
	if err := asked(oid); err != nil {
		return err
	}
	if at, ok := p.got[oid]; ok {
		if at == attempt {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("object id %d is twice in one answer (%s)", oid, p.what)}
		}
		return nil // handed over already
	}
	if p.global {
		if _, dup := d.seen[oid]; dup {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("object id %d was read twice (the server's order is not stable)", oid)}
		}
		if d.read++; d.read > d.readMax {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("%s: read %d distinct features, more than the count %d and a page (%d): the server invents features; stopped", p.what, d.read, d.stats.NumberMatched, d.pageSize)}
		}
	}
	if p.ids != nil && f.ID != "" {
		h := maphash.String(p.seed, f.ID)
		if other, dup := p.ids[h]; dup {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("feature id %s (%s) is that of object ids %d and %d of one page (%s): the id property is not unique; set id_property to a unique field",
				feature.Snippet([]byte(f.ID)), d.idField, other, oid, p.what)}
		}
		p.ids[h] = oid
	}
	p.got[oid] = attempt
	d.seeEdit(f)
	return p.s.emit(ctx, f)
}

// remaining is the ids not handed over yet.
func (p *pageState) remaining(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if _, ok := p.got[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// commit adds the page's object ids to those of the fallbacks' pages.
func (p *pageState) commit() {
	for oid := range p.got {
		p.d.seen[oid] = struct{}{}
	}
}

// batchName names a request of object ids by their range.
func batchName(ids []int64) string {
	return "batch of objectIds " + strconv.FormatInt(ids[0], 10) + "…" + strconv.FormatInt(ids[len(ids)-1], 10)
}

// byIDs fetches the features of ids page by page, each streamed to handle
// as its answers are decoded and checked against the ids asked.
func (d *dump) byIDs(ctx context.Context, ids *idList, handle source.PageFunc) error {
	fetched := 0
	for page, start := 0, 0; start < ids.n; page, start = page+1, start+d.pageSize {
		batch := ids.slice(start, min(start+d.pageSize, ids.n))
		name := batchName(batch)
		p := source.Page{Index: page, URL: d.redacted + " (" + name + ")", StartIndex: start}
		st := d.newPage(name, false)
		n, bytes, err := d.handPage(ctx, p, handle, func(s *pageStream) error {
			st.s = s
			return d.collect(ctx, batch, st)
		})
		if err != nil {
			return err
		}
		if n != len(batch) {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("%s: %d of its %d ids were fetched", name, n, len(batch))}
		}
		fetched += n
		d.stats.Pages++
		d.stats.Features += n
		d.stats.Bytes += bytes
	}
	if fetched != ids.n {
		return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("%d of the %d listed ids were fetched", fetched, ids.n)}
	}
	return nil
}

// collect fetches the features of ids into the page, halving on the
// server's failures and asking again for ids an answer left out.
func (d *dump) collect(ctx context.Context, ids []int64, p *pageState) error {
	for start := 0; start < len(ids); {
		// d.batch may shrink while part is fetched.
		part := ids[start:min(start+d.batch, len(ids))]
		if err := d.collectOne(ctx, part, p); err != nil {
			return err
		}
		start += len(part)
	}
	return nil
}

func (d *dump) collectOne(ctx context.Context, ids []int64, p *pageState) error {
	if len(ids) == 0 {
		return nil
	}
	ans, err := d.fetchIDs(ctx, ids, p)
	if err != nil {
		if !serverFailed(err) {
			return err
		}
		if len(ids) == 1 {
			return fmt.Errorf("%s: object id %d cannot be fetched, even alone (the rest of its batch was): %w", d.redacted, ids[0], err)
		}
		// What an answer cut short brought is handed over already.
		rest := p.remaining(ids)
		if len(rest) == 0 {
			return err // every feature came, and then the server failed
		}
		d.log.Warn("batch failed on the server's side: halving", "ids", len(rest), "first", rest[0], "error", err)
		mid := len(rest) / 2
		if err := d.collectOne(ctx, rest[:mid], p); err != nil {
			return err
		}
		return d.collectOne(ctx, rest[mid:], p)
	}
	missing := p.remaining(ids)
	switch {
	case len(missing) == 0:
		return nil
	case len(ids) == 1:
		return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("object id %d is in the id list but the server does not return it (deleted during the dump, or not readable)", ids[0])}
	}
	// The server answered fewer than asked: it caps below its
	// maxRecordCount (exceededTransferLimit set or not). Ask for the rest
	// in requests no larger than what it did return.
	if n := ans.n; n > 0 && n < d.batch {
		if !d.capNoted {
			d.warn(fmt.Sprintf("the server returned %d of %d features asked by objectIds (exceededTransferLimit %v): it caps below its maxRecordCount %d; asking %d at a time", n, len(ids), ans.exceeded, d.info.MaxRecordCount, n))
			d.capNoted = true
		}
		d.batch = n
	} else if n == 0 {
		d.batch = max(1, len(missing)/2)
	}
	return d.collect(ctx, missing, p)
}

// answer is what the last attempt of one query for features held.
type answer struct {
	n        int // features, including those handed over before
	exceeded bool
}

// fetchIDs asks for the features of ids (POST objectIds, ids sorted).
func (d *dump) fetchIDs(ctx context.Context, ids []int64, p *pageState) (answer, error) {
	form := d.featureForm()
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	form.Set("objectIds", b.String())
	name := batchName(ids)
	return d.features(ctx, name, form, p, func(oid int64) error {
		if _, ok := slices.BinarySearch(ids, oid); !ok {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("asked for %d object ids (%s), the server answered object id %d, which was not asked for", len(ids), name, oid)}
		}
		return nil
	})
}

// features makes one query for features and streams its answer into the
// page: every feature is checked (asked, p.take) and handed over as it
// is decoded. An error object in the answer, wherever it sits (before,
// after or among the features' members), is judged by its code as
// Classify judges one that comes first.
func (d *dump) features(ctx context.Context, op string, form url.Values, p *pageState, asked func(int64) error) (answer, error) {
	var ans answer
	meta := esrijson.Meta{GeometryType: d.info.GeometryType, HasZ: d.info.HasZ, HasM: d.info.HasM,
		SRID: d.info.SRID(), Fields: d.info.Fields, ObjectIDField: d.info.ObjectIDField}
	err := d.c.calls.Call(ctx, d.request(d.query, form), func(a *httpcall.Attempt) breaker.Result {
		d.attempts++
		attempt := d.attempts
		ans = answer{}
		base := p.s.bytes.Load()
		defer func() { p.s.bytes.Store(base + a.BodyBytes()) }()
		br, _, err := a.OpenBody(op)
		if err != nil {
			return a.Verdict(renamed(httpcall.ReadFailure(a.Resp, err, a.Redacted), op, a.Redacted))
		}
		if cls := Classify(a.Resp, br, a.Redacted, op, d.c.now()); cls != nil {
			return a.Verdict(cls)
		}
		rd := esrijson.NewReader(br, meta, feature.WithIDProperty(d.idField), feature.WithLimits(d.limits))
		for {
			f, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var se *esrijson.ServerError
				if errors.As(err, &se) && a.BodyErr() == nil {
					return a.Verdict(judge(a.Resp.StatusCode, a.Redacted, op, *se))
				}
				return a.StreamFailed(&BodyError{Op: op, URL: a.Redacted, Err: err})
			}
			oid, ok := rd.ObjectID()
			if !ok {
				return breaker.Result{Outcome: breaker.Success, Err: &BodyError{Op: op, URL: a.Redacted,
					Err: fmt.Errorf("feature %d has no integer %s (the object id field)", ans.n, d.info.ObjectIDField)}}
			}
			ans.n++
			p.s.bytes.Store(base + a.BodyBytes())
			if f.Geometry != nil {
				if err := d.checkSRID(a.CallCtx, f.Geometry.SRID(), "answer's spatialReference"); err != nil {
					return takeFailed(a, err)
				}
			}
			if err := p.take(a.CallCtx, oid, f, attempt, asked); err != nil {
				return takeFailed(a, err)
			}
		}
		ans.exceeded = rd.ExceededTransferLimit()
		return breaker.Result{Outcome: breaker.Success}
	})
	if err != nil {
		return ans, fmt.Errorf("%s of %s: %w", op, d.redacted, err)
	}
	return ans, nil
}

// takeFailed is the verdict on a feature the page refused: the feed's
// error (a Success: the server answered) when the content is wrong, not
// the origin's doing when the page was abandoned or the store failed.
func takeFailed(a *httpcall.Attempt, err error) breaker.Result {
	var ie *source.IncompleteError
	var ce *CRSError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		return breaker.Result{Outcome: breaker.Success, Err: err}
	}
	return breaker.Result{Outcome: breaker.Ignored, Err: err}
}
