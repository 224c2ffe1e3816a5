package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/statuspage"
	"github.com/prometheus/client_golang/prometheus"
)

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	migrate := fs.Bool("migrate", true, "apply pending migrations on start")
	catchUp := fs.Bool("catch-up", true, "on start, poll feeds whose last success is older than their interval")
	fs.DurationVar(&c.heartbeat, "heartbeat", feeds.DefaultHeartbeat,
		"how often this instance renews its liveness row and ends what dead instances left (their TTL is four of these)")
	probeLease := fs.Duration("breaker-probe-lease", pgshare.DefaultProbeLease,
		"how long a probe lease outlives an instance that died while probing (renewed every third of it while the probe runs)")
	refresh := fs.Duration("breaker-refresh", pgshare.DefaultRefreshInterval,
		"how often every breaker verdict is re-read, in case a notification was lost")
	queryTimeout := fs.Duration("breaker-query-timeout", pgshare.DefaultQueryTimeout,
		"bound on each statement of the shared breaker state; taking a probe lease is the only one on a request's path")
	metricsAddr := fs.String("metrics-addr", envOr("INGESTD_METRICS_ADDR", defaultMetricsAddr),
		`address of /metrics, /healthz, /readyz and the status page /status/ ($INGESTD_METRICS_ADDR; "off" disables)`)
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"run takes no arguments"}
	}
	if c.heartbeat <= 0 {
		return usageError{"-heartbeat must be positive"}
	}
	if *probeLease <= 0 || *refresh <= 0 || *queryTimeout <= 0 {
		return usageError{"-breaker-probe-lease, -breaker-refresh and -breaker-query-timeout must be positive"}
	}
	c.shared = []pgshare.Option{pgshare.WithProbeLease(*probeLease),
		pgshare.WithRefreshInterval(*refresh), pgshare.WithQueryTimeout(*queryTimeout)}
	ctx, stop := signalContext()
	defer stop()

	// Logs go to stdout: under systemd that is the journal.
	reg := newMetricsRegistry()
	d, err := open(ctx, &c, openOptions{logs: stdout, migrate: *migrate, poll: true, catchUp: *catchUp, reg: reg})
	if err != nil {
		return err
	}
	defer d.Close() // on every path: the shutdown order is Close's
	sd := systemdNotifier{logger: d.logger}

	status, closeOps, err := startStatus(d, *metricsAddr, reg)
	if err != nil {
		return err
	}
	defer closeOps()

	if absent, err := d.absentFeeds(ctx); err != nil {
		return err
	} else if w := absentFeedsWarning(absent, c.config); w != "" {
		d.logger.Warn("feeds absent from the configuration", "feeds", len(absent), "warning", w)
	}
	if err := d.start(ctx); err != nil {
		return err
	}
	d.startScrub(ctx)
	d.logger.Info("ingestd running", "version", version, "config", c.config,
		"jurisdictions", len(d.cfg.Jurisdictions), "feeds", len(d.cfg.Feeds()))
	sd.Ready()
	go sd.Watchdog(ctx, d.manager.Healthy)
	d.serveUntilStopped(ctx, c.config, status, sd)
	sd.Stopping()
	d.logger.Info("shutting down: stopping the scheduler and cancelling polls in flight")
	d.Close()
	d.logger.Info("stopped")
	return nil
}

// startStatus serves /metrics, the probes and the status page on addr,
// unless addr is "off" or empty; the returned func closes the server. The
// status page is nil when there is none.
func startStatus(d *daemon, addr string, reg *prometheus.Registry) (*statuspage.Handler, func(), error) {
	if addr == "off" || addr == "" {
		return nil, func() {}, nil
	}
	status := statuspage.New(d.pool, d.logger, statuspage.WithSecrets(d.secrets))
	status.SetBounds(jurisdictionBounds(d.cfg))
	ops, err := startOpsServer(addr, reg, d.pool, status, d.logger)
	if err != nil {
		return nil, nil, err
	}
	return status, func() { ops.Close() }, nil
}

// serveUntilStopped reloads the config file at path on every SIGHUP until
// ctx ends (SIGINT, SIGTERM).
func (d *daemon) serveUntilStopped(ctx context.Context, path string, status *statuspage.Handler, sd systemdNotifier) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			sd.Reloading()
			d.reload(ctx, path)
			if status != nil {
				status.SetBounds(jurisdictionBounds(d.cfg))
			}
			sd.Ready()
		case <-ctx.Done():
			return
		}
	}
}

// reload re-reads the config file on SIGHUP. An invalid file changes nothing:
// the daemon keeps polling on the configuration it has, and says why. Polls
// in flight are never cancelled by a reload.
func (d *daemon) reload(ctx context.Context, path string) {
	cfg, err := config.Load(path)
	if err != nil {
		d.logger.Error("reload rejected: keeping the running configuration", "config", path, "error", err)
		return
	}
	// Added at once, even if the reload is rejected below: the set only
	// grows, and a credential the file names is one in any case.
	d.secrets.Add(cfg.Secrets()...)
	for _, w := range cfg.Warnings {
		d.logger.Warn("config warning", "warning", w.Error())
	}
	for origin, p := range cfg.OriginPolicies() {
		if err := d.breakers.SetPolicy(origin, p); err != nil {
			d.logger.Error("reload rejected: keeping the running configuration", "config", path, "origin", origin, "error", err)
			return
		}
	}
	uctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := d.manager.Update(uctx, cfg); err != nil {
		d.logger.Error("reload failed: keeping the running schedule", "config", path, "error", err)
		return
	}
	if cfg.MaxInFlight != d.cfg.MaxInFlight || cfg.DeadLetter != d.cfg.DeadLetter {
		d.logger.Warn("max_in_flight and dead_letter settings take effect at the next restart", "config", path)
	}
	d.cfg = cfg
	d.logger.Info("configuration reloaded", "config", path,
		"jurisdictions", len(cfg.Jurisdictions), "feeds", len(cfg.Feeds()))
}

// jurisdictionBounds are the jurisdictions' declared bboxes, which the
// status page draws next to each feed's thumbnail.
func jurisdictionBounds(cfg *config.Config) map[string]statuspage.BBox {
	out := map[string]statuspage.BBox{}
	for _, j := range cfg.Jurisdictions {
		if j.BBox != nil {
			out[j.ID] = statuspage.BBox(*j.BBox)
		}
	}
	return out
}
