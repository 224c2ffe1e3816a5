package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"golang.org/x/term"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/redact"
)

// progressEvery is how often the progress line is redrawn: often enough to
// look alive, seldom enough to cost nothing.
const progressEvery = 250 * time.Millisecond

// clearLine returns a terminal's cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// progress draws one line on a terminal that says how far a one-off
// command's work is, as ogr2ogr -progress does: the features staged, the
// requests (responses) read, their bytes, the rate, the time so far and the request being
// fetched. It counts at the HTTP client (a request of a layer's discovery counts as one of its pages do), so every kind of feed reports
// alike. It draws nothing unless its output is a terminal (newProgress
// returns nil otherwise, and a nil *progress does nothing), and the log
// lines written meanwhile (through Writer) clear it first, so that they
// never end up glued to it.
type progress struct {
	w        io.Writer
	width    func() int
	start    time.Time
	features atomic.Int64
	pages    atomic.Int64
	bytes    atomic.Int64
	fetch    atomic.Pointer[string]

	mu    sync.Mutex // serializes drawing with the log's writes
	drawn bool
	stop  chan struct{}
	done  chan struct{}
}

// newProgress returns a progress line on w when w is a terminal and quiet
// is not set; nil otherwise.
func newProgress(w io.Writer, quiet bool) *progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newProgressTo(f, func() int {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
		return 80
	})
}

// newProgressTo draws on w, whose width in columns width tells.
func newProgressTo(w io.Writer, width func() int) *progress {
	return &progress{w: w, width: width, start: time.Now()}
}

// Start redraws the line until Stop.
func (p *progress) Start() {
	if p == nil {
		return
	}
	p.start = time.Now()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
}

// Stop ends the redraws and erases the line, so that the command's own
// output starts on a clean line.
func (p *progress) Stop() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, clearLine)
		p.drawn = false
	}
}

// draw writes the line as it stands.
func (p *progress) draw() {
	line := p.line(time.Now())
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, clearLine+line)
	p.drawn = true
}

// line is the progress as text, at most width-1 columns: the figures
// first, then as much of the request's end (its page parameters) as fits.
func (p *progress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	n := p.bytes.Load()
	rate := ""
	if s := elapsed.Seconds(); s > 0 {
		rate = ", " + humanize.Bytes(uint64(float64(n)/s)) + "/s"
	}
	line := fmt.Sprintf("%s features, %d requests, %s%s, %s", humanize.Comma(p.features.Load()), p.pages.Load(),
		humanize.Bytes(uint64(n)), rate, elapsed.Round(time.Second))
	w := p.width() - 1
	f := p.fetch.Load()
	const sep = " · "
	room := w - utf8.RuneCountInString(line) - utf8.RuneCountInString(sep)
	if f == nil || room < 8 {
		if r := []rune(line); len(r) > w && w > 0 {
			return string(r[:w])
		}
		return line
	}
	// The request's end (its offset or page) says the most: cut its start.
	fetch := []rune(*f)
	if len(fetch) > room {
		fetch = append([]rune("…"), fetch[len(fetch)-(room-1):]...)
	}
	return line + sep + string(fetch)
}

// Writer is w, clearing the progress line before each write (the log).
func (p *progress) Writer(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return progressWriter{p: p, w: w}
}

type progressWriter struct {
	p *progress
	w io.Writer
}

func (pw progressWriter) Write(b []byte) (int, error) {
	pw.p.mu.Lock()
	defer pw.p.mu.Unlock()
	if pw.p.drawn {
		io.WriteString(pw.p.w, clearLine)
		pw.p.drawn = false
	}
	return pw.w.Write(b)
}

// Transport counts what rt fetches: each response read to its end or
// closed is a page, its body's bytes are counted as they are read, and the
// request last sent is the one shown (redacted).
func (p *progress) Transport(rt http.RoundTripper) http.RoundTripper {
	if p == nil {
		return rt
	}
	return progressTransport{p: p, rt: rt}
}

type progressTransport struct {
	p  *progress
	rt http.RoundTripper
}

func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	what := req.Method + " " + redact.URL(req.URL.String())
	t.p.fetch.Store(&what)
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &progressBody{ReadCloser: resp.Body, p: t.p}
	return resp, nil
}

// progressBody counts a response body's bytes, and the page once.
type progressBody struct {
	io.ReadCloser
	p    *progress
	once sync.Once
}

func (b *progressBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.p.bytes.Add(int64(n))
	if err == io.EOF {
		b.once.Do(func() { b.p.pages.Add(1) })
	}
	return n, err
}

func (b *progressBody) Close() error {
	b.once.Do(func() { b.p.pages.Add(1) })
	return b.ReadCloser.Close()
}

// Store counts the features store stages (as StagePage reads them, so a
// page's features show while it streams) for the line; every other method
// is store's own.
func (p *progress) Store(store *postgis.Store) feeds.Store {
	if p == nil {
		return store
	}
	return progressStore{Store: store, p: p}
}

type progressStore struct {
	*postgis.Store
	p *progress
}

func (s progressStore) StagePage(ctx context.Context, pollID int64, page int, features feature.FeatureReader) (int, error) {
	return s.Store.StagePage(ctx, pollID, page, progressFeatures{r: features, p: s.p})
}

// progressFeatures counts the features read from r.
type progressFeatures struct {
	r feature.FeatureReader
	p *progress
}

func (f progressFeatures) Next() (*feature.Feature, error) {
	ft, err := f.r.Next()
	if err == nil {
		f.p.features.Add(1)
	}
	return ft, err
}
