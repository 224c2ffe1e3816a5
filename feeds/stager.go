package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/twpayne/go-geom"

	"golang.org/x/sync/semaphore"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Staging chunks. A page is read in chunks of at most chunkFeatures
// features or chunkBytes bytes (as featureSize estimates them; a larger
// feature is a chunk of its own), and at most chunksQueued chunks, of at
// most queuedBytes together, wait between the reader and the COPY or are
// being COPYed: with the chunk being read, a page costs at most four chunks
// of memory, and of chunks of large features (each over queuedBytes) two,
// whatever their size. A poll of one unpaged response of 1M parcels peaks
// at 34 MB RSS in chunks, against 902 MB with the page held whole
// (BenchmarkPollLayer with INGESTD_BENCH_PAGE_SIZE=0, see bench_test.go);
// the bound on bytes, not only on the chunks' count, is for answers of
// large features (an ArcGIS answer of features of 16 MB each, the
// feature_bytes default).
//
// A chunk's slice starts at chunkStartFeatures and grows by append (the
// slices are recycled, so a large page grows them once per poll): most of
// a catalog's layers are small, and a poll of a few features must not
// hold chunkFeatures' worth. With every slice allocated whole, 5,000 small
// feeds held 153 MB of a 228 MB live heap in waiting chunks
// (BenchmarkSchedulerScale, scripts/bench.sh scale).
const (
	chunkFeatures      = 1000
	chunkStartFeatures = 16
	chunkBytes         = 2 << 20
	chunksQueued       = 2
)

// queuedBytes bounds the chunks handed to the COPY and not yet done with,
// for chunks of chunkBytes: a chunk weighs its size, at most all of it.
func queuedBytes(chunkBytes int64) int64 { return (chunksQueued + 1) * chunkBytes }

// pageStager stages a poll's pages one at a time and in order, so that the
// staged pages always run from the first one without a gap (the checkpoint
// a parked poll resumes from).
//
// A page is staged while its body is read: the fetcher's goroutine reads
// chunks of features and hands them over a bounded channel to a goroutine
// that runs Store.StagePage on them, one COPY per page. Decoding overlaps
// with COPY within a page, and the first chunk of page k+1 is read while
// the last chunks of page k are COPYed. Without the overlap the origin sat
// idle while PostgreSQL COPYed a page, and PostgreSQL while the origin
// produced the next one: a bubble per page, about a third of a
// 200,000-feature poll (scripts/bench.sh gdal). Without the chunks a page
// was held whole, and one unpaged response or an endless feature stream
// took the process's memory.
//
// A page is all or nothing even so: StagePage stages it in one
// transaction, and a body cut short aborts its COPY, so no row of an
// unfinished page is ever visible to an apply, a resume or a held accept.
// A slow COPY now slows the read of the body (by at most chunksQueued
// chunks), which is the price of bounded memory.
//
// pageStager also enforces the feed's per-poll limits (PollFeatures,
// PollBytes) as the features arrive, so that an endless stream stops at
// the limit rather than at the end of its page.
type pageStager struct {
	ctx    context.Context // the poll's: staging outlives the page's attempt
	store  Store
	pollID int64
	limits feature.Limits // defaults filled in
	// chunk bounds (chunkFeatures, chunkBytes; smaller in tests).
	chunkFeatures int
	chunkBytes    int64
	// staging is the page being staged; nil when none is.
	staging *pageStaging
	// pool holds the slices of chunks already staged, for reuse.
	pool chan []feature.Feature
	// features and bytes count the poll's pages read to their end so far
	// (a page's failed attempts do not count; its retry reads it again).
	features, bytes int64
	// waiting signals the page whose staging the stager starts waiting
	// for (a test signal: nothing in production).
	waiting testSignal[int]
	// secrets are the feed's own credentials (nil: it has none), scrubbed
	// from every feature's id and properties before it is staged.
	secrets *redact.Secrets
}

// pageStaging is one page's StagePage, fed with chunks.
type pageStaging struct {
	page     int                 // the page's index
	chunks   chan queuedChunk    // closed after the page's last chunk
	abort    chan struct{}       // closed when the page's read failed
	finished chan struct{}       // closed when StagePage returned, err set
	ended    context.Context     // cancelled when StagePage returned
	room     *semaphore.Weighted // the bytes of the chunks handed over and not yet COPYed
	err      error
}

// queuedChunk is a chunk handed to the COPY, and the room it holds.
type queuedChunk struct {
	features []feature.Feature
	weight   int64
}

func newPageStager(ctx context.Context, store Store, pollID int64, limits feature.Limits, secrets *redact.Secrets) *pageStager {
	return &pageStager{ctx: ctx, store: store, pollID: pollID, limits: limits.WithDefaults(), secrets: secrets,
		chunkFeatures: chunkFeatures, chunkBytes: chunkBytes,
		pool: make(chan []feature.Feature, chunksQueued+2)}
}

// resumeAt prepares the stager for a poll that continues at firstPage: the
// features its staged pages hold count against limits.poll_features, so a
// poll parked and resumed is bounded like one that was not. (Their bytes
// are not recorded: limits.poll_bytes counts from the page it resumes at.)
func (s *pageStager) resumeAt(firstPage int) error {
	if firstPage == 0 {
		return nil
	}
	n, err := s.store.StagedFeatures(s.ctx, s.pollID)
	if err != nil {
		return fmt.Errorf("counting the staged features of poll %d: %w", s.pollID, err)
	}
	s.features = n
	return nil
}

// bodyCounter is implemented by the wfs client's FeatureReader: the
// decompressed body bytes of the page read so far.
type bodyCounter interface {
	BodyBytes() int64
}

// errPageAbandoned ends the COPY of a page whose read failed: its
// transaction rolls back, and the fetch reports the read's own error.
var errPageAbandoned = errors.New("feeds: the page's read failed before its end")

// handle is the fetcher's PageFunc: it reads the page in chunks and stages
// it. It waits for the previous page's staging once the page's first chunk
// is read, and returns once the page's last chunk is handed over, so the
// next page's fetch overlaps with the end of this page's staging. An error
// reading the page is the origin's and returned as is; a failed staging of
// this page or the previous one is returned here, which ends the fetch; so
// is an exceeded per-poll limit (*feature.LimitError), the feed's error.
func (s *pageStager) handle(ctx context.Context, page source.Page, features feature.FeatureReader) error {
	r := &chunkSource{s: s, page: page, features: features}
	r.body, _ = features.(bodyCounter)
	chunk, size, end, err := r.read()
	if err != nil {
		s.recycle(chunk)
		return err
	}
	if err := s.wait(); err != nil {
		s.recycle(chunk)
		return err
	}
	st := s.start(page)
	// Waiting for room ends with the attempt or with StagePage.
	roomCtx, cancelRoom := context.WithCancel(ctx)
	defer cancelRoom()
	defer context.AfterFunc(st.ended, cancelRoom)()
	for {
		if len(chunk) > 0 {
			weight := min(size, queuedBytes(s.chunkBytes))
			sent := false
			if st.room.Acquire(roomCtx, weight) == nil {
				select {
				case st.chunks <- queuedChunk{chunk, weight}:
					sent = true
				case <-st.finished:
				case <-ctx.Done():
				}
			}
			switch {
			case sent:
			case isDone(st.finished):
				// StagePage stopped reading: it failed (the poll is not
				// running, the database went away).
				s.recycle(chunk)
				close(st.abort)
				if err := s.wait(); err != nil {
					return err
				}
				return fmt.Errorf("feeds: staging page %d of poll %d ended before the page did", page.Index, s.pollID)
			default:
				// The attempt ended while the COPY was not keeping up.
				s.recycle(chunk)
				close(st.abort)
				_ = s.wait()
				return fmt.Errorf("feeds: staging page %d of poll %d: %w", page.Index, s.pollID, ctx.Err())
			}
		} else {
			s.recycle(chunk)
		}
		if end {
			close(st.chunks)
			s.features += r.n
			s.bytes += r.bodyBytes()
			return nil
		}
		if chunk, size, end, err = r.read(); err != nil {
			s.recycle(chunk)
			close(st.abort)
			_ = s.wait() // errPageAbandoned, or an earlier failure of the page
			return err
		}
	}
}

// start starts staging page from the chunks that handle sends.
func (s *pageStager) start(page source.Page) *pageStaging {
	ended, end := context.WithCancel(context.Background())
	st := &pageStaging{
		page:     page.Index,
		chunks:   make(chan queuedChunk, chunksQueued),
		abort:    make(chan struct{}),
		finished: make(chan struct{}),
		ended:    ended,
		room:     semaphore.NewWeighted(queuedBytes(s.chunkBytes)),
	}
	s.staging = st
	go func() {
		defer end() // after finished is closed: a wait for room that ends with it finds it so
		defer close(st.finished)
		// The poll's own recover cannot see this goroutine: a panic here
		// fails the page, not the process.
		defer func() {
			if p := recover(); p != nil {
				st.err = fmt.Errorf("feeds: staging page %d of poll %d panicked: %v", page.Index, s.pollID, p)
			}
		}()
		reader := &chunkReader{ctx: s.ctx, chunks: st.chunks, abort: st.abort, room: st.room, recycle: s.recycle, link: page.Next}
		_, st.err = s.store.StagePage(s.ctx, s.pollID, page.Index, reader)
	}()
	return st
}

// recycle keeps a staged chunk's slice for the next chunk, dropping its
// features (geometries and properties) for the collector.
func (s *pageStager) recycle(chunk []feature.Feature) {
	if cap(chunk) == 0 {
		return
	}
	clear(chunk[:cap(chunk)])
	select {
	case s.pool <- chunk[:0]:
	default:
	}
}

// wait waits for the page being staged, if any, and returns its error.
func (s *pageStager) wait() error {
	st := s.staging
	if st == nil {
		return nil
	}
	s.staging = nil
	s.waiting.signal(st.page)
	<-st.finished
	return st.err
}

// finish waits for the last page's staging and combines its outcome with
// the fetch's: a page that failed to stage is the poll's error even when the
// fetch failed after it (the poll must not park with a checkpoint past a page
// that was never staged).
func (s *pageStager) finish(fetchErr error) error {
	if err := s.wait(); err != nil {
		if fetchErr != nil && !errors.Is(fetchErr, err) {
			// Not wrapped: a refusal after it must not park the poll.
			return fmt.Errorf("%w (the fetch then stopped: %v)", err, fetchErr)
		}
		return err
	}
	return fetchErr
}

// chunkSource reads one page's features into chunks, counting them against
// the poll's limits.
type chunkSource struct {
	s        *pageStager
	page     source.Page
	features feature.FeatureReader
	body     bodyCounter // nil when the reader does not count its body
	// n counts the features read from the page so far.
	n int64
}

// read returns the page's next chunk, its size (as featureSize estimates
// it), and whether the page ended with it. A FeatureReader's Geometry and
// Properties are fresh at each call, so a shallow copy keeps a feature.
func (r *chunkSource) read() (chunk []feature.Feature, size int64, end bool, err error) {
	s := r.s
	select {
	case chunk = <-s.pool:
	default:
		chunk = make([]feature.Feature, 0, min(s.chunkFeatures, chunkStartFeatures))
	}
	for len(chunk) < s.chunkFeatures && size < s.chunkBytes {
		f, err := r.features.Next()
		if err == io.EOF {
			return chunk, size, true, r.checkBytes()
		}
		if err != nil {
			return chunk, size, false, err
		}
		r.n++
		if n := s.features + r.n; n > s.limits.PollFeatures {
			return chunk, size, false, &feature.LimitError{Name: "poll_features", Max: s.limits.PollFeatures,
				Where: fmt.Sprintf("page %d (%s) brought the poll to %d features", r.page.Index, r.page.URL, n)}
		}
		if err := r.checkBytes(); err != nil {
			return chunk, size, false, err
		}
		if s.secrets != nil {
			scrubFeature(s.secrets, f)
		}
		chunk = append(chunk, *f)
		size += featureSize(f)
	}
	return chunk, size, false, nil
}

// checkBytes fails when the poll's bodies so far exceed PollBytes.
func (r *chunkSource) checkBytes() error {
	s := r.s
	if n := s.bytes + r.bodyBytes(); n > s.limits.PollBytes {
		return &feature.LimitError{Name: "poll_bytes", Max: s.limits.PollBytes,
			Where: fmt.Sprintf("page %d (%s) brought the poll to %d bytes", r.page.Index, r.page.URL, n)}
	}
	return nil
}

// bodyBytes is the page's body bytes read so far (0 when not counted).
func (r *chunkSource) bodyBytes() int64 {
	if r.body == nil {
		return 0
	}
	return r.body.BodyBytes()
}

// featureSize estimates the memory a decoded feature holds: its id, its
// properties' JSON and its coordinates, plus the structures around them.
func featureSize(f *feature.Feature) int64 {
	return 128 + int64(len(f.ID)+len(f.Properties)) + geometrySize(f.Geometry)
}

// geometrySize estimates a geometry's coordinates and ring ends in bytes.
// A collection is summed over its members: FlatCoords panics on one.
func geometrySize(g geom.T) int64 {
	switch g := g.(type) {
	case nil:
		return 0
	case *geom.GeometryCollection:
		if g == nil {
			return 0
		}
		var n int64
		for _, m := range g.Geoms() {
			n += 64 + geometrySize(m)
		}
		return n
	}
	return 8 * int64(len(g.FlatCoords())+len(g.Ends())+len(g.Endss()))
}

// chunkReader is the FeatureReader that StagePage reads a page from: the
// chunks handle sends, in order, until the page ends (io.EOF) or its read
// fails (errPageAbandoned). It runs in the staging goroutine; a chunk is
// recycled once StagePage asks for the feature after its last, by which
// time it has encoded them all.
type chunkReader struct {
	ctx     context.Context
	chunks  <-chan queuedChunk
	abort   <-chan struct{}
	room    *semaphore.Weighted // released as each chunk is done with
	recycle func([]feature.Feature)
	cur     queuedChunk
	next    int
	// link is the page's source.Page.Next (nil for kinds that page by
	// offset): the store records it with the page, for a resume.
	link func() string
}

// NextLink returns the page's next link once the page ended (the store
// asks after its last feature), and whether the kind pages by links.
func (r *chunkReader) NextLink() (string, bool) {
	if r.link == nil {
		return "", false
	}
	return r.link(), true
}

func (r *chunkReader) Next() (*feature.Feature, error) {
	for r.next == len(r.cur.features) {
		if r.cur.features != nil {
			r.recycle(r.cur.features)
			r.room.Release(r.cur.weight)
			r.cur = queuedChunk{}
		}
		select {
		case c, ok := <-r.chunks:
			if !ok {
				return nil, io.EOF
			}
			r.cur, r.next = c, 0
		case <-r.abort:
			return nil, errPageAbandoned
		case <-r.ctx.Done():
			return nil, r.ctx.Err()
		}
	}
	r.next++
	return &r.cur.features[r.next-1], nil
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// scrubFeature replaces the feed's secrets in f's id and properties by
// redact.Marker: a server that echoes the credential a request carried
// into its data (a token in a row's value, an API key in an id) must not
// have it stored, as in any other text ingestd writes. A feature without
// one costs a lower-cased copy and a search per distinct prefix of the
// secrets' spellings (redact.BenchmarkData: 0.8 us for 500 bytes of
// properties, no allocation), only for a feed that has secrets.
func scrubFeature(secrets *redact.Secrets, f *feature.Feature) {
	if id, changed := secrets.ID(f.ID); changed {
		f.ID = id
	}
	if props, changed := secrets.Data(f.Properties, true); changed {
		f.Properties = props
	}
}

// layerSecrets are the credentials a layer's requests carry (its headers'
// and its url's, as config.Config.Secrets finds them for the whole
// configuration), for scrubFeature; nil when there are none.
func layerSecrets(l source.Layer) *redact.Secrets {
	var values []string
	for name, v := range l.Headers {
		values = append(values, redact.HeaderSecrets(name, v)...)
	}
	values = append(values, redact.URLSecrets(l.URL)...)
	s := redact.NewSecrets(values...)
	if s.Len() == 0 {
		return nil
	}
	return s
}
