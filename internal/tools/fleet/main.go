// Command fleet is the driver of `scripts/bench.sh fleet`: a generated
// catalog of feeds (ArcGIS layers, GeoJSON documents and file downloads, in
// the OpenAddresses catalog's proportions, sizes long-tailed) over many
// loopback origins served by the fixture servers in child processes, a few
// of them flapping, polled by several `ingestd run` on one database, one of
// which is killed with SIGKILL during the first loads and started again
// later. It prints figures (time until every feed is fresh and the share
// fresh over time, polls per minute, scheduling lag per instance, peak RSS
// and goroutines per instance, database connections, PostgreSQL's CPU and
// I/O, relations, and where the database's size and reads went: storage.go)
// and checks (no feed polled by two instances at once, no
// poll lost or applied twice, every dead letter replayed once, the killed
// instance's claims taken over within their leases); a failed check makes
// it exit 1.
//
//	fleet -database-url URL -bin bin -out bench-out/fleet -feeds 5000 -origins 1000
//
// The database must be empty (bench.sh creates one per run); the fixture
// servers listen on 127.N.x.y:PORT, one address per origin.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/tools/fleet/catalog"
)

// options are the driver's flags.
type options struct {
	dbURL, bin, out string
	cat             catalog.Params
	instances       int
	interval        time.Duration
	maxInFlight     int
	conns           int
	killAt          float64
	restartAfter    time.Duration
	steady          time.Duration
	ceiling         time.Duration
	sample          time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.dbURL, "database-url", "", "the run's own, empty `URL` (its ingestd schema is created by the first instance)")
	flag.StringVar(&o.bin, "bin", "bin", "`DIR` holding ingestd, feedserver and arcgisserver")
	flag.StringVar(&o.out, "out", "bench-out/fleet", "`DIR` for the catalog, the configuration and the processes' logs")
	flag.IntVar(&o.cat.Feeds, "feeds", 5000, "feeds in the catalog")
	flag.IntVar(&o.cat.Origins, "origins", 1000, "origins (loopback servers) they are spread over")
	flag.Float64Var(&o.cat.ArcGISShare, "arcgis-share", 0.7, "share of ArcGIS layers; the rest GeoJSON and file downloads, half each")
	flag.Float64Var(&o.cat.Median, "median", 100, "median layer size (log-normal)")
	flag.Float64Var(&o.cat.Sigma, "sigma", 1.5, "standard deviation of the sizes' logarithm")
	flag.IntVar(&o.cat.MinSize, "min-size", 50, "smallest layer")
	flag.IntVar(&o.cat.Big, "big", 3, "layers of -big-features each (one of each kind in turn)")
	flag.IntVar(&o.cat.BigFeatures, "big-features", 250000, "size of the big layers")
	flag.IntVar(&o.cat.Flapping, "flapping", 5, "origins that answer 503 for -flap-for after their first request")
	flag.DurationVar(&o.cat.FlapFor, "flap-for", 90*time.Second, "how long a flapping origin is down")
	flag.StringVar(&o.cat.Host, "host", "127.77", "loopback prefix 127.N of the origins' addresses")
	flag.IntVar(&o.cat.Port, "port", 18400, "the origins' port")
	flag.Uint64Var(&o.cat.Seed, "seed", 40, "the catalog's random seed")
	flag.IntVar(&o.instances, "instances", 4, "`ingestd run` processes")
	flag.DurationVar(&o.interval, "interval", 10*time.Minute, "every feed's schedule (@every)")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 20, "max_in_flight of each instance")
	flag.IntVar(&o.conns, "conns", 0, "pool_max_conns of each instance (0: ingestd's own sizing, max_in_flight + 5)")
	flag.Float64Var(&o.killAt, "kill-at", 0.25, "once this share of feeds is loaded, SIGKILL the instance (the first spared) with the most polls running (0: no kill)")
	flag.DurationVar(&o.restartAfter, "restart-after", time.Minute, "start the killed instance again this long after the kill")
	flag.DurationVar(&o.steady, "steady", 2*time.Minute, "keep running this long after every feed is fresh (polls per minute, lag)")
	flag.DurationVar(&o.ceiling, "ceiling", time.Hour, "give up after this long")
	flag.DurationVar(&o.sample, "sample", 2*time.Second, "sampling period")
	flag.Parse()
	if o.dbURL == "" {
		fmt.Fprintln(os.Stderr, "fleet: -database-url is required")
		os.Exit(2)
	}
	if o.instances < 1 || (o.killAt > 0 && o.instances < 2) {
		fmt.Fprintln(os.Stderr, "fleet: -instances: want at least 1, and 2 with -kill-at")
		os.Exit(2)
	}
	failed, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	if failed > 0 {
		fmt.Printf("fleet: %d check(s) FAILED\n", failed)
		os.Exit(1)
	}
}

// child is a process the driver started: a fixture server or an instance.
type child struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// start runs bin with args, its output appended to out/name.log, and waits
// until a line of it contains ready ("" : does not wait).
func start(out, name, ready, bin string, args ...string) (*child, error) {
	c := &child{name: name, log: filepath.Join(out, name+".log"), exited: make(chan struct{})}
	f, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = pw, pw
	if err := c.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		found := ready == ""
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if !found && strings.Contains(line, ready) {
				found = true
				close(seen)
			}
		}
		_, _ = io.Copy(f, pr)
		f.Close()
	}()
	go func() {
		_ = c.cmd.Wait()
		pw.Close()
		close(c.exited)
	}()
	if ready == "" {
		return c, nil
	}
	select {
	case <-seen:
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("%s exited before it was ready; see %s", name, c.log)
	case <-time.After(5 * time.Minute):
		c.kill()
		return nil, fmt.Errorf("%s not ready after 5 min; see %s", name, c.log)
	}
}

func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// stop sends SIGTERM and waits up to within, then kills.
func (c *child) stop(within time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(within):
		c.kill()
	}
}

// instance is one `ingestd run` and what was sampled of it.
type instance struct {
	*child
	id         string // host:pid, as feed_status.poll_owner names it
	metrics    string
	peakRSS    int64 // kB, VmHWM
	goroutines float64
	lag        histogram
	polls      float64 // ingestd_feeds_polls_total (all outcomes), last scrape
	peakClaims int     // feeds claimed at once (feed_status.poll_owner)
	scrapes    int     // /metrics answers read
	scrapeErr  string  // the last failed scrape's error
	// scrapeFailures counts /metrics answers that were not 200.
	scrapeFailures int
}

// fleetRun is one run of the fleet: what its steps set up and what the
// sampling saw, for the figures and checks at the end.
type fleetRun struct {
	o       options
	ctx     context.Context
	cat     *catalog.Catalog
	total   int    // feeds in the catalog
	catPath string // the catalog as JSON, for the fixture servers
	cfgPath string // ingestd's configuration of it
	ingestd string // the ingestd binary
	runURL  string // the instances' database URL
	servers []*child
	pool    *pgxpool.Pool // the driver's own, small
	dbName  string
	ins     []*instance
	start0  time.Time // when the instances were started
	s       *sampler

	killed                *instance
	killedAt, killedLocal time.Time // the database's clock, this process's
	heldAtKill            []heldClaim
	restarted             bool
	allFresh, healthyAt   time.Time
	freshSeries           []string
	nextMark              float64
}

func run(o options) (int, error) {
	r := &fleetRun{o: o, ctx: context.Background(), nextMark: 0.1}
	defer r.close()
	if err := r.writeCatalog(); err != nil {
		return 0, err
	}
	if err := r.startServers(); err != nil {
		return 0, err
	}
	if err := r.prepareDatabase(); err != nil {
		return 0, err
	}
	before, err := readPGStats(r.ctx, r.pool)
	if err != nil {
		return 0, err
	}
	if err := r.startInstances(); err != nil {
		return 0, err
	}
	if err := r.sampleUntilDone(); err != nil {
		return 0, err
	}
	end := time.Now()
	after, err := readPGStats(r.ctx, r.pool)
	if err != nil {
		return 0, err
	}
	for _, in := range r.ins {
		if in.alive() {
			in.stop(2 * time.Minute)
		}
	}
	if err := r.printFigures(end, before, after); err != nil {
		return 0, err
	}
	failed, err := r.check()
	if err != nil {
		return 0, err
	}
	// What an operator runs, at this size.
	operatorQueries(r.ctx, r.pool, r.ingestd, r.o.dbURL)
	return failed, nil
}

// close kills the instances still alive, stops the fixture servers and
// closes the driver's pool.
func (r *fleetRun) close() {
	for _, in := range r.ins {
		if in.alive() {
			in.kill()
		}
	}
	for _, s := range r.servers {
		s.stop(10 * time.Second)
	}
	if r.pool != nil {
		r.pool.Close()
	}
}

// writeCatalog generates the catalog and writes it and ingestd's
// configuration of it under the output folder.
func (r *fleetRun) writeCatalog() error {
	if err := os.MkdirAll(r.o.out, 0o755); err != nil {
		return err
	}
	cat, err := catalog.Generate(r.o.cat)
	if err != nil {
		return err
	}
	r.cat = cat
	r.catPath = filepath.Join(r.o.out, "catalog.json")
	if err := cat.Save(r.catPath); err != nil {
		return err
	}
	r.total, _ = cat.Feeds()
	fmt.Printf("catalog: %s\n", cat.Summary())
	r.cfgPath = filepath.Join(r.o.out, "fleet.yaml")
	return os.WriteFile(r.cfgPath, []byte(config(cat, r.o)), 0o644)
}

// startServers starts the fixture servers the catalog needs, in child
// processes.
func (r *fleetRun) startServers() error {
	hasArc, hasDocs := false, false
	for _, or := range r.cat.Origins {
		hasArc = hasArc || or.ArcGIS
		hasDocs = hasDocs || !or.ArcGIS
	}
	t0 := time.Now()
	if hasArc {
		s, err := start(r.o.out, "arcgisserver", "serving the fleet", filepath.Join(r.o.bin, "arcgisserver"), "-fleet", r.catPath, "-max-record-count", "2000")
		if err != nil {
			return err
		}
		r.servers = append(r.servers, s)
	}
	if hasDocs {
		s, err := start(r.o.out, "feedserver", "serving the fleet", filepath.Join(r.o.bin, "feedserver"), "-fleet", r.catPath)
		if err != nil {
			return err
		}
		r.servers = append(r.servers, s)
	}
	fmt.Printf("fixture servers: %d child processes serving %d origins, ready in %s\n", len(r.servers), len(r.cat.Origins), time.Since(t0).Round(time.Millisecond))
	return nil
}

// prepareDatabase migrates the database and installs the instrumentation:
// the history of every claim, written by a trigger in the claiming
// transaction.
func (r *fleetRun) prepareDatabase() error {
	r.ingestd = filepath.Join(r.o.bin, "ingestd")
	if out, err := exec.Command(r.ingestd, "migrate", "-database-url", r.o.dbURL).CombinedOutput(); err != nil {
		return fmt.Errorf("ingestd migrate: %v\n%s", err, out)
	}
	pcfg, err := pgxpool.ParseConfig(r.o.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = 3
	pcfg.ConnConfig.RuntimeParams["search_path"] = "ingestd, public"
	if r.pool, err = pgxpool.NewWithConfig(r.ctx, pcfg); err != nil {
		return err
	}
	if _, err := r.pool.Exec(r.ctx, instrumentSQL); err != nil {
		return fmt.Errorf("instrument: %w", err)
	}
	r.runURL = r.o.dbURL
	if r.o.conns > 0 {
		r.runURL = withParam(r.runURL, "pool_max_conns", strconv.Itoa(r.o.conns))
	}
	return r.pool.QueryRow(r.ctx, `SELECT current_database()`).Scan(&r.dbName)
}

// startInstance starts one `ingestd run` named name and waits until it runs.
func (r *fleetRun) startInstance(name string) (*instance, error) {
	c, err := start(r.o.out, name, `"msg":"ingestd running"`, r.ingestd, "run", "-config", r.cfgPath, "-database-url", r.runURL,
		"-metrics-addr", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	in := &instance{child: c, id: fmt.Sprintf("%s:%d", host, c.cmd.Process.Pid)}
	in.metrics, err = metricsAddr(c.log)
	return in, err
}

// startInstances starts every instance at once, as a fleet restarted
// together: which instance claims what is then the claim protocol's doing,
// not the start order's.
func (r *fleetRun) startInstances() error {
	r.start0 = time.Now()
	type started struct {
		in  *instance
		err error
	}
	ch := make([]chan started, r.o.instances)
	for i := range r.o.instances {
		ch[i] = make(chan started, 1)
		go func() {
			in, err := r.startInstance(fmt.Sprintf("instance%d", i+1))
			ch[i] <- started{in, err}
		}()
	}
	var startErr error
	for i := range r.o.instances {
		res := <-ch[i]
		if res.err != nil {
			startErr = res.err
			continue
		}
		r.ins = append(r.ins, res.in)
	}
	if startErr != nil {
		return startErr
	}
	fmt.Printf("instances: %d `ingestd run` started together, all running %s later (max_in_flight %d, pool %s, @every %s)\n",
		r.o.instances, time.Since(r.start0).Round(time.Millisecond), r.o.maxInFlight, poolText(r.o), r.o.interval)
	return nil
}

// sampleUntilDone samples the run until every feed is fresh, the steady
// phase is over and no dead letter is open (or the ceiling), killing an
// instance on the way and starting it again.
func (r *fleetRun) sampleUntilDone() error {
	r.s = &sampler{pool: r.pool, db: r.dbName, cpu: map[int]procStat{}, flapping: []string{}}
	healthyTotal := 0
	for _, or := range r.cat.Origins {
		if or.Flap > 0 {
			r.s.flapping = append(r.s.flapping, or.ID)
		} else {
			healthyTotal += len(or.Layers)
		}
	}
	tick := time.NewTicker(r.o.sample)
	defer tick.Stop()
	for {
		<-tick.C
		elapsed := time.Since(r.start0)
		fresh, healthy, err := r.s.poll(r.ctx, r.ins)
		if err != nil {
			return err
		}
		if n := len(r.s.staging); n == 0 || elapsed-r.s.staging[n-1].at >= stagingEvery {
			if err := r.s.sampleStaging(r.ctx, elapsed); err != nil {
				return err
			}
		}
		if r.healthyAt.IsZero() && healthy == healthyTotal {
			r.healthyAt = time.Now()
			fmt.Printf("fresh: every feed of a healthy origin (%d) loaded %s after the start\n", healthyTotal, elapsed.Round(time.Second))
		}
		share := float64(fresh) / float64(r.total)
		for share >= r.nextMark-1e-9 && r.nextMark <= 1.0001 {
			r.freshSeries = append(r.freshSeries, fmt.Sprintf("%.0f%% %s", r.nextMark*100, elapsed.Round(time.Second)))
			r.nextMark += 0.1
		}
		if err := r.killOrRestart(share, fresh, elapsed); err != nil {
			return err
		}
		if r.allFresh.IsZero() && fresh == r.total {
			r.allFresh = time.Now()
			fmt.Printf("fresh: every feed loaded %s after the start\n", elapsed.Round(time.Second))
		}
		var openLetters int
		if err := r.pool.QueryRow(r.ctx, `SELECT count(*) FROM dead_letter WHERE status IN ('pending', 'replaying')`).Scan(&openLetters); err != nil {
			return err
		}
		if !r.allFresh.IsZero() && time.Since(r.allFresh) >= r.o.steady && openLetters == 0 && (r.killed == nil || r.restarted) {
			return nil
		}
		if elapsed > r.o.ceiling {
			fmt.Printf("ceiling: %d of %d feeds loaded, %d dead letters open after %s; stopping\n", fresh, r.total, openLetters, r.o.ceiling)
			return nil
		}
	}
}

// killOrRestart kills the busiest instance once share of the feeds are
// loaded, and starts it again restartAfter later. The kill waits for the
// victim to be busy: polls running (claims held, pages staging or
// applying), so that the takeover has something to take.
func (r *fleetRun) killOrRestart(share float64, fresh int, elapsed time.Duration) error {
	busy, victim := 0, -1
	if r.o.killAt > 0 && r.killed == nil && share >= r.o.killAt {
		// The instance with the most polls running, the first one
		// spared (a fleet's longest-running member).
		for i, in := range r.ins[1:] {
			var n int
			if err := r.pool.QueryRow(r.ctx, `SELECT count(*) FROM polls WHERE status = 'running' AND owner = $1`, in.id).Scan(&n); err != nil {
				return err
			}
			if victim < 0 || n > busy {
				busy, victim = n, i+1
			}
		}
	}
	if victim >= 0 && (busy > 0 || share >= 0.95) {
		r.killed = r.ins[victim]
		r.killed.kill()
		r.killedLocal = time.Now()
		if err := r.pool.QueryRow(r.ctx, `SELECT clock_timestamp()`).Scan(&r.killedAt); err != nil {
			return err
		}
		var err error
		if r.heldAtKill, err = claimsOf(r.ctx, r.pool, r.killed.id); err != nil {
			return err
		}
		fmt.Printf("kill: SIGKILL of %s (%s) at %s, %d of %d feeds loaded; it had %d polls running and held %d claims\n",
			r.killed.name, r.killed.id, elapsed.Round(time.Second), fresh, r.total, busy, len(r.heldAtKill))
	}
	if r.killed != nil && !r.restarted && time.Since(r.killedLocal) >= r.o.restartAfter {
		in, err := r.startInstance(r.killed.name + "-restarted")
		if err != nil {
			return err
		}
		r.ins = append(r.ins, in)
		r.restarted = true
		fmt.Printf("restart: %s started again as %s at %s\n", r.killed.name, in.id, time.Since(r.start0).Round(time.Second))
	}
	return nil
}

// printFigures prints the run's figures: freshness over time, polls, each
// instance's, the database's.
func (r *fleetRun) printFigures(end time.Time, before, after pgStats) error {
	fmt.Printf("fresh over time (share of feeds loaded at least once, since the first instance started): %s\n", strings.Join(r.freshSeries, ", "))
	if !r.healthyAt.IsZero() {
		fmt.Printf("time until every feed of a healthy origin is fresh: %s\n", r.healthyAt.Sub(r.start0).Round(time.Second))
	}
	if !r.allFresh.IsZero() {
		fmt.Printf("time until every feed is fresh (the flapping origins' included): %s\n", r.allFresh.Sub(r.start0).Round(time.Second))
	}
	if err := pollFigures(r.ctx, r.pool, r.start0, r.allFresh, end); err != nil {
		return err
	}
	for _, in := range r.ins {
		state := "stopped"
		if in == r.killed {
			state = "killed (figures up to its last sample)"
		}
		goroutines := fmt.Sprintf("n/a (%d scrapes, last error %q)", in.scrapes, in.scrapeErr)
		if in.goroutines > 0 {
			goroutines = fmt.Sprintf("%.0f", in.goroutines)
		}
		fmt.Printf("%s (%s, %s): peak RSS %d MB, peak goroutines %s, peak claims held %d, scheduling lag p50 %s p99 %s over %d ticks\n",
			in.name, in.id, state, in.peakRSS/1024, goroutines, in.peakClaims, in.lag.quantile(0.5), in.lag.quantile(0.99), int64(in.lag.count))
		if in.scrapeFailures > 0 {
			fmt.Printf("  %s: %d of %d scrapes of /metrics failed; the last: %s\n", in.name, in.scrapeFailures, in.scrapes+in.scrapeFailures, in.scrapeErr)
		}
	}
	if err := pollsByInstance(r.ctx, r.pool, r.ins); err != nil {
		return err
	}
	fmt.Printf("database connections of the run (pg_stat_activity): peak %d in all, peak %d active; peak locks held %d\n", r.s.peakConns, r.s.peakActive, r.s.peakLocks)
	r.s.printCPU(end.Sub(r.start0))
	after.printDelta(before, end.Sub(r.start0))
	if err := relations(r.ctx, r.pool); err != nil {
		return err
	}
	r.s.printStaging()
	if err := relationIO(r.ctx, r.pool); err != nil {
		return err
	}
	return r.s.active.print(filepath.Join(r.o.out, "statements.txt"), r.o.sample)
}

// check runs the checks and returns how many failed.
func (r *fleetRun) check() (int, error) {
	failed := 0
	check := func(ok bool, format string, args ...any) {
		verdict := "ok"
		if !ok {
			verdict = "FAILED"
			failed++
		}
		fmt.Printf("check %s: %s\n", verdict, fmt.Sprintf(format, args...))
	}
	if err := checks(r.ctx, r.pool, r.cat, check); err != nil {
		return 0, err
	}
	checkLogs(r.ins, check)
	if r.killed != nil {
		if err := checkTakeover(r.ctx, r.pool, r.killed.id, r.killedAt, r.heldAtKill, check); err != nil {
			return 0, err
		}
	}
	return failed, nil
}

// config is the ingestd configuration of the catalog: one jurisdiction per
// origin.
func config(c *catalog.Catalog, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "max_in_flight: %d\ndefaults:\n  schedule: \"@every %s\"\n  timeout: 30m\njurisdictions:\n", o.maxInFlight, o.interval)
	for _, or := range c.Origins {
		if len(or.Layers) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  - id: %s\n    feeds:\n", or.ID)
		for _, l := range or.Layers {
			fmt.Fprintf(&b, "      - {id: %s, kind: %s, url: %q}\n", l.Name, l.Kind, catalog.URL(or, l))
		}
	}
	return b.String()
}

func poolText(o options) string {
	if o.conns > 0 {
		return fmt.Sprintf("pool_max_conns %d", o.conns)
	}
	return fmt.Sprintf("ingestd's own (%d)", o.maxInFlight+5)
}

// withParam adds a query parameter to a database URL.
func withParam(raw, k, v string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// metricsAddr reads the instance's "serving metrics" log line.
func metricsAddr(log string) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(log)
		for line := range strings.Lines(string(b)) {
			if _, rest, ok := strings.Cut(line, `"msg":"serving metrics"`); ok {
				if _, a, ok := strings.Cut(rest, `"addr":"`); ok {
					if addr, _, ok := strings.Cut(a, `"`); ok {
						return addr, nil
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond) // the log's polling interval
	}
	return "", fmt.Errorf("no \"serving metrics\" line in %s", log)
}

// heldClaim is a claim a killed instance held.
type heldClaim struct {
	feed      string
	claimedAt time.Time
	until     time.Time
}

func claimsOf(ctx context.Context, pool *pgxpool.Pool, owner string) ([]heldClaim, error) {
	rows, err := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, coalesce(poll_claimed_at, 'epoch'), poll_lease_until FROM feed_status WHERE poll_owner = $1`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []heldClaim
	for rows.Next() {
		var h heldClaim
		if err := rows.Scan(&h.feed, &h.claimedAt, &h.until); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// instrumentSQL records every change of a feed's poll claim, in the
// claiming transaction and the database's clock.
const instrumentSQL = `
CREATE TABLE fleet_claims (at timestamptz, jurisdiction text, feed text, owner text, claimed_at timestamptz, lease_until timestamptz);
CREATE FUNCTION fleet_claims() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.poll_claimed_at IS DISTINCT FROM OLD.poll_claimed_at THEN
		INSERT INTO fleet_claims VALUES (clock_timestamp(), NEW.jurisdiction, NEW.feed, NEW.poll_owner, NEW.poll_claimed_at, NEW.poll_lease_until);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER fleet_claims AFTER UPDATE OF poll_claimed_at ON feed_status
	FOR EACH ROW EXECUTE FUNCTION fleet_claims();
`

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
}

// quantile is the upper bound of the bucket holding quantile q, as text
// ("≤ 0.05 s"); the buckets are all the resolution there is.
func (h histogram) quantile(q float64) string {
	if h.count == 0 {
		return "n/a"
	}
	for i, c := range h.counts {
		if c >= q*h.count {
			return fmt.Sprintf("≤%gs", h.bounds[i])
		}
	}
	return ">" + fmt.Sprint(h.bounds[len(h.bounds)-1]) + "s"
}

// scrape reads an instance's goroutines, scheduling lag and polls.
func (in *instance) scrape() {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + in.metrics + "/metrics")
	if err != nil {
		in.scrapeErr = err.Error()
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		in.scrapeErr = resp.Status + ": " + strings.Join(strings.Fields(string(b)), " ")
		in.scrapeFailures++
		return
	}
	in.scrapes++
	var h histogram
	var polls float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case name == "go_goroutines":
			in.goroutines = max(in.goroutines, v)
		case strings.HasPrefix(name, `ingestd_feeds_scheduler_lag_seconds_bucket{le="`):
			le := strings.TrimSuffix(strings.TrimPrefix(name, `ingestd_feeds_scheduler_lag_seconds_bucket{le="`), `"}`)
			if le == "+Inf" {
				continue
			}
			b, err := strconv.ParseFloat(le, 64)
			if err == nil {
				h.bounds = append(h.bounds, b)
				h.counts = append(h.counts, v)
			}
		case name == "ingestd_feeds_scheduler_lag_seconds_count":
			h.count = v
		case strings.HasPrefix(name, "ingestd_feeds_polls_total"):
			polls += v
		}
	}
	if err := sc.Err(); err != nil {
		in.scrapeErr = err.Error()
	}
	if h.count > 0 {
		in.lag = h
	}
	in.polls = polls
}

// vmHWM is a process's peak resident set, kB.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// procStat is what /proc says of one PostgreSQL backend: CPU ticks and
// bytes of storage I/O.
type procStat struct {
	ticks               int64
	readBytes, written  int64
	backendType, queryS string
}

// sampler samples the run: freshness, instances, the database's backends.
type sampler struct {
	pool                             *pgxpool.Pool
	db                               string
	peakConns, peakActive, peakLocks int
	cpu                              map[int]procStat
	flapping                         []string // the flapping origins' jurisdictions
	staging                          []stagingSample
	active                           activeStatements
}

// poll takes one sample and returns how many feeds have been loaded, in
// all and of the healthy origins.
func (s *sampler) poll(ctx context.Context, ins []*instance) (int, int, error) {
	for _, in := range ins {
		if !in.alive() {
			continue
		}
		if r := vmHWM(in.cmd.Process.Pid); r > 0 {
			in.peakRSS = r
		}
		in.scrape()
	}
	var fresh, healthy int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE jurisdiction <> ALL ($1))
		FROM feed_status WHERE configured AND last_success_at IS NOT NULL`, s.flapping).Scan(&fresh, &healthy); err != nil {
		return 0, 0, err
	}
	held := map[string]int{}
	rows, err := s.pool.Query(ctx, `SELECT poll_owner, count(*) FROM feed_status WHERE poll_owner IS NOT NULL GROUP BY 1`)
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var owner string
		var n int
		if err := rows.Scan(&owner, &n); err != nil {
			rows.Close()
			return 0, 0, err
		}
		held[owner] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	for _, in := range ins {
		in.peakClaims = max(in.peakClaims, held[in.id])
	}
	rows, err = s.pool.Query(ctx, `SELECT pid, coalesce(state = 'active', false), coalesce(backend_type, ''), coalesce(query, ''),
			coalesce(wait_event_type || ':' || wait_event, '')
		FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, s.db)
	if err != nil {
		return 0, 0, err
	}
	conns, active := 0, 0
	for rows.Next() {
		var pid int
		var act bool
		var bt, query, wait string
		if err := rows.Scan(&pid, &act, &bt, &query, &wait); err != nil {
			rows.Close()
			return 0, 0, err
		}
		if bt == "client backend" {
			conns++
			if act {
				active++
				s.active.add(query, wait)
			}
		}
		if st, ok := readProc(pid); ok {
			st.backendType = bt
			s.cpu[pid] = st
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	s.peakConns, s.peakActive = max(s.peakConns, conns), max(s.peakActive, active)
	var locks int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = $1`, s.db).Scan(&locks); err != nil {
		return 0, 0, err
	}
	s.peakLocks = max(s.peakLocks, locks)
	return fresh, healthy, nil
}

// readProc reads a backend's CPU ticks and I/O bytes from /proc.
func readProc(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return procStat{}, false
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return procStat{}, false
	}
	// After the command: state is field 3, utime 14 and stime 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	out := procStat{ticks: ut + st}
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for line := range strings.Lines(string(io)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "read_bytes":
				out.readBytes = n
			case "write_bytes":
				out.written = n
			}
		}
	}
	return out, true
}

// printCPU prints the CPU time and storage I/O of the run's backends (the
// last sample of each: a backend's last seconds before it exited are lost).
func (s *sampler) printCPU(wall time.Duration) {
	var ticks, rd, wr int64
	byType := map[string]int64{}
	for _, st := range s.cpu {
		ticks += st.ticks
		rd += st.readBytes
		wr += st.written
		byType[st.backendType] += st.ticks
	}
	const hz = 100 // USER_HZ on Linux
	cpu := time.Duration(ticks) * time.Second / hz
	var types []string
	for t, n := range byType {
		types = append(types, fmt.Sprintf("%s %s", t, (time.Duration(n)*time.Second/hz).Round(time.Second)))
	}
	sort.Strings(types)
	fmt.Printf("PostgreSQL backends of the run (/proc, %d processes): CPU %s (%.2f cores over %s; %s), storage reads %d MB, writes %d MB\n",
		len(s.cpu), cpu.Round(time.Second), cpu.Seconds()/wall.Seconds(), wall.Round(time.Second), strings.Join(types, ", "), rd>>20, wr>>20)
}

// pgStats are cumulative counters of pg_stat_database (the run's database)
// and of the cluster's WAL and checkpoints (shared with whatever else the
// server runs).
type pgStats struct {
	xact, blksRead, blksHit, tupIns, tupUpd, tupDel, tempBytes, deadlocks int64
	walBytes                                                              int64
	buffersCheckpoint, buffersBackend                                     int64
	dbBytes                                                               int64
}

func readPGStats(ctx context.Context, pool *pgxpool.Pool) (pgStats, error) {
	var s pgStats
	err := pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback, blks_read, blks_hit, tup_inserted, tup_updated, tup_deleted, temp_bytes, deadlocks,
			(SELECT wal_bytes::bigint FROM pg_stat_wal), (SELECT buffers_checkpoint + buffers_clean FROM pg_stat_bgwriter),
			(SELECT buffers_backend FROM pg_stat_bgwriter), pg_database_size(current_database())
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.xact, &s.blksRead, &s.blksHit, &s.tupIns, &s.tupUpd, &s.tupDel,
		&s.tempBytes, &s.deadlocks, &s.walBytes, &s.buffersCheckpoint, &s.buffersBackend, &s.dbBytes)
	return s, err
}

func (s pgStats) printDelta(b pgStats, wall time.Duration) {
	mb := func(blocks int64) int64 { return blocks * 8192 >> 20 }
	fmt.Printf("pg_stat_database of the run: %d transactions (%.0f/s), blocks read %d MB, hit %d MB (%.1f%% hit), rows inserted %d, updated %d, deleted %d, temp files %d MB, deadlocks %d; database size %d MB\n",
		s.xact-b.xact, float64(s.xact-b.xact)/wall.Seconds(), mb(s.blksRead-b.blksRead), mb(s.blksHit-b.blksHit),
		100*float64(s.blksHit-b.blksHit)/float64(max(1, s.blksHit-b.blksHit+s.blksRead-b.blksRead)),
		s.tupIns-b.tupIns, s.tupUpd-b.tupUpd, s.tupDel-b.tupDel, (s.tempBytes-b.tempBytes)>>20, s.deadlocks-b.deadlocks, s.dbBytes>>20)
	fmt.Printf("cluster-wide over the run (shared with whatever else the server ran): WAL %d MB, buffers written by checkpointer and bgwriter %d MB, by backends %d MB\n",
		(s.walBytes-b.walBytes)>>20, mb(s.buffersCheckpoint-b.buffersCheckpoint), mb(s.buffersBackend-b.buffersBackend))
}

// pollFigures prints polls per minute over the first loads and the steady
// phase, by outcome.
func pollFigures(ctx context.Context, pool *pgxpool.Pool, start, fresh, end time.Time) error {
	window := func(from, to time.Time, label string) error {
		if from.IsZero() || !to.After(from) {
			return nil
		}
		rows, err := pool.Query(ctx, `SELECT status, count(*) FROM polls WHERE started_at >= $1 AND started_at < $2 GROUP BY 1 ORDER BY 1`, from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		var parts []string
		n := 0
		for rows.Next() {
			var st string
			var c int
			if err := rows.Scan(&st, &c); err != nil {
				return err
			}
			n += c
			parts = append(parts, fmt.Sprintf("%s %d", st, c))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		mins := to.Sub(from).Minutes()
		fmt.Printf("polls %s (%s): %d, %.0f per minute (%s)\n", label, to.Sub(from).Round(time.Second), n, float64(n)/mins, strings.Join(parts, ", "))
		return nil
	}
	// Minute by minute: an @every schedule puts every feed's tick in a
	// window after each interval, so a window's mean hides the bursts.
	rows, err := pool.Query(ctx, `SELECT floor(extract(epoch FROM started_at - $1::timestamptz) / 60)::int, count(*)
		FROM polls WHERE started_at >= $1 GROUP BY 1 ORDER BY 1`, start)
	if err != nil {
		return err
	}
	var perMinute []string
	for rows.Next() {
		var m, n int
		if err := rows.Scan(&m, &n); err != nil {
			rows.Close()
			return err
		}
		perMinute = append(perMinute, fmt.Sprintf("%d:%d", m, n))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("polls begun per minute since the start (minute:polls): %s\n", strings.Join(perMinute, " "))
	if fresh.IsZero() {
		return window(start, end, "over the run")
	}
	if err := window(start, fresh, "during the first loads"); err != nil {
		return err
	}
	return window(fresh, end, "once every feed was fresh")
}

// pollsByInstance prints how the polls were shared among the instances.
func pollsByInstance(ctx context.Context, pool *pgxpool.Pool, ins []*instance) error {
	names := map[string]string{}
	for _, in := range ins {
		names[in.id] = in.name
	}
	rows, err := pool.Query(ctx, `SELECT coalesce(owner, ''), count(*), count(*) FILTER (WHERE status = 'succeeded') FROM polls GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var owner string
		var n, ok int
		if err := rows.Scan(&owner, &n, &ok); err != nil {
			return err
		}
		name := names[owner]
		if name == "" {
			name = owner
		}
		parts = append(parts, fmt.Sprintf("%s %d (%d succeeded)", name, n, ok))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("polls by instance: %s\n", strings.Join(parts, ", "))
	return nil
}

// relations prints the relations in the database by kind.
func relations(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT CASE c.relkind WHEN 'r' THEN 'tables' WHEN 'p' THEN 'partitioned tables' WHEN 'i' THEN 'indexes'
			WHEN 'I' THEN 'partitioned indexes' WHEN 't' THEN 'TOAST tables' WHEN 'v' THEN 'views' WHEN 'S' THEN 'sequences' WHEN 'c' THEN 'composite types' ELSE c.relkind::text END,
			count(*)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_temp%'
			AND (n.nspname <> 'pg_toast' OR c.relkind = 't')
		GROUP BY 1 ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var parts []string
	all := 0
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		all += n
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var schemas int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' AND nspname NOT IN ('information_schema', 'public', 'ingestd')`).Scan(&schemas); err != nil {
		return err
	}
	fmt.Printf("relations in the database (outside the catalogs): %d (%s); %d layer schemas\n", all, strings.Join(parts, ", "), schemas)
	return nil
}

// checks verifies what the run must never do.
func checks(ctx context.Context, pool *pgxpool.Pool, cat *catalog.Catalog, check func(bool, string, ...any)) error {
	// No feed polled by two instances at once: a feed's polls do not
	// overlap, whoever ran them (a dead instance's polls, ended by the
	// sweep, excepted).
	var overlaps int
	var example string
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(min(jurisdiction || '/' || feed || ': poll ' || id || ' (' || coalesce(owner, '') || ') began before poll ' || prev_id || ' (' || prev_owner || ') ended'), '')
		FROM (SELECT jurisdiction, feed, id, owner, started_at,
				lag(coalesce(finished_at, 'infinity')) OVER w AS prev_end, lag(id) OVER w AS prev_id, lag(coalesce(owner, '')) OVER w AS prev_owner
			FROM polls WHERE coalesce(error, '') NOT LIKE 'interrupted: instance %'
			WINDOW w AS (PARTITION BY jurisdiction, feed ORDER BY started_at, id)) p
		WHERE started_at < prev_end`).Scan(&overlaps, &example); err != nil {
		return err
	}
	var polls, owners int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT owner) FROM polls`).Scan(&polls, &owners); err != nil {
		return err
	}
	check(overlaps == 0, "no feed polled by two instances at once: %d polls by %d instances, %d overlapping another poll of its feed %s", polls, owners, overlaps, example)

	// No poll lost or applied twice: every feed holds its layer's size,
	// and what its successful polls added less what they removed is that
	// size (a snapshot applied twice would add its features twice or show
	// them unchanged, a lost one would leave the feed short or never loaded).
	var js, fs []string
	var ns []int
	for _, o := range cat.Origins {
		for _, l := range o.Layers {
			js, fs, ns = append(js, o.ID), append(fs, l.Name), append(ns, l.Features)
		}
	}
	var wrong, never, running, stale int
	if err := pool.QueryRow(ctx, `WITH want AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) AS w(jurisdiction, feed, n)),
		got AS (SELECT w.jurisdiction, w.feed, w.n, s.feature_count, s.last_success_at, s.expected_interval,
				(SELECT coalesce(sum(p.added), 0) - coalesce(sum(p.removed), 0) FROM polls p
					WHERE p.jurisdiction = w.jurisdiction AND p.feed = w.feed AND p.status = 'succeeded') AS net
			FROM want w LEFT JOIN feed_status s USING (jurisdiction, feed))
		SELECT count(*) FILTER (WHERE last_success_at IS NOT NULL AND (feature_count IS DISTINCT FROM n OR net IS DISTINCT FROM n)),
			count(*) FILTER (WHERE last_success_at IS NULL),
			(SELECT count(*) FROM polls WHERE status = 'running'),
			count(*) FILTER (WHERE last_success_at < now() - 2 * expected_interval)
		FROM got`, js, fs, ns).Scan(&wrong, &never, &running, &stale); err != nil {
		return err
	}
	// A poll left running names itself: which instance began it, when,
	// and how far it got.
	var leftRunning string
	if running > 0 {
		if err := pool.QueryRow(ctx, `SELECT string_agg(format('poll %s of %s/%s by %s, begun %s, %s pages', id, jurisdiction, feed, coalesce(owner, '?'),
				started_at, coalesce(pages::text, '?')), '; ' ORDER BY id)
			FROM (SELECT * FROM polls WHERE status = 'running' ORDER BY id LIMIT 3) p`).Scan(&leftRunning); err != nil {
			return err
		}
	}
	check(wrong == 0 && never == 0 && running == 0 && stale == 0,
		"no poll lost or applied twice: %d feeds, %d never loaded, %d whose features or net additions differ from the layer's size, %d polls left running, %d stale at the end %s",
		len(ns), never, wrong, running, stale, leftRunning)
	var staged, claimsLeft int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM staged_pages) + (SELECT count(*) FROM staged_features),
		(SELECT count(*) FROM feed_status WHERE poll_owner IS NOT NULL)`).Scan(&staged, &claimsLeft); err != nil {
		return err
	}
	check(staged == 0 && claimsLeft == 0, "nothing left behind after the instances stopped: %d staged rows, %d claims", staged, claimsLeft)

	// Every dead letter replayed once: each ended done, its poll
	// succeeded, no poll replayed by two letters.
	var letters, done, open, abandoned, badPoll, shared, attempts int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE d.status = 'done'),
			count(*) FILTER (WHERE d.status IN ('pending', 'replaying')), count(*) FILTER (WHERE d.status = 'abandoned'),
			count(*) FILTER (WHERE d.status = 'done' AND coalesce(p.status, '') <> 'succeeded'),
			(SELECT count(*) FROM (SELECT poll_id FROM dead_letter WHERE status = 'done' AND poll_id IS NOT NULL GROUP BY 1 HAVING count(*) > 1) x),
			coalesce(sum(d.attempts), 0)
		FROM dead_letter d LEFT JOIN polls p ON p.id = d.poll_id`).Scan(&letters, &done, &open, &abandoned, &badPoll, &shared, &attempts); err != nil {
		return err
	}
	check(open == 0 && abandoned == 0 && badPoll == 0 && shared == 0,
		"every dead letter replayed once: %d letters (%d replays deferred), %d done, %d still open, %d abandoned, %d done whose poll did not succeed, %d polls replayed by two letters",
		letters, attempts, done, open, abandoned, badPoll, shared)
	return nil
}

// checkLogs checks the instances' logs for polls that failed and could not
// be parked: no dead letter replays them, and their feed waits for its next
// tick. Each such line is counted by message and error.
func checkLogs(ins []*instance, check func(bool, string, ...any)) {
	lost := map[string]int{}
	n := 0
	for _, in := range ins {
		b, err := os.ReadFile(in.log)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if !strings.Contains(line, `"level":"ERROR"`) {
				continue
			}
			_, msg, _ := strings.Cut(line, `"msg":"`)
			msg, _, _ = strings.Cut(msg, `"`)
			if msg != "parking poll in the dead-letter queue" && msg != "discarding staged pages" {
				continue
			}
			_, e, _ := strings.Cut(line, `"error":"`)
			e, _, _ = strings.Cut(e, `"`)
			if i := strings.LastIndex(e, ": "); i >= 0 {
				e = e[i+2:] // the cause, without the poll and feed
			}
			lost[msg+": "+e]++
			if msg == "parking poll in the dead-letter queue" {
				n++
			}
		}
	}
	var parts []string
	for k, v := range lost {
		parts = append(parts, fmt.Sprintf("%d × %s", v, k))
	}
	sort.Strings(parts)
	check(n == 0, "every poll that failed was parked for a replay: %d could not be (their feeds wait for their next tick) %s", n, strings.Join(parts, "; "))
}

// checkTakeover checks that every claim the killed instance held was taken
// by another instance after the kill and before the claim's lease ran out,
// but for those whose poll had succeeded before the kill.
func checkTakeover(ctx context.Context, pool *pgxpool.Pool, dead string, killedAt time.Time, held []heldClaim, check func(bool, string, ...any)) error {
	late, never := 0, 0
	var longest time.Duration
	var example string
	done := 0
	var span takeoverSpan
	for _, h := range held {
		span.lease(h.until.Sub(h.claimedAt))
		// A claim whose poll had succeeded before the kill (the instance
		// died before releasing it) is not polled again until its next tick.
		var tickDone bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM polls p
			WHERE p.jurisdiction || '/' || p.feed = $1 AND p.owner = $2 AND p.status = 'succeeded'
			AND p.started_at >= $3)`, h.feed, dead, h.claimedAt).Scan(&tickDone); err != nil {
			return err
		}
		if tickDone {
			done++
			continue
		}
		var taken, released *time.Time // min() over no row is NULL
		if err := pool.QueryRow(ctx, `SELECT min(at) FILTER (WHERE owner IS NOT NULL AND owner <> $3 AND claimed_at IS NOT NULL),
				min(at) FILTER (WHERE owner IS NULL)
			FROM fleet_claims WHERE jurisdiction || '/' || feed = $1 AND at > $2`, h.feed, killedAt, dead).Scan(&taken, &released); err != nil {
			return err
		}
		span.add(killedAt, released, taken)
		switch {
		case taken == nil:
			never++
			example = h.feed + ": never claimed again"
		case !taken.Before(h.until):
			at := *taken
			late++
			example = fmt.Sprintf("%s: claimed again %s after the kill, its lease ran out %s after it", h.feed, at.Sub(killedAt).Round(time.Millisecond), h.until.Sub(killedAt).Round(time.Millisecond))
		default:
			longest = max(longest, taken.Sub(killedAt))
		}
	}
	check(len(held) > 0 && late == 0 && never == 0, "the killed instance's %d claims taken over within their leases (%d whose poll had succeeded left alone): %d late, %d never (the last taken %s after the kill) %s",
		len(held), done, late, never, longest.Round(time.Millisecond), example)
	span.print()
	return nil
}

// takeoverSpan is when the killed instance's claims were released (the
// survivors' sweeps end them) and claimed again (a survivor's poll of the
// feed begins once the feed has one of its poll slots), after the kill.
type takeoverSpan struct {
	released, taken  []time.Duration
	leaseLo, leaseHi time.Duration
}

func (t *takeoverSpan) lease(d time.Duration) {
	if t.leaseLo == 0 || d < t.leaseLo {
		t.leaseLo = d
	}
	t.leaseHi = max(t.leaseHi, d)
}

func (t *takeoverSpan) add(kill time.Time, released, taken *time.Time) {
	if released != nil {
		t.released = append(t.released, released.Sub(kill))
	}
	if taken != nil {
		t.taken = append(t.taken, taken.Sub(kill))
	}
}

func (t *takeoverSpan) print() {
	span := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		slices.Sort(ds)
		return fmt.Sprintf("%d, %s to %s (median %s)", len(ds), ds[0].Round(time.Second), ds[len(ds)-1].Round(time.Second), ds[len(ds)/2].Round(time.Second))
	}
	fmt.Printf("takeover: after the kill, claims released by the survivors' sweeps: %s; claimed again by a survivor's poll: %s; leases %s to %s (a claim's lease is its feed's timeout + queue_timeout + 1 min)\n",
		span(t.released), span(t.taken), t.leaseLo.Round(time.Second), t.leaseHi.Round(time.Second))
}

// operatorQueries times what an operator runs at this size: the generic
// view over every feed, the freshness view, `ingestd status`. A failure is
// a finding, printed, not a failed run.
func operatorQueries(ctx context.Context, pool *pgxpool.Pool, ingestd, dbURL string) {
	for _, q := range []struct{ name, sql string }{
		{"SELECT count(*) FROM features (every feed)", `SELECT count(*) FROM features`},
		{"SELECT count(*) FROM feed_freshness", `SELECT count(*) FROM feed_freshness`},
		{"SELECT status, count(*) FROM feed_freshness GROUP BY 1", `SELECT status, count(*) FROM feed_freshness GROUP BY 1`},
	} {
		t := time.Now()
		qctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a hang bound
		rows, err := pool.Query(qctx, q.sql)
		n := 0
		if err == nil {
			for rows.Next() {
				n++
			}
			rows.Close()
			err = rows.Err()
		}
		cancel()
		if err != nil {
			fmt.Printf("operator query %s: FAILS after %s: %v\n", q.name, time.Since(t).Round(time.Millisecond), err)
			continue
		}
		fmt.Printf("operator query %s: %s\n", q.name, time.Since(t).Round(time.Millisecond))
	}
	t := time.Now()
	out, err := exec.CommandContext(ctx, ingestd, "status", "-database-url", dbURL).CombinedOutput()
	if err != nil {
		fmt.Printf("ingestd status: FAILS after %s: %v: %s\n", time.Since(t).Round(time.Millisecond), err, firstLine(string(out)))
		return
	}
	fmt.Printf("ingestd status: %s, %d lines\n", time.Since(t).Round(time.Millisecond), strings.Count(string(out), "\n"))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
