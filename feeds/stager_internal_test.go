package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/wfs"
)

// stagingRecorder is a Store whose StagePage records pages (slowly, so
// that overlap would show) and fails the pages it is told to.
type stagingRecorder struct {
	Store   // only StagePage is called
	mu      sync.Mutex
	pages   []string
	active  int
	overlap bool
	fail    map[int]error
}

func (s *stagingRecorder) StagePage(_ context.Context, _ int64, page int, features wfs.FeatureReader) (int, error) {
	s.mu.Lock()
	s.active++
	s.overlap = s.overlap || s.active > 1
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.active--; s.mu.Unlock() }()
	time.Sleep(5 * time.Millisecond)
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

func (p *pageOf) Next() (*wfs.Feature, error) {
	if len(*p) == 0 {
		return nil, io.EOF
	}
	f := &wfs.Feature{ID: (*p)[0]}
	*p = (*p)[1:]
	return f, nil
}

// TestPageStagerStagesInOrder: pages are staged one at a time, in order,
// with the features each page held.
func TestPageStagerStagesInOrder(t *testing.T) {
	store := &stagingRecorder{}
	s := newPageStager(t.Context(), store, 1)
	for i := range 5 {
		p := pageOf{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}
		if err := s.handle(t.Context(), wfs.Page{Index: i}, &p); err != nil {
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
	s := newPageStager(t.Context(), store, 1)
	p0 := pageOf{"a"}
	if err := s.handle(t.Context(), wfs.Page{Index: 0}, &p0); err != nil {
		t.Fatal(err)
	}
	bad := &cutReader{err: cut}
	if err := s.handle(t.Context(), wfs.Page{Index: 9}, bad); !errors.Is(err, cut) {
		t.Fatalf("cut page: %v, want the reader's error", err)
	}
	p1 := pageOf{"b"}
	if err := s.handle(t.Context(), wfs.Page{Index: 1}, &p1); err != nil {
		t.Fatal(err)
	}
	p2 := pageOf{"c"}
	if err := s.handle(t.Context(), wfs.Page{Index: 2}, &p2); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("page after a failed staging: %v, want the staging error", err)
	}

	store = &stagingRecorder{fail: map[int]error{0: errors.New("disk full")}}
	s = newPageStager(t.Context(), store, 1)
	p0 = pageOf{"a"}
	if err := s.handle(t.Context(), wfs.Page{Index: 0}, &p0); err != nil {
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

func (r *cutReader) Next() (*wfs.Feature, error) { return nil, r.err }
