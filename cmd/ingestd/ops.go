package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/statuspage"
)

// defaultMetricsAddr is loopback only: metrics name every feed and origin,
// which is nobody else's business unless the operator opens it up.
const defaultMetricsAddr = "127.0.0.1:9187"

// newMetricsRegistry returns the registry every package registers on, with the
// process and Go runtime collectors.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(collectors.NewGoCollector())
	return reg
}

// opsServer serves /metrics, /healthz (the process is up), /readyz (the
// database answers and its schema is current) and the status page under
// /status/ (read-only; loopback by default, like the metrics).
type opsServer struct {
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
}

// metricsHandler serves reg's metrics. A collector that fails (the ones
// that query the database time out while a catch-up holds the pool) leaves
// its metrics out of the scrape, logged and counted in
// promhttp_metric_handler_errors_total, instead of turning the whole scrape
// into a 500: the busiest instance is the one an operator most needs to see.
func metricsHandler(reg *prometheus.Registry, logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:      reg,
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	})
}

func startOpsServer(addr string, reg *prometheus.Registry, pool *pgxpool.Pool, status http.Handler, logger *slog.Logger) (*opsServer, error) {
	// ingestd_ready is /readyz for Prometheus, read at scrape, so that an
	// alert can tell "up but not ready" from "down".
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ingestd_ready",
		Help: "1 when the database answers and every migration is applied (as /readyz), else 0.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if ready(ctx, pool) != nil {
			return 0
		}
		return 1
	}))
	mux := http.NewServeMux()
	mux.Handle(statuspage.Prefix, status)
	mux.Handle("GET /{$}", http.RedirectHandler(statuspage.Prefix, http.StatusFound))
	mux.Handle("/metrics", metricsHandler(reg, logger))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := ready(ctx, pool); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	s := &opsServer{
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:     ln,
		logger: logger,
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "error", err)
		}
	}()
	logger.Info("serving metrics", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address the server listens on.
func (s *opsServer) Addr() string { return s.ln.Addr().String() }

func (s *opsServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// ready reports whether the database answers and every migration is applied.
func ready(ctx context.Context, pool *pgxpool.Pool) error {
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	st, err := migrations.Status(ctx, db)
	if err != nil {
		return err
	}
	if !st.UpToDate() {
		return fmt.Errorf("migrations pending: %v", st.Pending)
	}
	return nil
}

// systemdNotifier tells systemd (Type=notify) when ingestd is ready, reloading
// or stopping, and pings its watchdog while the process is healthy. Outside
// systemd every call is a no-op.
type systemdNotifier struct {
	logger *slog.Logger
}

func (n systemdNotifier) notify(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.logger.Warn("systemd notify failed", "state", state, "error", err)
	}
}

// Ready reports start-up complete.
func (n systemdNotifier) Ready() { n.notify(sd.SdNotifyReady) }

// Reloading reports a configuration reload in progress; Ready ends it.
func (n systemdNotifier) Reloading() {
	n.notify(sd.SdNotifyReloading)
}

// Stopping reports shutdown.
func (n systemdNotifier) Stopping() { n.notify(sd.SdNotifyStopping) }

// Watchdog pings systemd's watchdog at half its interval until ctx ends, as
// long as healthy says so: a wedged process stops pinging and gets restarted.
func (n systemdNotifier) Watchdog(ctx context.Context, healthy func(context.Context) error) {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			hctx, cancel := context.WithTimeout(ctx, interval/4)
			err := healthy(hctx)
			cancel()
			if err != nil {
				n.logger.Error("watchdog: not healthy, not pinging", "error", err)
				continue
			}
			n.notify(sd.SdNotifyWatchdog)
		}
	}
}
