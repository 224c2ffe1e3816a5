// Package hostile is the hostile corpus: lying and malformed answers of
// every feed kind (GeoJSON, WFS with GeoJSON or GML output, ArcGIS REST,
// OGC API – Features, Socrata, downloaded files), each with what ingestd
// must make of it; the server
// that serves them (a good layer first, then the hostile answer at the same
// URL); and the ingestd configuration that polls them. No protocol owns it:
// it exercises them all, and cmd/ingestd's TestHostileCorpus runs the real
// binary over every case (scripts/bench.sh hostile at full size).
package hostile

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ingestd/ingestd/wfs/wfstest"
)

// Responder writes the hostile response of a case.
type Responder func(w http.ResponseWriter, r *Request)

// Request is one request for a case, with what a Responder needs.
type Request struct {
	*http.Request
	// Case is the case requested.
	Case *Case
	// Path is the request's path below the case's /hostile/NAME ("" for
	// the case's URL itself): an ArcGIS layer's /query, an OGC API
	// collection's /items.
	Path string
	// StartIndex and Count are the WFS paging parameters (Count -1 when absent).
	StartIndex, Count int

	h *Server
}

// File returns a static body from the corpus directory.
func (r *Request) File(name string) []byte {
	b, ok := r.h.files[name]
	r.h.mu.Lock()
	r.h.used[name] = true
	r.h.mu.Unlock()
	if !ok {
		panic("hostile: case " + r.Case.Name + " names a file that was not loaded: " + name)
	}
	return b
}

// PeerURL is the base URL of the peer origin ("" when it is not known).
func (r *Request) PeerURL() string { return r.h.peer.Load().(string) }

// MaxGenerated is the most bytes (before compression) a generated body may
// have; 0: no bound.
func (r *Request) MaxGenerated() int64 { return r.h.MaxGenerated }

// Server serves a hostile corpus: each case at /hostile/NAME, a good layer
// there until SetHostile(true), then the case's hostile response. Bodies
// that inflate to gigabytes are generated while they are written, never held.
type Server struct {
	// MaxGenerated bounds generated bodies, before compression (0: no bound),
	// so that a test of a build that lacks a limit reads tens of megabytes
	// instead of gigabytes. Set it before serving.
	MaxGenerated int64

	cases   map[string]*Case
	files   map[string][]byte
	hostile atomic.Bool
	peer    atomic.Value // string
	good    *goodServer

	mu       sync.Mutex
	requests map[string]int
	used     map[string]bool // files served, for the test that finds unused ones
}

// NewServer returns a server of cases whose static bodies are in dir, all
// loaded up front (they are small). A case that names a file dir lacks
// panics when served; TestCorpusShape serves every case.
func NewServer(dir string, cases []Case) (*Server, error) {
	h := &Server{cases: map[string]*Case{}, files: map[string][]byte{}, requests: map[string]int{}, used: map[string]bool{},
		good: newGoodServer()}
	h.peer.Store("")
	for i := range cases {
		c := &cases[i]
		if _, dup := h.cases[c.Name]; dup {
			return nil, fmt.Errorf("hostile: case %q twice", c.Name)
		}
		h.cases[c.Name] = c
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("hostile: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("hostile: %w", err)
		}
		h.files[e.Name()] = b
	}
	return h, nil
}

// SetHostile switches every case between the good layer (false) and its
// hostile response (true).
func (h *Server) SetHostile(on bool) { h.hostile.Store(on) }

// SetPeer sets the base URL (scheme://host:port) of the peer origin, where
// cross-origin redirects point.
func (h *Server) SetPeer(baseURL string) { h.peer.Store(strings.TrimRight(baseURL, "/")) }

// Requests is the number of requests case name received.
func (h *Server) Requests(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[name]
}

// ServeHTTP answers /hostile/NAME and the paths below it (and
// /hostile/_phase: POST "good" or "hostile" switches the phase, for a
// server in another process). Any other path gets the good layer, so a
// redirect to the peer origin lands on data.
func (h *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/hostile/")
	if !ok {
		rest, ok = h.socrataPath(r.URL.Path)
	}
	if !ok {
		h.good.serve(w, r, GeoJSON, r.URL.Path)
		return
	}
	if rest == "_phase" {
		h.servePhase(w, r)
		return
	}
	name, sub, _ := strings.Cut(rest, "/")
	if sub != "" {
		sub = "/" + sub
	}
	c, ok := h.cases[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.requests[c.Name]++
	h.mu.Unlock()
	if !h.hostile.Load() {
		h.good.serve(w, r, c.Kind, sub)
		return
	}
	req := &Request{Request: r, Case: c, Path: sub, h: h}
	req.StartIndex, req.Count = wfstest.Paging(r)
	c.Respond(w, req)
}

func (h *Server) servePhase(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		switch strings.TrimSpace(string(b)) {
		case "good":
			h.SetHostile(false)
		case "hostile":
			h.SetHostile(true)
		default:
			http.Error(w, `want "good" or "hostile"`, http.StatusBadRequest)
			return
		}
	}
	phase := "good"
	if h.hostile.Load() {
		phase = "hostile"
	}
	fmt.Fprintln(w, phase)
}
