package ogcapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
	"github.com/ingestd/ingestd/internal/pageids"
	"github.com/ingestd/ingestd/source"
	"github.com/twpayne/go-geom"
)

// wantCRS is the CRS a fetch asks for and expects.
type wantCRS struct {
	name string // as configured; CRS84 when none was
	crs  feature.CRS
}

// layerCRS is the CRS the layer's items come in.
func layerCRS(layer source.Layer) (wantCRS, error) {
	name := settingsOf(layer).CRS
	if name == "" {
		name = CRS84
	}
	c, err := feature.ParseCRS(name)
	if err != nil {
		return wantCRS{}, fmt.Errorf("%w: crs: %w", source.ErrInvalidLayer, err)
	}
	return wantCRS{name: name, crs: c}, nil
}

// fetchState is what the pages of one fetch share: the URLs fetched, the
// ids delivered and the identity of each page, for the loop, repeat and
// duplicate checks.
type fetchState struct {
	want    wantCRS
	seed    maphash.Seed
	urls    map[string]int // request URL → page
	ids     *pageids.Set   // ids delivered, and their pages
	first   map[uint64]int // first feature's key → page
	content map[uint64]int // page content hash → page
}

func newFetchState(want wantCRS) *fetchState {
	return &fetchState{want: want, seed: maphash.MakeSeed(), urls: map[string]int{},
		ids: pageids.New(false), first: map[uint64]int{}, content: map[uint64]int{}}
}

// pageResult is what one successful attempt learnt about its page.
type pageResult struct {
	features       int
	bytes          int64
	numberMatched  int
	matchedText    string // numberMatched, when a string that is no count
	numberReturned int
	next           string
	validators     source.Validators
	warning        string
	handlerErr     error
}

// attempt is one attempt of one page: GET, classify, check the CRS,
// stream into handle, check the page against the ones before.
func (c *Client) attempt(a *httpcall.Attempt, layer source.Layer, p source.Page, st *fetchState, handle source.PageFunc, res *pageResult) breaker.Result {
	st.ids.Begin(p.Index) // a retry re-reads its page's ids
	br, note, err := a.OpenBody("items page")
	if err != nil {
		r := httpcall.ReadFailure(a.Resp, err, a.Redacted)
		r.Err.(*httpcall.BodyError).Page = p.Index
		return a.Verdict(r)
	}
	res.warning = note
	if r := classify(a.Resp, br, a.Redacted, c.base.Now()); r != nil {
		var be *httpcall.BodyError
		if errors.As(r.Err, &be) {
			be.Page = p.Index
		}
		return a.Verdict(r)
	}
	if err := checkContentCRS(a.Resp.Header.Get("Content-Crs"), st.want, a.Redacted); err != nil {
		return breaker.Result{Outcome: breaker.Success, Err: err}
	}
	dec := geojson.NewReader(br, feature.WithIDProperty(layer.IDProperty), feature.WithSRID(st.want.crs.SRID),
		feature.WithLimits(layer.Limits.WithDefaults()))
	pr := &pageReader{dec: dec, st: st, page: p.Index, url: a.Redacted, swap: st.want.crs.LatFirst, body: a,
		h: newPageHash(st.seed)}
	base := a.Resp.Request.URL
	p.Next = func() string {
		if pr.next == "" {
			return ""
		}
		n, err := resolve(base, pr.next)
		if err != nil {
			return "" // the fetch fails on it (PagingError)
		}
		return Storable(n, layer.URL)
	}

	first, err := pr.read()
	var lone *PagingError
	switch {
	case err == io.EOF:
	case errors.As(err, &lone):
		return breaker.Result{Outcome: breaker.Success, Err: err}
	case err != nil:
		return a.StreamFailed(err)
	default:
		k := featureKey(st.seed, first)
		if prev, ok := st.first[k]; ok && prev != p.Index {
			return breaker.Result{Outcome: breaker.Success, Err: &PagingError{URL: a.Redacted, Page: p.Index,
				Reason: fmt.Sprintf("page %d repeats page %d: it starts with the same feature (id %q); the server ignores the paging position of its next links (MapServer#6613)", p.Index, prev, errtext.Head(first.ID, 200))}}
		}
		if err := pr.checkID(first); err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: err}
		}
		pr.pending = first
		pr.firstKey = k
	}
	if herr := handle(a.CallCtx, p, pr); herr != nil {
		var ie *source.IncompleteError
		var pe *PagingError
		switch {
		case errors.As(herr, &ie), errors.As(herr, &pe):
			return breaker.Result{Outcome: breaker.Success, Err: herr}
		case httpcall.IsBodyError(herr):
			return a.StreamFailed(herr)
		}
		res.handlerErr = herr
		return breaker.Result{Outcome: breaker.Ignored, Err: herr}
	}
	if f, err := pr.Next(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("page %d (%s): handler returned before reading feature %d (id %q)", p.Index, a.Redacted, pr.n-1, f.ID)
			res.handlerErr = err
			return breaker.Result{Outcome: breaker.Ignored, Err: err}
		}
		var ie *source.IncompleteError
		var pe *PagingError
		if errors.As(err, &ie) || errors.As(err, &pe) {
			return breaker.Result{Outcome: breaker.Success, Err: err}
		}
		return a.StreamFailed(err)
	}
	res.features = pr.n
	res.bytes = a.BodyBytes()
	res.numberMatched = dec.NumberMatched()
	res.matchedText = dec.NumberMatchedText()
	res.numberReturned = dec.NumberReturned()
	res.next = pr.next
	res.validators = source.Validators{ETag: a.Resp.Header.Get("ETag"), LastModified: a.Resp.Header.Get("Last-Modified")}
	if pr.n > 0 {
		st.first[pr.firstKey] = p.Index
		st.content[pr.contentHash] = p.Index
	}
	return breaker.Result{Outcome: breaker.Success}
}

// checkContentCRS compares a page's Content-Crs header with the CRS asked
// for. Part 2 makes the header mandatory when a crs was asked for; without
// one, items are CRS84 and a header, when sent, must say so.
func checkContentCRS(header string, want wantCRS, redacted string) error {
	got := contentCRS(header)
	asked := !isCRS84(want.name)
	switch {
	case got == "" && asked:
		return &CRSError{URL: redacted, Want: want.name, Reason: "the response has no Content-Crs header, so nothing says the coordinates are in it"}
	case got == "":
		return nil
	case !sameCRS(got, want.name):
		return &CRSError{URL: redacted, Want: want.name, Got: got, Reason: "the response's Content-Crs is " + errtext.Head(got, 200)}
	}
	return nil
}

// pageReader is the FeatureReader handed to a PageFunc: it swaps
// latitude-first coordinates to x/y, counts features, checks ids against
// the earlier pages, hashes the page's content, and at the end of the page
// reads its next link and refuses a page that repeats an earlier one.
type pageReader struct {
	dec      *geojson.Reader
	st       *fetchState
	page     int
	url      string
	swap     bool
	body     *httpcall.Attempt
	pending  *feature.Feature
	n        int
	err      error
	firstKey uint64
	h        *pageHash
	// Set at the end of the page.
	next        string
	contentHash uint64
}

// BodyBytes returns the page's body bytes read so far (the stager bounds
// a poll's bytes with it).
func (r *pageReader) BodyBytes() int64 { return r.body.BodyBytes() }

// Next implements feature.FeatureReader.
func (r *pageReader) Next() (*feature.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	if f := r.pending; f != nil {
		r.pending = nil
		return f, nil
	}
	f, err := r.read()
	if err == io.EOF {
		if err := r.end(); err != nil {
			r.err = err
			return nil, err
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	if err := r.checkID(f); err != nil {
		return nil, err
	}
	return f, nil
}

// read returns the decoder's next feature, counted, swapped, hashed.
func (r *pageReader) read() (*feature.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	f, err := r.dec.Next()
	if err == io.EOF {
		if r.n == 0 {
			// An empty page ends here: read its members after the
			// features (links) too.
			return nil, r.endOnce()
		}
		return nil, io.EOF
	}
	if err != nil {
		r.err = &httpcall.BodyError{URL: r.url, Page: r.page, Err: err}
		return nil, r.err
	}
	if r.dec.LoneFeature() {
		// A Feature is not a page: it has no numberMatched or links of
		// its own, so one would pass as the whole collection. It arrived
		// whole and is not the layer: the feed's error, as any document
		// that does not decode as a page, never retried or parked.
		r.err = &PagingError{URL: r.url, Page: r.page,
			Reason: fmt.Sprintf("page %d is a single Feature, not a FeatureCollection", r.page)}
		return nil, r.err
	}
	r.n++
	if r.swap && f.Geometry != nil {
		eachFlat(f.Geometry, swapXY)
	}
	r.h.add(f)
	return f, nil
}

// endOnce runs end for an empty page, whose first read is its end.
func (r *pageReader) endOnce() error {
	if err := r.end(); err != nil {
		r.err = err
		return err
	}
	return io.EOF
}

// end reads the page's next link and refuses a page whose content equals
// an earlier page's.
func (r *pageReader) end() error {
	if r.contentHash != 0 || r.next != "" {
		return nil // already ended
	}
	next, err := nextLink(r.dec.Links())
	if err != nil {
		return &httpcall.BodyError{URL: r.url, Page: r.page, Err: err}
	}
	r.next = next
	if r.n == 0 {
		return nil
	}
	r.contentHash = r.h.sum()
	if prev, ok := r.st.content[r.contentHash]; ok && prev != r.page {
		return &PagingError{URL: r.url, Page: r.page,
			Reason: fmt.Sprintf("page %d repeats page %d: the same %d features; the server ignores the paging position of its next links (MapServer#6613)", r.page, prev, r.n)}
	}
	return nil
}

// checkID fails the page when f was delivered before: on an earlier page,
// or earlier in this one. A feature is known by its id, or, without one,
// by its content (the store names it by its content hash, so a repeat
// would be kept once): either way the pages held fewer distinct features
// than they counted, and a total checked against numberMatched, or the
// links alone, would call the collection whole with features missing.
// Every id of the page is remembered, and across pages every id up to
// pageids.ExactIDs, then a fixed sample: memory stays bounded on huge
// collections, and the store's exact check at apply catches the ids the
// sample lets by.
func (r *pageReader) checkID(f *feature.Feature) error {
	var p int
	var dup bool
	if f.ID != "" {
		p, dup = r.st.ids.Add(f.ID)
	} else {
		p, dup = r.st.ids.AddHash(featureKey(r.st.seed, f))
	}
	if !dup {
		return nil
	}
	what := fmt.Sprintf("id %q", errtext.Head(f.ID, 200))
	if f.ID == "" {
		what = "the same feature (no id; the same properties and geometry)"
	}
	reason := fmt.Sprintf("%s came on pages %d and %d: the server's pages overlap or its paging order is unstable, or its ids are not unique", what, p, r.page)
	if p == r.page {
		reason = fmt.Sprintf("%s came twice in page %d: the server's features are not unique (kept once, the collection would look whole with one missing)", what, r.page)
		if f.ID != "" {
			reason += "; if another property identifies features, set id_property"
		}
	}
	r.err = &source.IncompleteError{URL: r.url, Expected: -1, Got: -1, Reason: reason}
	return r.err
}

// nextLink is the href of the rel="next" link of a page's links ("" when
// there is none). The links are read one at a time: the member is bounded
// by feature_bytes, and decoded whole, a member of that size of empty
// objects would have cost sixteen times as much.
func nextLink(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	next := ""
	dec := json.NewDecoder(bytes.NewReader(raw))
	err := scanArray(dec, `member "links"`, func() error {
		var l link
		if err := dec.Decode(&l); err != nil {
			return err
		}
		if l.Rel != "next" || l.Href == "" {
			return nil
		}
		if next != "" && next != l.Href && !isJSONType(l.Type) {
			// A server may give one next link per format; prefer the
			// GeoJSON one.
			return nil
		}
		next = l.Href
		return nil
	})
	if err != nil {
		return "", &feature.DecodeError{Index: -1, Msg: `member "links" is not an array of links`, Err: feature.Bound(err)}
	}
	return next, nil
}

func isJSONType(t string) bool {
	return t == "" || t == "application/geo+json" || t == "application/json"
}

// featureKey identifies a feature for the repeated-page check: its id,
// else its properties and coordinates.
func featureKey(seed maphash.Seed, f *feature.Feature) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	if f.ID != "" {
		h.WriteString("id:")
		h.WriteString(f.ID)
		return h.Sum64()
	}
	writeFeature(&h, f)
	return h.Sum64()
}

// pageHash hashes a page's features in order: two pages with the same
// hash hold the same features.
type pageHash struct{ h maphash.Hash }

func newPageHash(seed maphash.Seed) *pageHash {
	p := &pageHash{}
	p.h.SetSeed(seed)
	return p
}

func (p *pageHash) add(f *feature.Feature) { writeFeature(&p.h, f) }

func (p *pageHash) sum() uint64 {
	s := p.h.Sum64()
	if s == 0 {
		s = 1 // 0 means "not ended"
	}
	return s
}

// writeFeature writes f's id, properties and coordinates to h.
func writeFeature(h *maphash.Hash, f *feature.Feature) {
	h.WriteString(f.ID)
	h.WriteByte(0)
	h.Write(f.Properties)
	h.WriteByte(0)
	if f.Geometry != nil {
		var b [8]byte
		eachFlat(f.Geometry, func(flat []float64, _ int) {
			for _, v := range flat {
				binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
				h.Write(b[:])
			}
		})
	}
}

// eachFlat calls fn with the flat coordinates of every geometry in g.
func eachFlat(g geom.T, fn func(flat []float64, stride int)) {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		for _, c := range gc.Geoms() {
			eachFlat(c, fn)
		}
		return
	}
	fn(g.FlatCoords(), g.Stride())
}

// swapXY swaps the first two ordinates of each position in place.
func swapXY(flat []float64, stride int) {
	if stride < 2 {
		return
	}
	for i := 0; i+1 < len(flat); i += stride {
		flat[i], flat[i+1] = flat[i+1], flat[i]
	}
}
