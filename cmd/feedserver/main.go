// Command feedserver is ingestd's fixture feed server: it serves directories of
// GeoJSON FeatureCollections as WFS 2.0/1.1 GetFeature endpoints (with paging)
// and as plain GeoJSON documents, one origin per listen address. The demo and
// the benchmarks use it; it only ever listens on loopback addresses.
//
//	feedserver -serve 127.0.0.1:18081=testdata/feeds/raleigh -serve 127.0.0.1:18082=testdata/feeds/boulder
//
// Each NAME.geojson in a directory is the WFS type NAME and the document
// /geojson/NAME.geojson. -generate NAME=N adds a generated parcel layer of N
// features to every origin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ingestd/ingestd/wfs/wfstest"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var serves, generates listFlag
	flag.Var(&serves, "serve", "ADDR=DIR: serve the .geojson files of DIR on ADDR (repeatable)")
	flag.Var(&generates, "generate", "NAME=N or NAME=points:N: add a generated layer of N parcels (or address points) to every origin (repeatable)")
	crs84 := flag.Bool("crs84", false, "advertise CRS84 (longitude first) instead of urn:ogc:def:crs:EPSG::4326")
	flag.Parse()
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	if err := run(serves, generates, *crs84, logger); err != nil {
		fmt.Fprintln(os.Stderr, "feedserver:", err)
		os.Exit(1)
	}
}

func run(serves, generates []string, crs84 bool, logger *slog.Logger) error {
	if len(serves) == 0 {
		return errors.New("nothing to serve: give -serve ADDR=DIR")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var servers []*http.Server
	errc := make(chan error, len(serves))
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
			name, n, ok := strings.Cut(g, "=")
			kind, n, points := strings.Cut(n, ":")
			if !points {
				n = kind
			}
			count, err := strconv.Atoi(n)
			if !ok || err != nil || count < 0 || (points && kind != "points") {
				return fmt.Errorf("-generate %q: want NAME=N or NAME=points:N", g)
			}
			if points {
				fs.AddLayer(name, wfstest.Points{N: count})
			} else {
				fs.AddLayer(name, wfstest.Parcels{N: count})
			}
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: fs, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		logger.Info("serving", "addr", ln.Addr().String(), "dir", dir)
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	return nil
}
