// Package statuspage serves the operator's status page: server-rendered
// HTML (html/template, an embedded stylesheet, no script, nothing fetched
// from anywhere) that refreshes itself, read from the same SQL views an
// operator queries by hand — feed_freshness, held_snapshots, dead_letter,
// breaker_state, polls and features. It keeps no state: every request reads
// the database, so the page and the views cannot disagree.
//
// The overview lists every feed with its freshness status, every origin's
// breaker, dead letters by status and held snapshots; a feed's page adds its
// last polls with a chart of their duration and feature count, its open dead
// letter and held snapshot, and a thumbnail of its geometries drawn by
// PostGIS (ST_AsSVG of a bounded, simplified sample) next to its
// jurisdiction's bbox. Names and errors are escaped by html/template; error
// texts and URLs go through package redact, as in logs.
//
// It also exports, at scrape time, the cluster-wide counts the shipped
// alert rules need (see Collector).
package statuspage

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/namedsql"
	"github.com/ingestd/ingestd/redact"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

//go:embed templates/*.html templates/style.css
var templateFiles embed.FS

// Prefix is the path the page is served under: mount a Handler at Prefix.
const Prefix = "/status/"

// Handler serves the status page under Prefix. Build it with New.
type Handler struct {
	pool   *pgxpool.Pool
	sql    namedsql.Statements
	tmpl   *template.Template
	css    []byte
	mux    *http.ServeMux
	logger *slog.Logger
	opts   options
	bboxes atomic.Pointer[map[string]BBox]
}

type options struct {
	refresh       time.Duration
	polls         int
	thumbFeatures int
	thumbBytes    int
	timeout       time.Duration
	secrets       *redact.Secrets
}

// Option configures a Handler.
type Option func(*options)

// WithRefresh sets how often the page reloads itself (default 10 s).
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithThumbnail bounds a feed's thumbnail to about features sampled
// features and bytes of SVG path data (defaults 1,000 and 150,000).
func WithThumbnail(features, bytes int) Option {
	return func(o *options) { o.thumbFeatures, o.thumbBytes = features, bytes }
}

// WithSecrets scrubs secrets (the configuration's credentials, a set the
// caller keeps up to date) by value from every error, reason and URL the
// page shows, as from every text ingestd writes: rows stored by an older
// version may still hold one.
func WithSecrets(secrets *redact.Secrets) Option { return func(o *options) { o.secrets = secrets } }

// New returns a Handler reading through pool. Its SQL and templates are
// embedded, so a broken one panics here (and in every test).
func New(pool *pgxpool.Pool, logger *slog.Logger, opts ...Option) *Handler {
	h := &Handler{pool: pool, logger: logger, sql: namedsql.MustLoad(sqlFiles, "sql/status.sql"),
		opts: options{refresh: 10 * time.Second, polls: 50, thumbFeatures: 1000, thumbBytes: 150_000, timeout: 10 * time.Second}}
	for _, o := range opts {
		o(&h.opts)
	}
	css, err := templateFiles.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	h.css = css
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET "+Prefix+"{$}", h.serveOverview)
	h.mux.HandleFunc("GET "+Prefix+"feed/{jurisdiction}/{feed}", h.serveFeed)
	h.mux.HandleFunc("GET "+Prefix+"style.css", h.serveCSS)
	return h
}

// SetBounds sets the jurisdictions' declared extents (by jurisdiction id)
// that thumbnails are drawn next to; the configuration owns them, not the
// database, so the caller sets them at start and after a reload.
func (h *Handler) SetBounds(b map[string]BBox) { h.bboxes.Store(&b) }

func (h *Handler) bounds(jurisdiction string) (BBox, bool) {
	m := h.bboxes.Load()
	if m == nil {
		return BBox{}, false
	}
	b, ok := (*m)[jurisdiction]
	return b, ok
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

type page struct {
	Title   string
	Refresh int
	// Root is the relative path from the page to Prefix ("./" or
	// "../../"): links are relative, so the page works behind a proxy
	// that serves it under any prefix.
	Root string
	Data any
}

func (h *Handler) serveOverview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.timeout)
	defer cancel()
	o, err := h.LoadOverview(ctx)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, "overview.html", page{Title: "ingestd status", Root: "./", Data: o})
}

func (h *Handler) serveFeed(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.timeout)
	defer cancel()
	j, f := r.PathValue("jurisdiction"), r.PathValue("feed")
	p, err := h.LoadFeed(ctx, j, f)
	if errors.Is(err, ErrNoFeed) {
		http.Error(w, "no feed "+j+"/"+f, http.StatusNotFound)
		return
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, "feed.html", page{Title: j + "/" + f + " · ingestd", Root: "../../", Data: p})
}

func (h *Handler) serveCSS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(h.css)
}

// Render writes the page called name ("overview.html" or "feed.html") with
// data (an *Overview or a *FeedPage); for tests and benchmarks.
func (h *Handler) Render(w http.ResponseWriter, name string, data any) {
	root := "./"
	if name == "feed.html" {
		root = "../../"
	}
	h.render(w, name, page{Title: "ingestd status", Root: root, Data: data})
}

func (h *Handler) render(w http.ResponseWriter, name string, p page) {
	p.Refresh = int(h.opts.refresh.Seconds())
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page needs nothing from anywhere: say so to the browser too.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:")
	_, _ = w.Write([]byte(b.String()))
}

func (h *Handler) fail(w http.ResponseWriter, err error) {
	if h.logger != nil {
		h.logger.Error("status page", "error", err)
	}
	http.Error(w, "status page: the database did not answer; see the log", http.StatusServiceUnavailable)
}

// FeedPath is the path of a feed's page.
func FeedPath(jurisdiction, feed string) string { return Prefix + feedLink(jurisdiction, feed) }

// feedLink is the path of a feed's page relative to the overview.
func feedLink(jurisdiction, feed string) string {
	return "feed/" + url.PathEscape(jurisdiction) + "/" + url.PathEscape(feed)
}
