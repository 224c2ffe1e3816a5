package hostile

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// Responders: the building blocks of the case table.

// reply answers status with body and headers (name, value pairs).
func reply(status int, contentType, body string, header ...string) Responder {
	return func(w http.ResponseWriter, r *Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// file answers 200 with a static body of the corpus directory.
func file(contentType, name string, header ...string) Responder {
	return fileStatus(http.StatusOK, contentType, name, header...)
}

// fileStatus answers status with a static body of the corpus directory.
func fileStatus(status int, contentType, name string, header ...string) Responder {
	return func(w http.ResponseWriter, r *Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		body := r.File(name)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// gzipped answers 200 with a static body gzipped (twice when twice),
// declared with Content-Encoding: gzip (once).
func gzipped(contentType, name string, twice bool) Responder {
	return func(w http.ResponseWriter, r *Request) {
		body := gzipBytes(r.File(name))
		if twice {
			body = gzipBytes(body)
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// gzipMangled answers a gzipped static body after mangle altered it.
func gzipMangled(contentType, name string, mangle func([]byte) []byte) Responder {
	return func(w http.ResponseWriter, r *Request) {
		body := mangle(gzipBytes(r.File(name)))
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

func gzipBytes(b []byte) []byte {
	var buf strings.Builder
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return []byte(buf.String())
}

// Cut modes: how a truncated response ends.
const (
	cutReset   = "reset"   // Content-Length announced, then a TCP reset
	cutFIN     = "fin"     // Content-Length announced, then a clean close
	cutChunked = "chunked" // chunked, the last chunk never comes, clean close
	cutClean   = "clean"   // a complete HTTP response of an incomplete document
)

// truncated serves the first n bytes of a static body (n < 0: len+n), ending
// the way mode says.
func truncated(contentType, name string, n int, mode string) Responder {
	return func(w http.ResponseWriter, r *Request) { writeCut(w, contentType, r.File(name), n, mode) }
}

// cutAnswer serves the first n bytes (n < 0: len+n) of what full answers,
// ending the way mode says: a truncated page of a kind whose answers the
// corpus generates.
func cutAnswer(full Responder, n int, mode string) Responder {
	return func(w http.ResponseWriter, r *Request) {
		rec := httptest.NewRecorder()
		full(rec, r)
		writeCut(w, rec.Header().Get("Content-Type"), rec.Body.Bytes(), n, mode)
	}
}

// writeCut writes the first n bytes of full (n < 0: len+n), ending the
// way mode says.
func writeCut(w http.ResponseWriter, contentType string, full []byte, n int, mode string) {
	if n < 0 {
		n += len(full)
	}
	part := full[:min(max(n, 0), len(full))]
	if mode == cutClean {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(part)))
		_, _ = w.Write(part)
		return
	}
	conn, bufrw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if mode == cutChunked {
		fmt.Fprintf(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", contentType)
		if len(part) > 0 {
			fmt.Fprintf(bufrw, "%x\r\n%s\r\n", len(part), part)
		}
	} else {
		fmt.Fprintf(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, len(full))
		_, _ = bufrw.Write(part)
	}
	_ = bufrw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok && mode == cutReset {
		_ = tc.SetLinger(0)
	}
}

// raw writes bytes straight to the connection: a malformed HTTP response.
// With reset, the connection is reset instead of closed.
func raw(response string, reset bool) Responder {
	return func(w http.ResponseWriter, r *Request) {
		conn, bufrw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = bufrw.WriteString(response)
		_ = bufrw.Flush()
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
	}
}

// hang never answers; the client's timeout must end the request.
func hang() Responder {
	return func(w http.ResponseWriter, r *Request) { <-r.Context().Done() }
}

// slow sends the headers, then one byte of a static body every interval:
// slowloris, which only the request timeout can end.
func slow(contentType, name string, interval time.Duration) Responder {
	return func(w http.ResponseWriter, r *Request) {
		body := r.File(name)
		drip(w, r, contentType, interval, func(i int) []byte {
			if i >= len(body) {
				return nil
			}
			return body[i : i+1]
		})
	}
}

// drip answers 200 with contentType, then writes chunk(0), chunk(1), …
// one every interval, each flushed, until chunk returns nil or the client
// goes away.
func drip(w http.ResponseWriter, r *Request, contentType string, interval time.Duration, chunk func(i int) []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		b := chunk(i)
		if b == nil {
			return
		}
		if _, err := w.Write(b); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// redirect answers 302 (or status) to location; "{peer}" in it is the peer
// origin's base URL and "{self}" this request's origin.
func redirect(status int, location string) Responder {
	return func(w http.ResponseWriter, r *Request) {
		loc := strings.ReplaceAll(location, "{peer}", r.PeerURL())
		loc = strings.ReplaceAll(loc, "{self}", "http://"+r.Host)
		w.Header().Set("Location", loc)
		w.WriteHeader(status)
	}
}
