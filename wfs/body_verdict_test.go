package wfs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/errtext"
	"github.com/ingestd/ingestd/source"
)

// verdictClient is a Client whose breaker opens on the first failure charged
// to the origin and that retries up to three times, so that a test sees
// both whose fault a body was (the breaker's counts, the requests made) and
// what the error said.
func verdictClient(t *testing.T) (*Client, *breaker.Registry) {
	t.Helper()
	p := breaker.DefaultPolicy()
	p.ConsecutiveFailures, p.FailureRatio, p.MaxAttempts, p.RateLimit = 1, 0, 3, 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	return NewClient(nil, reg, nil), reg
}

func onlyOrigin(reg *breaker.Registry) breaker.OriginState {
	for _, s := range reg.Snapshot() {
		return s
	}
	return breaker.OriginState{}
}

// charged reports whether a failure was charged to the origin: its breaker
// opened (which resets the counts) or counts one.
func charged(s breaker.OriginState) bool {
	return s.State != breaker.StateClosed || s.Counts.Failures > 0
}

// bodyServer answers every request with the response write makes, and
// counts the requests.
func bodyServer(t *testing.T, write func(w http.ResponseWriter)) (*source.Layer, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		write(w)
	}))
	return &source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: srv.URL + "/layer.geojson"}, &n
}

func plainBody(body string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		_, _ = w.Write([]byte(body))
	}
}

// TestJSONValuesAreTheFeeds: a whole, well-formed JSON document that is not
// a FeatureCollection (null, a boolean, a number, a string, an empty array,
// another object) is the feed's content error: one request, the breaker
// closed with no failure, an error naming the cause and not "unrecognized".
func TestJSONValuesAreTheFeeds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`null`, "document is JSON null, not a FeatureCollection"},
		{" \r\n null \n", "JSON null"},
		{"\xef\xbb\xbfnull", "JSON null"},
		{`true`, "the JSON boolean true"},
		{`false`, "the JSON boolean false"},
		{`42`, "the JSON number 42"},
		{`-1.5e3`, "the JSON number -1.5e3"},
		{`0`, "the JSON number 0"},
		{`"Service Unavailable"`, `a JSON string "Service Unavailable"`},
		{`""`, `a JSON string ""`},
		{`[]`, "not a JSON object"},
		{`[1,2,3]`, "not a JSON object"},
		{`{}`, "neither a FeatureCollection nor a Feature"},
		{`{"type":"Topology","objects":{}}`, "not a FeatureCollection"},
		{`{"error":{"code":500,"message":"x"}}`, "neither a FeatureCollection nor a Feature"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			t.Parallel()
			layer, requests := bodyServer(t, plainBody(tc.body))
			c, reg := verdictClient(t)
			_, err := c.Fetch(t.Context(), *layer, 0, (&collect{}).handle)
			var de *feature.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err %v, want a *DecodeError (the feed's content)", err)
			}
			if !strings.Contains(err.Error(), tc.want) || errors.Is(err, httpcall.ErrUnrecognizedBody) {
				t.Errorf("err %q, want it to say %q", err, tc.want)
			}
			var re *breaker.RetryError
			if errors.As(err, &re) {
				t.Errorf("retried as the origin's failure: %v", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			if s := onlyOrigin(reg); charged(s) {
				t.Errorf("breaker %s with %d failures, want closed with none", s.State, s.Counts.Failures)
			}
		})
	}
}

// TestTextPagesStayTheOrigins: a body that only starts like a JSON value (a
// text error page, a value cut short, two values, a string longer than the
// sniffed bytes) is not a whole JSON document: unrecognized, the origin's
// failure, retried and charged to its breaker.
func TestTextPagesStayTheOrigins(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		"503 Service Unavailable",
		"Internal Server Error",
		"nul",
		"tru",
		`"unterminated`,
		"12 34",
		"null, null",
		`"` + strings.Repeat("x", httpcall.SniffLen) + `"`,
		"42" + strings.Repeat(" ", httpcall.SniffLen) + "and then text",
	} {
		t.Run(errtext.Head(body, 20), func(t *testing.T) {
			t.Parallel()
			layer, requests := bodyServer(t, plainBody(body, "Content-Type", "text/plain"))
			c, reg := verdictClient(t)
			_, err := c.Fetch(t.Context(), *layer, 0, (&collect{}).handle)
			if !errors.Is(err, httpcall.ErrUnrecognizedBody) {
				t.Fatalf("err %v, want httpcall.ErrUnrecognizedBody", err)
			}
			if n := requests.Load(); n < 1 || !charged(onlyOrigin(reg)) {
				t.Errorf("%d requests, breaker %+v: want the failure charged to the origin", n, onlyOrigin(reg))
			}
		})
	}
}

func gzipTimes(t *testing.T, b []byte, times int) []byte {
	t.Helper()
	for range times {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		b = buf.Bytes()
	}
	return b
}

const threeFeatures = `{"type":"FeatureCollection","features":[` +
	`{"type":"Feature","id":"a","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}},` +
	`{"type":"Feature","id":"b","geometry":{"type":"Point","coordinates":[3,4]},"properties":{}},` +
	`{"type":"Feature","id":"c","geometry":{"type":"Point","coordinates":[5,6]},"properties":{}}]}`

// TestLayeredGzipLoads: a body gzipped twice or three times over (a .gz file
// gzipped again on the way out), labelled or not, loads, with a warning
// that says so; four layers are refused with a message naming them, as the
// feed's error; and each layer is bounded by the body limit.
func TestLayeredGzipLoads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		times    int
		labelled bool
	}{{1, true}, {2, true}, {3, true}, {2, false}, {3, false}} {
		t.Run(fmt.Sprintf("%dx labelled=%t", tc.times, tc.labelled), func(t *testing.T) {
			t.Parallel()
			var hdr []string
			if tc.labelled {
				hdr = []string{"Content-Encoding", "gzip"}
			}
			layer, _ := bodyServer(t, plainBody(string(gzipTimes(t, []byte(threeFeatures), tc.times)), hdr...))
			c, _ := verdictClient(t)
			var col collect
			stats, err := c.Fetch(t.Context(), *layer, 0, col.handle)
			if err != nil || col.total() != 3 {
				t.Fatalf("err %v, %d features, want 3", err, col.total())
			}
			warned := strings.Contains(strings.Join(stats.Warnings, "\n"), fmt.Sprintf("gzipped %d times over", tc.times))
			if warned != (tc.times > 1) {
				t.Errorf("warnings %q", stats.Warnings)
			}
		})
	}
	t.Run("4x", func(t *testing.T) {
		t.Parallel()
		layer, requests := bodyServer(t, plainBody(string(gzipTimes(t, []byte(threeFeatures), 4)), "Content-Encoding", "gzip"))
		c, reg := verdictClient(t)
		_, err := c.Fetch(t.Context(), *layer, 0, (&collect{}).handle)
		if err == nil || !strings.Contains(err.Error(), "gzipped more than 3 times over") {
			t.Fatalf("err %v, want it to name the layers", err)
		}
		if n, s := requests.Load(), onlyOrigin(reg); n != 1 || charged(s) {
			t.Errorf("%d requests, breaker %+v: want one request, the feed's error", n, s)
		}
	})
	t.Run("limit per layer", func(t *testing.T) {
		t.Parallel()
		// The middle layer is 20,000 empty gzip members (about 400 KB)
		// before the data: the body's own limit sees only three features,
		// but the layer above the data is bounded as well.
		var middle []byte
		empty := gzipTimes(t, nil, 1)
		for range 20_000 {
			middle = append(middle, empty...)
		}
		middle = append(middle, gzipTimes(t, []byte(threeFeatures), 1)...)
		layer, _ := bodyServer(t, plainBody(string(gzipTimes(t, middle, 1)), "Content-Encoding", "gzip"))
		layer.Limits.BodyBytes = 64 << 10
		c, reg := verdictClient(t)
		_, err := c.Fetch(t.Context(), *layer, 0, (&collect{}).handle)
		var le *feature.LimitError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), "gzip layer 1") {
			t.Fatalf("err %v, want a *LimitError in gzip layer 1", err)
		}
		if s := onlyOrigin(reg); charged(s) {
			t.Errorf("breaker %+v: a limit is the feed's", s)
		}
	})
}

// rawServer answers every request with raw bytes written on the hijacked
// connection, then closes it, with a TCP reset when reset is set.
func rawServer(t *testing.T, raw string, reset bool) (*source.Layer, *atomic.Int64) {
	t.Helper()
	return bodyServer(t, func(w http.ResponseWriter) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	})
}

// TestReadErrorsAreNamed: a read error before the body's first bytes said
// what it is (a corrupt gzip stream, a malformed chunked encoding, a reset,
// a clean close short of Content-Length) is named in the error, never
// reported as an empty or unrecognized body, and charged to the origin.
func TestReadErrorsAreNamed(t *testing.T) {
	t.Parallel()
	corrupt := gzipTimes(t, []byte(threeFeatures), 1)
	for i := 20; i < len(corrupt)-20; i += 7 {
		corrupt[i] ^= 0x5a
	}
	ok := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	for _, tc := range []struct {
		name, raw string
		reset     bool
		want      string
	}{
		{"gzip corrupt", ok + "Content-Encoding: gzip\r\nContent-Length: " + fmt.Sprint(len(corrupt)) + "\r\n\r\n" + string(corrupt), false, "gzip: flate: corrupt input"},
		{"gzip header cut", ok + "Content-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00", false, "gzip: unexpected EOF"},
		{"chunk size", ok + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", false, "malformed chunked transfer encoding"},
		{"chunk size after a value's start", ok + "Transfer-Encoding: chunked\r\n\r\n2\r\nnu\r\nzz\r\n", false, "malformed chunked transfer encoding"},
		{"close before the body", ok + "Content-Length: 100\r\n\r\n", false, "reading the body: unexpected EOF"},
		{"close within a value", ok + "Content-Length: 100\r\n\r\nnul", false, "reading the body: unexpected EOF"},
		{"reset before the body", ok + "Content-Length: 100\r\n\r\n", true, "connection reset"},
		{"reset within a value", ok + "Content-Length: 100\r\n\r\nnu", true, "connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			layer, requests := rawServer(t, tc.raw, tc.reset)
			c, reg := verdictClient(t)
			_, err := c.Fetch(t.Context(), *layer, 0, (&collect{}).handle)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to say %q", err, tc.want)
			}
			if n := strings.Count(err.Error(), "reading the body"); n != 1 {
				t.Errorf("err %v: says %q %d times, want once", err, "reading the body", n)
			}
			if errors.Is(err, httpcall.ErrEmptyBody) || errors.Is(err, httpcall.ErrUnrecognizedBody) {
				t.Errorf("err %v: a sniffing verdict hides the read error", err)
			}
			if n, s := requests.Load(), onlyOrigin(reg); n < 1 || !charged(s) {
				t.Errorf("%d requests, breaker %+v: want the failure charged to the origin", n, s)
			}
		})
	}
}

// onceFailingBody yields data, then err once, then io.EOF, as a reader
// below a bufio.Reader may: bufio hands an error out once and reads again.
type onceFailingBody struct {
	data   string
	err    error
	failed bool
}

func (b *onceFailingBody) Read(p []byte) (int, error) {
	if b.data != "" {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	if !b.failed {
		b.failed = true
		return 0, b.err
	}
	return 0, io.EOF
}

func (b *onceFailingBody) Close() error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestReadErrorOnceIsNotLost: a body whose read error is returned only once
// (then EOF) still fails with that error, wherever it comes among the
// first bytes, rather than passing for an empty or a short body.
func TestReadErrorOnceIsNotLost(t *testing.T) {
	t.Parallel()
	cause := errors.New("the wire broke")
	for _, data := range []string{"", "n", "nu", "nul", "\xef\xbb", "\xef\xbb\xbfnul"} {
		t.Run(fmt.Sprintf("%q", data), func(t *testing.T) {
			t.Parallel()
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: &onceFailingBody{data: data, err: cause}, Request: r}, nil
			})}
			c := NewClient(hc, nil, nil)
			_, err := c.Fetch(t.Context(), source.Layer{Kind: Kind, Settings: Settings{TypeName: "t"}, URL: "http://127.0.0.1:1/layer.geojson"}, 0, (&collect{}).handle)
			if !errors.Is(err, cause) {
				t.Fatalf("err %v, want it to wrap %q", err, cause)
			}
		})
	}
}

// TestCapabilitiesBodyVerdicts: GetCapabilities and hits requests judge
// their bodies by the same rules as pages: a JSON value is the feed's, a
// read error is named and the origin's.
func TestCapabilitiesBodyVerdicts(t *testing.T) {
	t.Parallel()
	ok := "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n"
	for _, tc := range []struct {
		name    string
		layer   func(t *testing.T) (*source.Layer, *atomic.Int64)
		want    string
		charged bool
	}{
		{"null", func(t *testing.T) (*source.Layer, *atomic.Int64) { return bodyServer(t, plainBody("null")) }, "JSON null", false},
		{"chunk size", func(t *testing.T) (*source.Layer, *atomic.Int64) {
			return rawServer(t, ok+"Transfer-Encoding: chunked\r\n\r\nzz\r\n<x/>\r\n0\r\n\r\n", false)
		}, "malformed chunked transfer encoding", true},
		{"reset within the root", func(t *testing.T) (*source.Layer, *atomic.Int64) {
			return rawServer(t, ok+"Content-Length: 100\r\n\r\n<wfs:WFS_Capa", true)
		}, "connection reset", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			layer, _ := tc.layer(t)
			layer.Kind, layer.Settings = Kind, Settings{TypeName: "x:parcels"}
			c, reg := verdictClient(t)
			_, err := c.Capabilities(t.Context(), *layer)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to say %q", err, tc.want)
			}
			if got := charged(onlyOrigin(reg)); got != tc.charged {
				t.Errorf("charged to the origin: %t, want %t (err %v)", got, tc.charged, err)
			}
		})
	}
}
