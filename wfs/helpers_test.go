package wfs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// testRegistry is a breaker registry that retries fast and never paces, so
// tests exercise the real retry path without sleeping.
func testRegistry(t testing.TB, attempts int) *breaker.Registry {
	t.Helper()
	p := breaker.DefaultPolicy()
	p.MaxAttempts = attempts
	p.BackoffBase = time.Millisecond
	p.BackoffMax = 2 * time.Millisecond
	p.RateLimit = 0
	p.RetryBudgetMin = 100
	p.ConsecutiveFailures = 1000
	p.FailureRatio = 0
	return breaker.NewRegistry(breaker.Config{Policy: p}, nil)
}

func newTestClient(t testing.TB, attempts int, opts ...Option) *Client {
	t.Helper()
	return NewClient(&http.Client{}, testRegistry(t, attempts), nil, opts...)
}

// fixtureWFS serves n generated features the way GeoServer pages them:
// startIndex/count (2.0.0) or startIndex/maxFeatures (1.x), numberMatched
// first or omitted. It records the queries it saw.
type fixtureWFS struct {
	n             int
	withMatched   bool
	ignoreStart   bool // a broken server that always serves from 0
	ignoreCount   bool // a broken server that serves everything
	withoutIDs    bool
	mu            sync.Mutex
	queries       []string
	serverSideErr map[int]int // start index → how many times to cut the body first
}

func (f *fixtureWFS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.RawQuery)
	f.mu.Unlock()
	start, _ := strconv.Atoi(q.Get("startIndex"))
	count, err := strconv.Atoi(q.Get("count"))
	if err != nil {
		count, err = strconv.Atoi(q.Get("maxFeatures"))
	}
	if err != nil || f.ignoreCount {
		count = f.n
	}
	if f.ignoreStart {
		start = 0
	}
	end := min(start+count, f.n)
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection",`)
	if f.withMatched {
		fmt.Fprintf(&b, `"numberMatched":%d,"numberReturned":%d,`, f.n, max(0, end-start))
	}
	b.WriteString(`"features":[`)
	for i := start; i < end; i++ {
		if i > start {
			b.WriteByte(',')
		}
		id := fmt.Sprintf(`"id":"f.%d",`, i)
		if f.withoutIDs {
			id = ""
		}
		fmt.Fprintf(&b, `{"type":"Feature",%s"geometry":{"type":"Point","coordinates":[%d,%d]},"properties":{"n":%d}}`, id, i, i, i)
	}
	b.WriteString(`]}`)
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	cut := f.serverSideErr[start] > 0
	if cut {
		f.serverSideErr[start]--
	}
	f.mu.Unlock()
	if cut {
		cutConnection(w, b.String()[:b.Len()/2], b.Len())
		return
	}
	io.WriteString(w, b.String())
}

// cutConnection sends headers promising length bytes and part of the body,
// then closes the TCP connection: a server dying mid-response.
func cutConnection(w http.ResponseWriter, part string, length int) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", length, part)
	buf.Flush()
}

// collect is a PageFunc that copies features out, all-or-nothing per page
// as the real staging does.
type collect struct {
	mu    sync.Mutex
	pages map[int][]string
	calls int
}

func (c *collect) handle(ctx context.Context, p source.Page, fr feature.FeatureReader) error {
	var ids []string
	for {
		f, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("staging page %d: %w", p.Index, err)
		}
		ids = append(ids, f.ID+"|"+string(f.Properties))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.pages == nil {
		c.pages = map[int][]string{}
	}
	c.pages[p.Index] = ids
	return nil
}

func (c *collect) total() int {
	n := 0
	for _, ids := range c.pages {
		n += len(ids)
	}
	return n
}

func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// setSettings changes l's wfs settings by fn.
func setSettings(l *source.Layer, fn func(*Settings)) {
	s := settingsOf(*l)
	fn(&s)
	l.Settings = s
}
