package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ingestd/ingestd/wfs"
)

// pageStager stages a poll's pages one at a time and in order, each in a
// goroutine of its own, so that fetching and decoding page k+1 overlaps with
// staging page k. Without it the origin sat idle while PostgreSQL COPYed a
// page, and PostgreSQL while the origin produced the next one: a bubble per
// page, about a third of a 200,000-feature poll (scripts/bench.sh gdal).
//
// A page is read into memory before it is staged — its features only, so
// memory is bounded by two pages (one staging, one arriving) whatever the
// size of the layer — and the response is drained at the network's pace, so
// a slow COPY never holds an origin's connection open.
type pageStager struct {
	ctx    context.Context // the poll's: staging outlives the page's attempt
	store  Store
	pollID int64
	// done reports the outcome of the page being staged; nil when none is.
	done chan error
	// pool holds the slices of pages already staged, for reuse.
	pool chan []wfs.Feature
}

func newPageStager(ctx context.Context, store Store, pollID int64) *pageStager {
	return &pageStager{ctx: ctx, store: store, pollID: pollID, pool: make(chan []wfs.Feature, 2)}
}

// handle is the fetcher's PageFunc: it reads the page, waits for the
// previous page's staging, and starts this page's. An error reading the page
// is the origin's and returned as is; a failed staging of the previous page
// is returned here, which ends the fetch.
func (s *pageStager) handle(_ context.Context, page wfs.Page, features wfs.FeatureReader) error {
	var batch []wfs.Feature
	select {
	case batch = <-s.pool:
	default:
	}
	batch, err := readPage(batch[:0], features)
	if err != nil {
		return err
	}
	if err := s.wait(); err != nil {
		return err
	}
	done := make(chan error, 1)
	s.done = done
	go func() {
		_, err := s.store.StagePage(s.ctx, s.pollID, page.Index, &sliceReader{features: batch})
		clear(batch) // drop the geometries and properties for the collector
		select {
		case s.pool <- batch:
		default:
		}
		done <- err
	}()
	return nil
}

// wait waits for the page being staged, if any, and returns its error.
func (s *pageStager) wait() error {
	if s.done == nil {
		return nil
	}
	err := <-s.done
	s.done = nil
	return err
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

// readPage appends the page's features to batch. A FeatureReader's Geometry
// and Properties are fresh at each call, so a shallow copy keeps a feature.
func readPage(batch []wfs.Feature, features wfs.FeatureReader) ([]wfs.Feature, error) {
	for {
		f, err := features.Next()
		if err == io.EOF {
			return batch, nil
		}
		if err != nil {
			return batch, err
		}
		batch = append(batch, *f)
	}
}

// sliceReader is a FeatureReader over features in memory.
type sliceReader struct {
	features []wfs.Feature
	next     int
}

func (r *sliceReader) Next() (*wfs.Feature, error) {
	if r.next == len(r.features) {
		return nil, io.EOF
	}
	r.next++
	return &r.features[r.next-1], nil
}
