package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/breaker/breakermetrics"
	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/statuspage"
)

// daemon is what a command needs of ingestd, built from its flags by open
// and released by Close. Every command goes through it, so that each part is
// built one way (with this process's one instance id) and released in the
// shutdown order, whichever command built it.
type daemon struct {
	// id names this process everywhere it records who does what: poll
	// claims and polls, heartbeats, dead-letter claims, breaker verdicts.
	id     string
	logger *slog.Logger
	// secrets are the loaded configuration's credentials (empty for a
	// command that loads none), scrubbed by value from the log and from
	// every text the store, the dead-letter queue and the shared breaker
	// state write; a reload adds the new configuration's.
	secrets *redact.Secrets
	pool    *pgxpool.Pool
	store   *postgis.Store
	queue   *deadletter.Queue
	// shared is the breaker verdicts every instance shares. A polling
	// daemon starts it (verdicts loaded before the first request); the
	// other commands only read and override through it.
	shared *pgshare.Cluster

	// What polls need; nil unless opened with poll.
	cfg      *config.Config
	breakers *breaker.Registry
	watch    *pgshare.OriginWatch
	manager  *feeds.Manager
	replayer *deadletter.Replayer
	// pruner deletes feature_history past each feed's retention.
	pruner *postgis.HistoryPruner

	// stopScrub cancels the start's scrub of stored secrets and waits for
	// it (nil: none runs).
	stopScrub func()

	closed bool
}

// openOptions says what a command needs.
type openOptions struct {
	// logs is where the JSON log goes (nil: nowhere, and -log-level is not
	// checked).
	logs io.Writer
	// migrate applies pending migrations once connected.
	migrate bool
	// poll loads -config and builds what polls need: the breakers with the
	// shared state started, the origin watch, the manager and the
	// dead-letter replayer. Nothing is scheduled or started beyond the
	// shared state: run starts the rest (see daemon.start).
	poll bool
	// catchUp is run's -catch-up (see feeds.WithCatchUp).
	catchUp bool
	// reg, if not nil, gets every package's metrics.
	reg prometheus.Registerer
	// progress, if not nil, counts the polls' requests and is cleared by
	// each log line (one-off commands on a terminal).
	progress *progress
}

// signalContext is the context of every command: SIGINT and SIGTERM cancel
// it.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// open builds the daemon from flags. On error, what it built is released.
func open(ctx context.Context, c *common, o openOptions) (*daemon, error) {
	if c.secrets == nil {
		c.secrets = redact.NewSecrets()
	}
	d := &daemon{id: feeds.InstanceID(), logger: slog.New(slog.DiscardHandler), secrets: c.secrets}
	if o.logs != nil {
		logger, err := c.logger(o.progress.Writer(o.logs))
		if err != nil {
			return nil, err
		}
		d.logger = logger
	}
	maxInFlight := 0
	if o.poll {
		cfg, err := config.Load(c.config)
		if err != nil {
			return nil, err
		}
		d.secrets.Add(cfg.Secrets()...)
		for _, w := range cfg.Warnings {
			d.logger.Warn("config warning", "warning", w.Error())
		}
		d.cfg, maxInFlight = cfg, cfg.MaxInFlight
	}
	pool, err := c.poolFor(ctx, maxInFlight)
	if err != nil {
		return nil, err
	}
	d.pool = pool
	if o.migrate {
		if _, err := migrate(ctx, pool, d.logger); err != nil {
			d.Close()
			return nil, err
		}
	}
	if o.poll {
		// Said at start, before any poll can be refused a connection.
		if _, err := checkConnections(ctx, pool, d.id, d.logger); err != nil {
			d.Close()
			return nil, err
		}
	}
	d.store = postgis.New(pool, postgis.WithOwner(d.id), postgis.WithLogger(d.logger), postgis.WithSecrets(d.secrets))
	d.queue = deadletter.NewQueue(pool, deadletter.QueueSecrets(d.secrets))
	if !o.poll {
		// Lifting an override brings back the polls it parked (breaker
		// decides when; the dead-letter queue moves them).
		d.shared = pgshare.New(pool, d.id, d.logger, pgshare.WithResume(d.queue.Expedite),
			pgshare.WithSecrets(d.secrets))
		return d, nil
	}
	if err := d.openPolling(ctx, c, o); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openPolling builds what polls need (see openOptions.poll).
func (d *daemon) openPolling(ctx context.Context, c *common, o openOptions) error {
	cfg := d.cfg
	d.watch = pgshare.NewOriginWatch(d.pool, cfg.DeadLetter.StuckOpenAfter, d.logger)
	d.watch.SharedVerdicts()
	// Loaded before the first request: an origin another instance (or this
	// one before a restart) opened stays open until its time.
	d.shared = pgshare.New(d.pool, d.id, d.logger, append(c.shared, pgshare.WithSecrets(d.secrets))...)
	if err := d.shared.Start(ctx); err != nil {
		return err
	}
	d.breakers = breaker.NewRegistry(breaker.Config{MaxInFlight: cfg.MaxInFlight, Policy: cfg.Defaults.Breaker,
		OnStateChange: d.watch.OnStateChange, Shared: d.shared, Observer: breakermetrics.New(o.reg)}, d.logger)
	for origin, p := range cfg.OriginPolicies() {
		if err := d.breakers.SetPolicy(origin, p); err != nil {
			return fmt.Errorf("breaker policy of %s: %w", origin, err)
		}
	}
	// The User-Agent names ingestd to the servers it polls, so a county's
	// admin can see who is calling and how often.
	httpClient := newHTTPClient()
	httpClient.Transport = o.progress.Transport(httpClient.Transport)
	fetchers := feeds.NewFetchers(kindconf.FetcherDeps{HTTP: httpClient, Breakers: d.breakers, Logger: d.logger,
		UserAgent: "ingestd/" + version})
	d.manager = feeds.NewManager(o.progress.Store(d.store), fetchers, feeds.WithLogger(d.logger), feeds.WithInstanceID(d.id),
		feeds.WithDeadLetters(d.queue, cfg.DeadLetter), feeds.WithRegisterer(o.reg),
		feeds.WithRecovery(d.store, c.heartbeat), feeds.WithCatchUp(o.catchUp))
	if o.reg != nil {
		o.reg.MustRegister(deadletter.NewCollector(d.pool))
		o.reg.MustRegister(statuspage.NewCollector(d.pool))
	}
	d.replayer = deadletter.NewReplayer(d.pool, d.manager.Replay,
		deadletter.WithLogger(d.logger),
		deadletter.WithInstanceID(d.id),
		deadletter.WithInterval(cfg.DeadLetter.Interval.Std()),
		deadletter.WithLease(cfg.DeadLetter.Lease.Std()),
		deadletter.WithMaxAttempts(cfg.DeadLetter.MaxAttempts),
		deadletter.WithSecrets(d.secrets))
	d.pruner = postgis.NewHistoryPruner(d.store, postgis.DefaultHistoryPruneInterval)
	return nil
}

// start runs a polling daemon: the origin watch, the manager on the loaded
// configuration (scheduler, recovery, catch-up), then the replayer. Close
// stops them.
func (d *daemon) start(ctx context.Context) error {
	if err := d.watch.Start(ctx); err != nil {
		return err
	}
	if err := d.manager.Update(ctx, d.cfg); err != nil {
		return err
	}
	if err := d.manager.Start(ctx); err != nil {
		return err
	}
	if err := d.pruner.Start(ctx); err != nil {
		return err
	}
	return d.replayer.Start(ctx)
}

// Close releases everything in the shutdown order: the scheduler and the
// polls in flight (waited for), the replayer, then the writers of
// breaker_state (the origin watch's stuck flags, the shared state's queued
// verdicts), which the polls and replays fed, and last the pool they all
// write through. Parts never started stop at once. A second Close does
// nothing.
func (d *daemon) Close() {
	if d.closed {
		return
	}
	d.closed = true
	if d.stopScrub != nil {
		d.stopScrub()
	}
	if d.manager != nil {
		d.manager.Stop()
	}
	if d.replayer != nil {
		d.replayer.Stop()
	}
	if d.pruner != nil {
		d.pruner.Stop()
	}
	if d.watch != nil {
		d.watch.Stop()
	}
	if d.shared != nil {
		d.shared.Stop()
	}
	if d.pool != nil {
		d.pool.Close()
	}
}

// scrubStored replaces the secrets d knows (the configuration's), in any of
// their spellings, by REDACTED in every text the tables hold that may quote
// a server: what versions that did not scrub by value stored. The polls
// table is read from where the last scrub stopped unless all is set.
func (d *daemon) scrubStored(ctx context.Context, all bool) (int64, error) {
	n, err := d.store.ScrubSecrets(ctx, d.secrets, all)
	if err != nil {
		return n, err
	}
	m, err := d.queue.ScrubSecrets(ctx, d.secrets)
	n += m
	if err != nil {
		return n, err
	}
	m, err = d.shared.ScrubSecrets(ctx, d.secrets)
	return n + m, err
}

// startScrub runs scrubStored in the background, for the polls written
// since the last scrub: the first start after an upgrade reads the whole
// history, which must not hold back polling or readiness. A failure is
// logged; the next start tries again. Close cancels it and waits.
func (d *daemon) startScrub(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	d.stopScrub = func() { cancel(); <-done }
	go func() {
		defer close(done)
		n, err := d.scrubStored(ctx, false)
		switch {
		case err != nil && ctx.Err() == nil:
			d.logger.Error("scrubbing stored secrets failed", "error", err)
		case err != nil:
		case n > 0:
			d.logger.Warn("stored secrets scrubbed", "rows", n, "secrets", d.secrets.Len())
		default:
			d.logger.Info("stored secrets scrubbed", "rows", 0, "secrets", d.secrets.Len())
		}
	}()
}
