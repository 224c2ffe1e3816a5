// Command ingestd keeps a PostGIS mirror of municipal GIS layers fresh.
//
//	ingestd run      [-config FILE] [-database-url URL] [-migrate=true] [-catch-up=true] [-heartbeat 15s]
//	                 [-breaker-probe-lease 30s] [-breaker-refresh 5s] [-breaker-query-timeout 1s]
//	ingestd poll     [-config FILE] [-database-url URL] JURISDICTION/FEED
//	ingestd validate [-config FILE | FILE]
//	ingestd discover [-jurisdiction ID] [-schedule CRON] [-filter REGEX] [-check] URL...
//	ingestd status   [-database-url URL]
//	ingestd migrate  [-database-url URL]
//	ingestd deadletter list|replay|purge [flags]
//	ingestd held list|accept|reject [JURISDICTION/FEED] [flags]
//	ingestd breaker list|open|close|auto [ORIGIN] [flags]
//	ingestd feeds prune [-dry-run] [flags]
//	ingestd changes -since POLL [flags] JURISDICTION/FEED
//	ingestd scrub-secrets [-config FILE] [-database-url URL]
//
// main only parses flags, wires the parts together (the daemon value,
// daemon.go) and prints; it holds no SQL and no rule of its own: the work
// happens in feeds, wfs, breaker, deadletter and feeds/postgis.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/redact"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `ingestd keeps a PostGIS mirror of municipal GIS layers fresh.

Usage:
  ingestd run      [flags]                      schedule and poll every feed until SIGTERM
  ingestd poll     [flags] JURISDICTION/FEED    poll one feed now; exit 1 if it fails
  ingestd validate [-config FILE | FILE]        check a config file and run its feeds' tests:; exit 1 on any error or failure
  ingestd discover [flags] URL...               list a server's layers and write feeds for them
  ingestd import openaddresses [-o FILE] PATH... write a config from OpenAddresses' source catalog
  ingestd status   [flags]                      feeds that are not fresh and why, every origin's breaker
  ingestd migrate  [flags]                      apply pending schema migrations
  ingestd deadletter list|replay|purge          inspect, replay now, or purge parked polls
  ingestd held list|accept|reject               snapshots a guard held instead of applying
  ingestd breaker list|open|close|auto          shared breaker verdicts and manual overrides
  ingestd feeds prune [-dry-run]                mark feeds absent from the config removed, abandon their dead letters
  ingestd changes -since POLL JURISDICTION/FEED a feed's changes after a poll, as GeoJSON lines
  ingestd scrub-secrets [flags]                 replace the config's secrets by REDACTED in every stored text
  ingestd version

Run 'ingestd COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = cmdRun(args, stdout, stderr)
	case "poll":
		err = cmdPoll(args, stdout, stderr)
	case "validate":
		err = cmdValidate(args, stdout, stderr)
	case "discover":
		err = cmdDiscover(args, stdout, stderr)
	case "import":
		err = cmdImport(args, stdout, stderr) // import.go
	case "status":
		err = cmdStatus(args, stdout, stderr)
	case "migrate":
		err = cmdMigrate(args, stdout, stderr)
	case "breaker":
		err = cmdBreaker(args, stdout, stderr)
	case "deadletter":
		err = cmdDeadLetter(args, stdout, stderr)
	case "held":
		err = cmdHeld(args, stdout, stderr)
	case "feeds":
		err = cmdFeeds(args, stdout, stderr)
	case "scrub-secrets":
		err = cmdScrubSecrets(args, stdout, stderr)
	case "changes":
		err = cmdChanges(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "ingestd", version)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "ingestd: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "ingestd:", redact.Error(err))
			return 2
		}
		if !errors.Is(err, errReported) {
			fmt.Fprintln(stderr, "ingestd:", redact.Error(err))
		}
		return 1
	}
	return 0
}

// errReported is returned by commands that already printed their failure.
var errReported = errors.New("reported")

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// common holds the flags every command that touches the database shares.
type common struct {
	config      string
	databaseURL string
	logLevel    string
	// heartbeat is run's -heartbeat (0 elsewhere: the default); only a
	// started manager heartbeats.
	heartbeat time.Duration
	// shared are run's -breaker-* timings of the shared breaker state
	// (none elsewhere: the defaults).
	shared []pgshare.Option
	// secrets are the configuration's credentials, scrubbed by value from
	// the log and from what the daemon's parts write (nil until open
	// makes it).
	secrets *redact.Secrets
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", envOr("INGESTD_CONFIG", "jurisdictions.yaml"), "jurisdictions file ($INGESTD_CONFIG)")
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL ($DATABASE_URL)")
	fs.StringVar(&c.logLevel, "log-level", envOr("INGESTD_LOG_LEVEL", "info"), "debug, info, warn or error")
}

func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usageError{fmt.Sprintf("-log-level %q: want debug, info, warn or error", c.logLevel)}
	}
	// redactAttr redacts URLs where a value becomes text; the writer
	// scrubs the secrets by value from each whole record, whatever
	// attribute (or message) carries them, in the JSON form the handler
	// wrote them in.
	return slog.New(slog.NewJSONHandler(c.secrets.Writer(w), &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr})), nil
}

// poolFor connects with enough connections for maxInFlight requests, each of
// which may stream its page into the database while it is read, unless the
// URL sets pool_max_conns itself.
func (c *common) poolFor(ctx context.Context, maxInFlight int) (*pgxpool.Pool, error) {
	cfg, err := c.poolConfig()
	if err != nil {
		return nil, err
	}
	if maxInFlight > 0 && !strings.Contains(c.databaseURL, "pool_max_conns") {
		cfg.MaxConns = int32(max(maxInFlight+5, int(cfg.MaxConns)))
	}
	// A poll waiting for a connection waits in line: not its timeout's work.
	cfg.ConnConfig.Tracer = postgis.AcquireWaits{}
	return connect(ctx, cfg)
}

// reservedPool connects a polling instance's reserved pool
// (postgis.WithReservedPool): postgis.ReservedConns connections, whatever
// pool_max_conns says of the main pool, kept open from the start so that
// a server at max_connections later still has them.
func (c *common) reservedPool(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := c.poolConfig()
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = postgis.ReservedConns, postgis.ReservedConns
	return connect(ctx, cfg)
}

// poolConfig is the pool configuration DATABASE_URL says, with ingestd's
// search_path unless the URL sets one.
func (c *common) poolConfig() (*pgxpool.Config, error) {
	if c.databaseURL == "" {
		return nil, usageError{"no database: set DATABASE_URL or -database-url"}
	}
	cfg, err := pgxpool.ParseConfig(c.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	// ingestd's tables are in schema ingestd, PostGIS's in public
	// (migration 31); a URL's own options=-c search_path=… wins.
	if _, ok := cfg.ConnConfig.RuntimeParams["search_path"]; !ok && !strings.Contains(c.databaseURL, "search_path") {
		cfg.ConnConfig.RuntimeParams["search_path"] = "ingestd, public"
	}
	return cfg, nil
}

// connect opens a pool on cfg and checks that the database answers.
func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", envOr("INGESTD_CONFIG", "jurisdictions.yaml"), "jurisdictions file ($INGESTD_CONFIG)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	configSet := false
	fs.Visit(func(f *flag.Flag) { configSet = configSet || f.Name == "config" })
	switch {
	case fs.NArg() == 0:
	case fs.NArg() == 1 && !configSet:
		*path = fs.Arg(0)
	case fs.NArg() == 1:
		return usageError{"validate takes -config FILE or FILE, not both"}
	default:
		return usageError{"validate takes at most one file"}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, redact.Error(err))
		return errReported
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "warning:", redact.Error(w))
	}
	ts := runConformTests(cfg, stderr) // validate.go
	if ts.tests > 0 {
		fmt.Fprintln(stdout, ts)
	}
	if ts.failed > 0 {
		return errReported
	}
	n := len(cfg.Feeds())
	fmt.Fprintf(stdout, "%s: ok, %d jurisdictions, %d feeds\n", *path, len(cfg.Jurisdictions), n)
	return nil
}

func cmdMigrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	applied, err := migrate(ctx, d.pool, nil)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "migrations: up to date")
		return nil
	}
	fmt.Fprintf(stdout, "migrations: applied %v\n", applied)
	return nil
}

func cmdPoll(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("poll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	migrate := fs.Bool("migrate", true, "apply pending migrations first")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the poll to `FILE` (go tool pprof)")
	quiet := fs.Bool("quiet", false, "no progress line (there is none unless stderr is a terminal)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 || !strings.Contains(fs.Arg(0), "/") {
		return usageError{"poll takes one JURISDICTION/FEED"}
	}
	key := fs.Arg(0)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signalContext()
	defer stop()
	prog := newProgress(stderr, *quiet)
	d, err := open(ctx, &c, openOptions{logs: stderr, migrate: *migrate, poll: true, progress: prog})
	if err != nil {
		return err
	}
	defer d.Close()
	if _, ok := d.cfg.Feed(key); !ok {
		return usageError{fmt.Sprintf("no feed %q in %s", key, c.config)}
	}
	if absent, err := d.absentFeeds(ctx); err != nil {
		return err
	} else if w := absentFeedsWarning(absent, c.config); w != "" {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := d.manager.Update(ctx, d.cfg); err != nil {
		return err
	}
	prog.Start()
	res, err := d.manager.Poll(ctx, key)
	prog.Stop()
	if err != nil {
		// Printed by run: a server's echo of a credential must not be.
		return d.secrets.Wrap(err)
	}
	if res.NotModified {
		fmt.Fprintf(stdout, "%s: poll %d ok: not modified since the last applied snapshot (%d features), %s\n",
			key, res.PollID, res.Features, res.Duration.Round(time.Millisecond))
		return nil
	}
	fmt.Fprintf(stdout, "%s: poll %d ok: %d features (%d added, %d modified, %d removed) in %d pages, %s\n",
		key, res.PollID, res.Features, res.Added, res.Modified, res.Removed, res.Pages, res.Duration.Round(time.Millisecond))
	return nil
}

// migrate applies pending migrations through pool.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) ([]int64, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrations.Up(ctx, db, migrations.WithLogger(logger))
}

// newHTTPClient returns the client every poll shares. Deadlines come from each
// attempt's context; the transport only bounds the phases a context cannot see.
func newHTTPClient() *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		MaxIdleConns:          200,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: t}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
