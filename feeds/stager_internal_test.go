package feeds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// stagingRecorder is a Store whose StagePage records pages and fails the
// pages it is told to. With waiting set (the stager's test signal), a
// page's StagePage returns only once the stager waits for it, so that a
// stager that started the next page without waiting would overlap them.
type stagingRecorder struct {
	Store   // only StagePage is called
	mu      sync.Mutex
	pages   []string
	active  int
	overlap bool
	fail    map[int]error
	waiting <-chan int
	// overlapped is closed when two StagePage calls overlap: the first
	// then stops waiting, and the test fails at once.
	overlapped     chan struct{}
	overlappedOnce sync.Once
}

// stagedByMe is how long StagePage waits for the stager to wait for it: a
// ceiling that only catches a stager that never does.
const stagedByMe = time.Minute

func (s *stagingRecorder) StagePage(_ context.Context, _ int64, page int, features feature.FeatureReader) (int, error) {
	s.mu.Lock()
	s.active++
	if s.active > 1 {
		s.overlap = true
		if s.overlapped != nil {
			s.overlappedOnce.Do(func() { close(s.overlapped) })
		}
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.active--; s.mu.Unlock() }()
	if s.waiting != nil {
		select {
		case p := <-s.waiting:
			if p != page {
				return 0, fmt.Errorf("the stager waits for page %d while page %d stages", p, page)
			}
		case <-s.overlapped:
		case <-time.After(stagedByMe): // a hang ceiling, see stagedByMe
			return 0, fmt.Errorf("page %d: the stager never waited for its staging", page)
		}
	}
	var ids []string
	for {
		f, err := features.Next()
		if err == io.EOF {
			break
		}
		ids = append(ids, f.ID)
	}
	s.mu.Lock()
	s.pages = append(s.pages, fmt.Sprintf("%d:%s", page, strings.Join(ids, ",")))
	s.mu.Unlock()
	return len(ids), s.fail[page]
}

type pageOf []string

func (p *pageOf) Next() (*feature.Feature, error) {
	if len(*p) == 0 {
		return nil, io.EOF
	}
	f := &feature.Feature{ID: (*p)[0]}
	*p = (*p)[1:]
	return f, nil
}

// TestPageStagerStagesInOrder: pages are staged one at a time, in order,
// with the features each page held: each page's StagePage is still running
// when the next page's first chunk is read (it returns only once the
// stager waits for it), and the next one starts only after it returned.
func TestPageStagerStagesInOrder(t *testing.T) {
	store := &stagingRecorder{overlapped: make(chan struct{})}
	s := newPageStager(t.Context(), store, 1, feature.Limits{}, nil)
	s.waiting.init()
	store.waiting = s.waiting.ch
	for i := range 5 {
		p := pageOf{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}
		if err := s.handle(t.Context(), source.Page{Index: i}, &p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(store.pages, " "), "0:a0,b0 1:a1,b1 2:a2,b2 3:a3,b3 4:a4,b4"; got != want || store.overlap {
		t.Errorf("staged %q (overlapping: %v), want %q one at a time", got, store.overlap, want)
	}
}

// TestPageStagerErrors: a page the origin cut is the origin's error; a page
// that failed to stage ends the fetch at the next page, and wins over a
// refusal that came after it, so that the poll fails instead of parking
// with a checkpoint past the page.
func TestPageStagerErrors(t *testing.T) {
	cut := errors.New("connection reset")
	store := &stagingRecorder{fail: map[int]error{1: errors.New("disk full")}}
	s := newPageStager(t.Context(), store, 1, feature.Limits{}, nil)
	p0 := pageOf{"a"}
	if err := s.handle(t.Context(), source.Page{Index: 0}, &p0); err != nil {
		t.Fatal(err)
	}
	bad := &cutReader{err: cut}
	if err := s.handle(t.Context(), source.Page{Index: 9}, bad); !errors.Is(err, cut) {
		t.Fatalf("cut page: %v, want the reader's error", err)
	}
	p1 := pageOf{"b"}
	if err := s.handle(t.Context(), source.Page{Index: 1}, &p1); err != nil {
		t.Fatal(err)
	}
	p2 := pageOf{"c"}
	if err := s.handle(t.Context(), source.Page{Index: 2}, &p2); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("page after a failed staging: %v, want the staging error", err)
	}

	store = &stagingRecorder{fail: map[int]error{0: errors.New("disk full")}}
	s = newPageStager(t.Context(), store, 1, feature.Limits{}, nil)
	p0 = pageOf{"a"}
	if err := s.handle(t.Context(), source.Page{Index: 0}, &p0); err != nil {
		t.Fatal(err)
	}
	refused := &breaker.OpenError{Origin: "https://gis.example.org:443", RetryAfter: time.Minute}
	err := s.finish(refused)
	var open *breaker.OpenError
	if err == nil || !strings.Contains(err.Error(), "disk full") || errors.As(err, &open) {
		t.Errorf("finish = %v, want the staging error, not a refusal", err)
	}
}

type cutReader struct{ err error }

func (r *cutReader) Next() (*feature.Feature, error) { return nil, r.err }

// streamRecorder is a Store whose StagePage reads a page as it arrives: it
// records what it read and how the reader ended, can stop after a given
// number of features (failing as a database would), and can hold the first
// feature until released.
type streamRecorder struct {
	Store
	mu     sync.Mutex
	ids    map[int][]string
	ended  map[int]error // the reader's last error: io.EOF for a whole page
	failAt int           // > 0: fail after this many features of a page
	hold   chan struct{} // non-nil: wait for it after the first feature
}

func (s *streamRecorder) StagePage(_ context.Context, _ int64, page int, features feature.FeatureReader) (int, error) {
	var ids []string
	var err error
	for {
		var f *feature.Feature
		if f, err = features.Next(); err != nil {
			break
		}
		ids = append(ids, f.ID)
		if len(ids) == 1 && s.hold != nil {
			<-s.hold
		}
		if len(ids) == s.failAt {
			err = errors.New("disk full")
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids, s.ended = map[int][]string{}, map[int]error{}
	}
	s.ids[page], s.ended[page] = ids, err
	if err == io.EOF {
		return len(ids), nil
	}
	return 0, err
}

func (s *streamRecorder) page(p int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[p], s.ended[p]
}

// countedPage yields n features (n < 0: without end) named prefix0,
// prefix1, …, each with props bytes of properties, then err (io.EOF when
// nil). It counts what it yielded, and its body as 100 bytes per feature.
type countedPage struct {
	prefix string
	n      int
	props  int
	err    error
	read   atomic.Int64
	// at (> 0) is a count of features: reaching it closes reached, and a
	// feature asked for past it before past is set counts in early.
	at      int64
	reached chan struct{}
	past    atomic.Bool
	early   atomic.Int64
}

func (p *countedPage) Next() (*feature.Feature, error) {
	i := int(p.read.Load())
	if p.n >= 0 && i >= p.n {
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	}
	if p.at > 0 && int64(i) >= p.at && !p.past.Load() {
		p.early.Add(1)
	}
	if n := p.read.Add(1); p.at > 0 && n == p.at {
		close(p.reached)
	}
	f := &feature.Feature{ID: p.prefix + strconv.Itoa(i)}
	if p.props > 0 {
		f.Properties = json.RawMessage(`{"v":"` + strings.Repeat("x", p.props) + `"}`)
	}
	return f, nil
}

func (p *countedPage) BodyBytes() int64 { return 100 * p.read.Load() }

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// smallChunks makes the stager's chunks 10 features (or bytes) long.
func smallChunks(s *pageStager, features int, bytes int64) *pageStager {
	s.chunkFeatures, s.chunkBytes = features, bytes
	return s
}

// TestPageStagerStagesALargePageInChunks: a page of many chunks is staged
// whole, in order, by one StagePage; while the COPY is stuck, the stager
// reads no more than the chunks it may hold (memory bounded by the chunk,
// not the page).
func TestPageStagerStagesALargePageInChunks(t *testing.T) {
	store := &streamRecorder{hold: make(chan struct{})}
	s := smallChunks(newPageStager(t.Context(), store, 1, feature.Limits{}, nil), 10, 1<<20)
	// One chunk in the COPY, chunksQueued waiting, one being filled.
	limit := int64((chunksQueued + 2) * 10)
	page := &countedPage{prefix: "f", n: 95, at: limit, reached: make(chan struct{})}
	handled := make(chan error, 1)
	go func() { handled <- s.handle(t.Context(), source.Page{Index: 0}, page) }()

	// The stager reads up to the limit, then must stop until the COPY
	// moves: a stager that read on would ask for the next feature right
	// away, in the goroutine that just reached the limit, long before this
	// one has woken to release the COPY (page.early counts such reads).
	awaitHang(t, page.reached, "the stager to read its chunks")
	page.past.Store(true)
	close(store.hold)
	if n := page.early.Load(); n != 0 {
		t.Errorf("with the COPY stuck, the stager read %d features past %d (chunks of 10)", n, limit)
	}
	if err := awaitHang(t, handled, "handle"); err != nil {
		t.Fatal(err)
	}
	if err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	ids, end := store.page(0)
	if end != io.EOF || strings.Join(ids, ",") != strings.Join(names("f", 95), ",") {
		t.Errorf("staged %d features (%v) ending with %v, want f0..f94 in order and io.EOF", len(ids), ids, end)
	}
	if s.features != 95 {
		t.Errorf("the poll counts %d features, want 95", s.features)
	}
}

// TestPageStagerHoldsFewLargeFeatures: chunks are also bounded in bytes
// while they wait for the COPY. Features each larger than all the room
// (an ArcGIS answer of 16 MB features) are held one in the COPY and one
// read, not four: the stager stops reading until the COPY moves.
func TestPageStagerHoldsFewLargeFeatures(t *testing.T) {
	store := &streamRecorder{hold: make(chan struct{})}
	s := smallChunks(newPageStager(t.Context(), store, 1, feature.Limits{}, nil), 10, 4096)
	// Each feature is over queuedBytes (12 KiB here): a chunk of its own
	// that takes all the room.
	const limit = 2 // one in the stuck COPY, one read and waiting for room
	page := &countedPage{prefix: "f", n: 6, props: 20000, at: limit, reached: make(chan struct{})}
	handled := make(chan error, 1)
	go func() { handled <- s.handle(t.Context(), source.Page{Index: 0}, page) }()

	awaitHang(t, page.reached, "the stager to read two large features")
	// Whatever the stager holds now it has read: a stager bounded only by
	// the count of chunks reads two more right away, in the goroutine that
	// reached the limit, long before this one releases the COPY.
	page.past.Store(true)
	close(store.hold)
	if n := page.early.Load(); n != 0 {
		t.Errorf("with the COPY stuck, the stager read %d large features past %d", n, limit)
	}
	if err := awaitHang(t, handled, "handle"); err != nil {
		t.Fatal(err)
	}
	if err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	if ids, end := store.page(0); end != io.EOF || strings.Join(ids, ",") != strings.Join(names("f", 6), ",") {
		t.Errorf("staged %v ending with %v, want f0..f5 and io.EOF", ids, end)
	}
}

// TestChunkBoundedByBytes: features larger than the chunk's byte bound make
// shorter chunks; one larger than the bound is a chunk of its own.
func TestChunkBoundedByBytes(t *testing.T) {
	s := smallChunks(newPageStager(t.Context(), &streamRecorder{}, 1, feature.Limits{}, nil), 100, 4096)
	r := &chunkSource{s: s, features: &countedPage{prefix: "f", n: 10, props: 1000}}
	chunk, _, end, err := r.read()
	if err != nil || end || len(chunk) != 4 {
		t.Errorf("chunk of 1 KB features: %d features (end %v, err %v), want 4", len(chunk), end, err)
	}
	r = &chunkSource{s: s, features: &countedPage{prefix: "f", n: 3, props: 10000}}
	for i := range 3 {
		if chunk, _, _, err := r.read(); err != nil || len(chunk) != 1 {
			t.Errorf("chunk %d of 10 KB features: %d features (err %v), want 1", i, len(chunk), err)
		}
	}
}

// TestPageStagerCutPageAbortsItsStaging: a body cut short after several
// chunks ends the page's StagePage with an error, never io.EOF, so its COPY
// rolls back; the fetch gets the reader's own error.
func TestPageStagerCutPageAbortsItsStaging(t *testing.T) {
	store := &streamRecorder{}
	s := smallChunks(newPageStager(t.Context(), store, 1, feature.Limits{}, nil), 10, 1<<20)
	if err := s.handle(t.Context(), source.Page{Index: 0}, &countedPage{prefix: "a", n: 15}); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("connection reset")
	if err := s.handle(t.Context(), source.Page{Index: 1}, &countedPage{prefix: "b", n: 55, err: cut}); !errors.Is(err, cut) {
		t.Fatalf("cut page: %v, want the reader's error", err)
	}
	if err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	if ids, end := store.page(0); end != io.EOF || len(ids) != 15 {
		t.Errorf("page 0: %d features ending with %v, want 15 and io.EOF", len(ids), end)
	}
	ids, end := store.page(1)
	if !errors.Is(end, errPageAbandoned) || len(ids) < 20 {
		t.Errorf("cut page: StagePage read %d features, ending with %v; want several chunks, then errPageAbandoned", len(ids), end)
	}
	if s.features != 15 {
		t.Errorf("the poll counts %d features, want 15 (the cut page does not count)", s.features)
	}
}

// TestPageStagerStagingFailsMidPage: a StagePage that fails while the page
// is still arriving ends the page's read with its error (no deadlock on a
// full channel).
func TestPageStagerStagingFailsMidPage(t *testing.T) {
	store := &streamRecorder{failAt: 15}
	s := smallChunks(newPageStager(t.Context(), store, 1, feature.Limits{}, nil), 10, 1<<20)
	page := &countedPage{prefix: "a", n: 100000}
	handled := make(chan error, 1)
	go func() { handled <- s.handle(t.Context(), source.Page{Index: 0}, page) }()
	err := awaitHang(t, handled, "handle after its staging failed")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("handle = %v, want the staging error", err)
	}
	if n := page.read.Load(); n > 100 {
		t.Errorf("read %d features after the staging failed, want the read to stop", n)
	}
}

// TestPageStagerPollLimits: the poll's features and body bytes are counted
// across its pages as they are read; exceeding either fails the page with
// *feature.LimitError naming the limit, aborts its staging, and stops an
// endless page at the limit.
func TestPageStagerPollLimits(t *testing.T) {
	for _, tc := range []struct {
		limits feature.Limits
		name   string
	}{
		{feature.Limits{PollFeatures: 25}, "poll_features"},
		{feature.Limits{PollBytes: 2500}, "poll_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &streamRecorder{}
			s := smallChunks(newPageStager(t.Context(), store, 1, tc.limits, nil), 4, 1<<20)
			for i := range 2 {
				if err := s.handle(t.Context(), source.Page{Index: i}, &countedPage{prefix: "p", n: 10}); err != nil {
					t.Fatal(err)
				}
			}
			endless := &countedPage{prefix: "p", n: -1}
			err := s.handle(t.Context(), source.Page{Index: 2, URL: "https://gis.example.org/wfs?startIndex=20"}, endless)
			var le *feature.LimitError
			if !errors.As(err, &le) || le.Name != tc.name || !strings.Contains(err.Error(), "page 2") {
				t.Fatalf("page 2: %v, want a *feature.LimitError %s naming the page", err, tc.name)
			}
			if n := endless.read.Load(); n != 6 {
				t.Errorf("the endless page was read for %d features, want 6 (the limit's)", n)
			}
			if err := s.finish(nil); err != nil {
				t.Fatal(err)
			}
			if _, end := store.page(2); !errors.Is(end, errPageAbandoned) {
				t.Errorf("page 2's staging ended with %v, want errPageAbandoned", end)
			}
		})
	}
}

// panickingStore panics in StagePage, as a feature no encoder expected might.
type panickingStore struct{ Store }

func (panickingStore) StagePage(context.Context, int64, int, feature.FeatureReader) (int, error) {
	panic("FlatCoords() called on a GeometryCollection")
}

// TestPageStagerRecoversStagingPanics: a panic in the staging goroutine,
// which the poll's own recover cannot see, fails the page, not the process;
// and sizing a GeometryCollection (whose FlatCoords panics) does not panic.
func TestPageStagerRecoversStagingPanics(t *testing.T) {
	s := newPageStager(t.Context(), panickingStore{}, 1, feature.Limits{}, nil)
	p := pageOf{"a"}
	if err := s.handle(t.Context(), source.Page{Index: 0}, &p); err != nil {
		t.Fatal(err)
	}
	if err := s.finish(nil); err == nil || !strings.Contains(err.Error(), "panicked: FlatCoords") {
		t.Errorf("finish = %v, want the staging panic as the page's error", err)
	}
	gc := geom.NewGeometryCollection()
	if err := gc.Push(geom.NewPointFlat(geom.XY, []float64{1, 2}), geom.NewGeometryCollection()); err != nil {
		t.Fatal(err)
	}
	if n := featureSize(&feature.Feature{Geometry: gc}); n < 128+16 {
		t.Errorf("featureSize of a collection = %d, want its point's coordinates counted", n)
	}
}

// TestPageStagerAttemptEndsWhileCopyIsStuck: when the page's attempt ends
// while the COPY does not take chunks, the page is abandoned with the
// attempt's error instead of blocking on the full channel.
func TestPageStagerAttemptEndsWhileCopyIsStuck(t *testing.T) {
	store := &streamRecorder{hold: make(chan struct{})}
	s := smallChunks(newPageStager(t.Context(), store, 1, feature.Limits{}, nil), 10, 1<<20)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The attempt ends once the stager holds all the chunks it may (one
	// in the stuck COPY, chunksQueued queued, one filled).
	page := &countedPage{prefix: "f", n: 1000, at: (chunksQueued + 2) * 10, reached: make(chan struct{})}
	handled := make(chan error, 1)
	go func() { handled <- s.handle(ctx, source.Page{Index: 0}, page) }()
	awaitHang(t, page.reached, "the stager to fill its chunks")
	cancel()
	close(store.hold) // the COPY moves again, and finds the page abandoned
	if err := awaitHang(t, handled, "handle on a COPY that does not read"); !errors.Is(err, context.Canceled) {
		t.Errorf("handle = %v, want the attempt's end", err)
	}
	if _, end := store.page(0); !errors.Is(end, errPageAbandoned) {
		t.Errorf("the page's staging ended with %v, want errPageAbandoned", end)
	}
}

// awaitHang returns the next value of ch, or fails the test if none comes
// within a minute: a ceiling that only catches a hang.
func awaitHang[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute): // a hang ceiling
	}
	t.Fatalf("no %s within a minute", what)
	var zero T
	return zero
}

// TestScrubFeatureWithoutSecretAllocatesNothing: a feed with secrets has
// every feature scrubbed before it is staged; one that holds none (nearly
// all) must cost no allocation, whatever its id.
func TestScrubFeatureWithoutSecretAllocatesNothing(t *testing.T) {
	s := layerSecrets(source.Layer{URL: "https://gis.example.org/data.geojson?token=hstAppT0ken7q2zW"})
	if s == nil {
		t.Fatal("the url's token is no secret")
	}
	for _, id := range []string{"17", "{3F2504E0-4F89-11D3-9A0C-0305E82C3301}"} {
		f := &feature.Feature{ID: id, Properties: []byte(`{"OWNER":"SMITH JOHN & MARY","SITE":"1234 OAK FOREST DR"}`)}
		if n := testing.AllocsPerRun(100, func() { scrubFeature(s, f) }); n != 0 {
			t.Errorf("id %q: %v allocations per feature, want 0", id, n)
		}
	}
}
