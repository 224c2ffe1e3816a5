package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
)

// The progress line counts what the HTTP client fetched (pages, bytes,
// rate) and shows the request in flight, redacted, within the terminal's
// width and keeping the request's end; a log line clears it first.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 1500))
	}))
	t.Cleanup(ts.Close)
	var out bytes.Buffer
	p := newProgressTo(&out, func() int { return 200 })
	client := &http.Client{Transport: p.Transport(http.DefaultTransport)}
	for _, q := range []string{"?offset=0&token=s3cr3t", "?offset=1000&token=s3cr3t"} {
		resp, err := client.Get(ts.URL + "/layer/query" + q)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	line := p.line(p.start.Add(2 * time.Second))
	for _, want := range []string{"0 features, 2 requests, 3.0 kB, 1.5 kB/s, 2s", "GET " + ts.URL + "/layer/query?offset=1000&token=REDACTED"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	p.width = func() int { return 80 }
	if short := p.line(p.start.Add(2 * time.Second)); utf8.RuneCountInString(short) != 79 ||
		!strings.HasPrefix(short, "0 features, 2 requests") || !strings.HasSuffix(short, "=1000&token=REDACTED") {
		t.Errorf("narrow line %q, want 79 columns with the figures and the request's end", short)
	}

	p.draw()
	log := p.Writer(&out)
	io.WriteString(log, "{\"msg\":\"poll done\"}\n")
	if got := out.String(); !strings.HasPrefix(got, clearLine+"0 features, 2 requests") || !strings.HasSuffix(got, clearLine+"{\"msg\":\"poll done\"}\n") {
		t.Errorf("drawn then logged: %q", got)
	}
}

// Without a terminal (a pipe, a file, a test's buffer) or with -quiet
// there is no progress line.
func TestNoProgressWithoutTerminal(t *testing.T) {
	t.Parallel()
	if p := newProgress(&bytes.Buffer{}, false); p != nil {
		t.Error("a progress line on a buffer")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if p := newProgress(w, false); p != nil {
		t.Error("a progress line on a pipe")
	}
	var nilProgress *progress
	nilProgress.Start()
	nilProgress.Stop()
	if nilProgress.Writer(w) != io.Writer(w) {
		t.Error("a nil progress changed the log's writer")
	}
}

// sliceReader reads its features, then io.EOF.
type sliceReader []*feature.Feature

func (r *sliceReader) Next() (*feature.Feature, error) {
	if len(*r) == 0 {
		return nil, io.EOF
	}
	f := (*r)[0]
	*r = (*r)[1:]
	return f, nil
}

// The features a page stages are counted as they are read, before the
// page ends.
func TestProgressCountsFeatures(t *testing.T) {
	t.Parallel()
	p := newProgressTo(io.Discard, func() int { return 200 })
	r := progressFeatures{r: &sliceReader{{ID: "a"}, {ID: "b"}, {ID: "c"}}, p: p}
	for i := 1; ; i++ {
		if _, err := r.Next(); err != nil {
			break
		}
		if got := p.features.Load(); got != int64(i) {
			t.Fatalf("after %d features read, %d counted", i, got)
		}
	}
	if line := p.line(p.start); !strings.HasPrefix(line, "3 features, 0 requests") {
		t.Errorf("line %q", line)
	}
}
