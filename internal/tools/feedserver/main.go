// Command feedserver is ingestd's fixture feed server: it serves directories of
// GeoJSON FeatureCollections as WFS 2.0/1.1 GetFeature endpoints (with paging)
// and as plain GeoJSON documents, one origin per listen address. The demo and
// the benchmarks use it; it only ever listens on loopback addresses.
//
//	feedserver -serve 127.0.0.1:18081=testdata/feeds/raleigh -serve 127.0.0.1:18082=testdata/feeds/boulder
//
// Each NAME.geojson in a directory is the WFS type NAME and the document
// /geojson/NAME.geojson. -generate NAME=N adds a generated parcel layer of N
// features to every origin. -flap ADDR=8s makes the origin on ADDR answer 503
// for 8 seconds after its first request (a county server down for
// maintenance), then serve normally.
//
// -ogcapi ADDR serves the generated layers as OGC API – Features
// collections (ogcapitest: landing page, conformance, OpenAPI, items paged by
// next links) on ADDR.
//
// -hostile 127.0.0.1:18300=testdata/hostile serves the hostile corpus
// (internal/hostile.Cases) instead: one origin per port from 18300 up, in
// hostile.Origins order, full-size bodies (gigabyte bombs are
// generated as they are sent). -hostile-config FILE writes the ingestd
// configuration that polls every case; -hostile-phase good serves the good
// layer first (POST "hostile" to /hostile/_phase switches).
//
// -fleet FILE serves the download origins of a fleet catalog (package
// internal/tools/fleet/catalog, written by the fleet driver, which runs this
// server as its child): each origin on its own loopback address, its layers
// as generated parcel documents at /geojson/NAME.geojson, a flapping origin
// answering 503 for its while. It logs "serving the fleet" once every
// origin listens.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ingestd/ingestd/internal/hostile"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/internal/tools/fleet/catalog"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var serves, generates, ogcapis listFlag
	flag.Var(&serves, "serve", "ADDR=DIR: serve the .geojson files of DIR on ADDR (repeatable)")
	flag.Var(&ogcapis, "ogcapi", "ADDR: serve the generated layers as OGC API – Features collections (package ogcapitest) on ADDR (repeatable)")
	flag.Var(&generates, "generate", "NAME=N or NAME=points:N: add a generated layer of N parcels (or address points) to every origin (repeatable)")
	copyRows := flag.String("copy-rows", "", "NAME=N or NAME=points:N: write that generated layer as COPY text rows (id, hex EWKB, properties) to stdout and exit")
	crs84 := flag.Bool("crs84", false, "advertise CRS84 (longitude first) instead of urn:ogc:def:crs:EPSG::4326")
	hostile := flag.String("hostile", "", "ADDR=DIR: serve the hostile corpus (static bodies in DIR) on ADDR and the ports after it, one per origin")
	hostileConfig := flag.String("hostile-config", "", "with -hostile: write the ingestd config that polls every case to `FILE`")
	hostilePhase := flag.String("hostile-phase", "hostile", "with -hostile: serve the good layer (good) or the hostile responses (hostile) first")
	hostileSkip := flag.String("hostile-skip", "", "with -hostile: leave out the cases whose name matches `REGEXP`")
	hostileMax := flag.Int64("hostile-max-generated", 0, "with -hostile: cut generated bodies after `BYTES` (0: full size)")
	fleet := flag.String("fleet", "", "serve the download origins of the fleet catalog `FILE` (JSON, written by internal/tools/fleet)")
	var flaps listFlag
	flag.Var(&flaps, "flap", "ADDR=DURATION: the origin served on ADDR answers 503 to every request for DURATION after its first one, then recovers (repeatable)")
	flag.Parse()
	if *copyRows != "" {
		if err := writeCopyRows(*copyRows); err != nil {
			fmt.Fprintln(os.Stderr, "feedserver:", err)
			os.Exit(1)
		}
		return
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	flapFor := map[string]time.Duration{}
	for _, f := range flaps {
		addr, d, ok := strings.Cut(f, "=")
		dur, err := time.ParseDuration(d)
		if !ok || err != nil || dur <= 0 {
			fmt.Fprintf(os.Stderr, "feedserver: -flap %q: want ADDR=DURATION, e.g. 127.0.0.1:18083=8s\n", f)
			os.Exit(2)
		}
		flapFor[addr] = dur
	}
	if *fleet != "" {
		if err := runFleet(*fleet, logger); err != nil {
			fmt.Fprintln(os.Stderr, "feedserver:", err)
			os.Exit(1)
		}
		return
	}
	if *hostile != "" {
		if err := runHostile(*hostile, *hostileConfig, *hostilePhase, *hostileSkip, *hostileMax, logger); err != nil {
			fmt.Fprintln(os.Stderr, "feedserver:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(serves, ogcapis, generates, *crs84, flapFor, logger); err != nil {
		fmt.Fprintln(os.Stderr, "feedserver:", err)
		os.Exit(1)
	}
}

func run(serves, ogcapis, generates []string, crs84 bool, flapFor map[string]time.Duration, logger *slog.Logger) error {
	if len(serves) == 0 && len(ogcapis) == 0 {
		return errors.New("nothing to serve: give -serve ADDR=DIR or -ogcapi ADDR")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var servers fixtureServers
	for _, s := range serves {
		addr, dir, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("-serve %q: want ADDR=DIR", s)
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("-serve %q: %w", s, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-serve %q: the fixture server only listens on loopback addresses", s)
		}
		fs := wfstest.New()
		fs.CRS84 = crs84
		if dir != "" {
			if err := fs.LoadDir(dir); err != nil {
				return err
			}
		}
		for _, g := range generates {
			name, layer, err := parseGenerate(g)
			if err != nil {
				return fmt.Errorf("-generate: %w", err)
			}
			fs.AddLayer(name, layer)
		}
		if d, ok := flapFor[addr]; ok {
			fs.SetFault(flap(d, logger.With("addr", addr)))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		logger.Info("serving", "addr", ln.Addr().String(), "dir", dir)
		servers.serve(ln, fs)
	}
	for _, addr := range ogcapis {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("-ogcapi %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-ogcapi %q: the fixture server only listens on loopback addresses", addr)
		}
		api := ogcapitest.New()
		for _, g := range generates {
			name, layer, err := parseGenerate(g)
			if err != nil {
				return fmt.Errorf("-generate: %w", err)
			}
			api.Add(name, ogcapitest.Collection{Layer: layer})
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		logger.Info("serving OGC API – Features", "addr", ln.Addr().String())
		servers.serve(ln, api)
	}
	return servers.wait(ctx)
}

// runFleet serves the download (non-ArcGIS) origins of the catalog at path
// until SIGINT or SIGTERM.
func runFleet(path string, logger *slog.Logger) error {
	c, err := catalog.Load(path)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var servers fixtureServers
	layers := 0
	for _, o := range c.Origins {
		if o.ArcGIS {
			continue
		}
		fs := wfstest.New()
		for _, l := range o.Layers {
			fs.AddLayer(l.Name, layertest.Parcels{N: l.Features})
			layers++
		}
		if o.Flap > 0 {
			fs.SetFault(flap(o.Flap, logger.With("addr", o.Addr)))
		}
		ln, err := net.Listen("tcp", o.Addr)
		if err != nil {
			return fmt.Errorf("origin %s: %w", o.ID, err)
		}
		servers.serve(ln, fs)
	}
	if len(servers.list) == 0 {
		return catalog.ErrNoOrigins
	}
	logger.Info("serving the fleet", "origins", len(servers.list), "layers", layers)
	return servers.wait(ctx)
}

// fixtureServers are the HTTP servers of one feedserver process: they serve
// until one fails or ctx ends, and then stop together.
type fixtureServers struct {
	list []*http.Server
	errc chan error // the first failure; later ones are dropped
}

// serve serves h on ln in the background.
func (s *fixtureServers) serve(ln net.Listener, h http.Handler) {
	if s.errc == nil {
		s.errc = make(chan error, 1)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.list = append(s.list, srv)
	go func() {
		err := srv.Serve(ln)
		select {
		case s.errc <- err:
		default:
		}
	}()
}

// wait returns the first server's failure, or shuts every server down
// (giving requests in flight 5 s) and returns nil when ctx ends.
func (s *fixtureServers) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case err := <-s.errc:
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.list {
		_ = srv.Shutdown(shutdownCtx)
	}
	return nil
}

// runHostile serves the hostile corpus on consecutive loopback ports from
// spec's address, one origin per port, until SIGINT or SIGTERM.
func runHostile(spec, configPath, phase, skip string, maxGenerated int64, logger *slog.Logger) error {
	addr, dir, ok := strings.Cut(spec, "=")
	if !ok || dir == "" {
		return fmt.Errorf("-hostile %q: want ADDR=DIR", spec)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-hostile %q: %w", spec, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-hostile %q: the fixture server only listens on loopback addresses", spec)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 {
		return fmt.Errorf("-hostile %q: want a fixed port", spec)
	}
	if phase != "good" && phase != "hostile" {
		return fmt.Errorf("-hostile-phase %q: want good or hostile", phase)
	}
	cases := hostile.Cases()
	if skip != "" {
		re, err := regexp.Compile(skip)
		if err != nil {
			return fmt.Errorf("-hostile-skip: %w", err)
		}
		cases = slices.DeleteFunc(cases, func(c hostile.Case) bool { return re.MatchString(c.Name) })
	}
	h, err := hostile.NewServer(dir, cases)
	if err != nil {
		return err
	}
	h.MaxGenerated = maxGenerated
	h.SetHostile(phase == "hostile")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	origins := map[string]string{}
	var servers fixtureServers
	for i, o := range hostile.Origins(cases) {
		a := net.JoinHostPort(host, strconv.Itoa(port+i))
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return err
		}
		origins[o] = "http://" + ln.Addr().String()
		servers.serve(ln, h)
	}
	h.SetPeer(origins[hostile.OriginPeer])
	if configPath != "" {
		yaml, err := hostile.Config(cases, hostile.ConfigOptions{Origins: origins})
		if err != nil {
			return err
		}
		if err := os.WriteFile(configPath, []byte(yaml), 0o644); err != nil {
			return err
		}
	}
	logger.Info("serving the hostile corpus", "cases", len(cases), "origins", origins, "phase", phase)
	return servers.wait(ctx)
}

// flap is the fault of a county server that goes down for a while: every
// request in the first d after its first one gets a 503, so that the demo
// shows a breaker opening, a poll parked and its replay once the server is
// back.
func flap(d time.Duration, logger *slog.Logger) wfstest.FaultFunc {
	var mu sync.Mutex
	var first time.Time
	recovered := false
	return func(wfstest.Request) *wfstest.Fault {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if first.IsZero() {
			first = now
			logger.Info("flapping: down", "for", d.String())
		}
		if now.Sub(first) < d {
			return &wfstest.Fault{Status: http.StatusServiceUnavailable, Body: "Service Unavailable: maintenance"}
		}
		if !recovered {
			recovered = true
			logger.Info("flapping: back up")
		}
		return nil
	}
}

// parseGenerate reads NAME=N (parcels) or NAME=points:N.
func parseGenerate(spec string) (string, layertest.Generated, error) {
	name, n, ok := strings.Cut(spec, "=")
	kind, n, points := strings.Cut(n, ":")
	if !points {
		n = kind
	}
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 0 || (points && kind != "points") {
		return "", nil, fmt.Errorf("%q: want NAME=N or NAME=points:N", spec)
	}
	if points {
		return name, layertest.Points{N: count}, nil
	}
	return name, layertest.Parcels{N: count}, nil
}

// writeCopyRows writes a generated layer as COPY text to stdout.
func writeCopyRows(spec string) error {
	_, layer, err := parseGenerate(spec)
	if err != nil {
		return fmt.Errorf("-copy-rows: %w", err)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	buf := make([]byte, 0, 4096)
	for i := range layer.Len() {
		buf = layertest.AppendCopyRow(buf[:0], layer, i)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return w.Flush()
}
