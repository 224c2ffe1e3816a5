package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/kinds"
	"github.com/ingestd/ingestd/internal/yamlconf"

	// Embedded so that a jurisdiction's timezone validates (and schedules fire) the
	// same on a slim container without /usr/share/zoneinfo as on the operator's laptop.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// Config is a parsed and validated jurisdictions.yaml. Defaults have been merged
// into every feed, so each Feed is complete on its own.
type Config struct {
	// Path is the file the config was read from.
	Path string `yaml:"-"`
	// MaxInFlight bounds the HTTP requests in flight across all feeds (default 20).
	MaxInFlight int `yaml:"max_in_flight"`
	// Defaults apply to every feed that does not set the field itself. After
	// loading they hold the effective defaults: built-in ones overridden by the file.
	Defaults Defaults `yaml:"defaults"`
	// Jurisdictions lists the publishers and their feeds.
	Jurisdictions []Jurisdiction `yaml:"jurisdictions"`
	// DeadLetter configures the replay of parked polls.
	DeadLetter DeadLetter `yaml:"dead_letter"`
	// Layers are the common layers the file declares besides the built-in
	// ones (conform.go).
	Layers []CommonLayer `yaml:"-"`

	// Warnings are problems that do not stop the daemon but that an operator
	// should hear about (`ingestd validate` prints them), in file order.
	Warnings []*Error `yaml:"-"`

	// originPolicies is the breaker policy of each polled origin.
	originPolicies map[string]breaker.Policy
}

// Defaults are the feed settings inherited by every feed.
type Defaults struct {
	Schedule       string   `yaml:"schedule"`
	Timeout        Duration `yaml:"timeout"`
	RequestTimeout Duration `yaml:"request_timeout"`
	// QueueTimeout bounds the time a poll waits in line for request slots
	// (max_in_flight, an origin's in-flight cap or rate), which its Timeout
	// does not count.
	QueueTimeout Duration `yaml:"queue_timeout"`
	PageSize     int      `yaml:"page_size"`
	// Kinds holds each kind's own defaults (wfs: version, output_format),
	// as its kindconf.Spec.ParseDefaults read them, by kind.
	Kinds map[string]any `yaml:"-"`
	// Breaker is the circuit breaker, retry and pacing policy of every origin
	// whose jurisdiction does not override it.
	Breaker breaker.Policy `yaml:"breaker"`
	// MaxShrink is the share of its features a snapshot may lose before it
	// is held (see feeds.Guard); 0 means feeds.DefaultMaxShrink.
	MaxShrink float64 `yaml:"max_shrink"`
	// InvalidGeometry is what a poll does with a feature whose geometry is
	// invalid: InvalidRepair (default) or InvalidSkip.
	InvalidGeometry string `yaml:"invalid_geometry"`
	// InvalidFeature is the default of Feed.InvalidFeature.
	InvalidFeature string `yaml:"invalid_feature"`
	// Redirects is the default of Feed.Redirects.
	Redirects string `yaml:"redirects"`
	// Limits are the defaults' limits block over feature.DefaultLimits.
	Limits feature.Limits `yaml:"-"`
	// SchemaChange is the default of Feed.SchemaChange (typed layers).
	SchemaChange string `yaml:"schema_change"`
}

// DefaultMaxInFlight is max_in_flight when the file does not set it.
const DefaultMaxInFlight = 20

// BuiltinDefaults returns the feed defaults used when neither the file's defaults
// block nor the feed sets a field:
//
//   - schedule "0 * * * *": hourly, on the hour in the jurisdiction's time zone.
//     The scheduler adds a per-feed jitter, so feeds sharing it do not fire together;
//     municipal layers rarely change faster than that, and hourly is polite to
//     servers nobody asked.
//   - timeout 10m: the budget of a whole poll (all pages).
//   - request_timeout 60s: the budget of one HTTP request (one page).
//   - page_size 1000: features per request; small enough for servers'
//     default maxFeatures caps, large enough to keep request counts low.
//
// A kind's own defaults (wfs: version "2.0.0", output_format
// "application/json") are its package's (see kindconf.Spec.ParseDefaults).
func BuiltinDefaults() Defaults {
	return Defaults{
		Schedule:        "0 * * * *",
		Timeout:         Duration(10 * time.Minute),
		RequestTimeout:  Duration(60 * time.Second),
		QueueTimeout:    Duration(30 * time.Minute),
		PageSize:        1000,
		Kinds:           (&parser{Parser: &yamlconf.Parser{}}).kindDefaults(nil, "defaults", nil),
		Breaker:         breaker.DefaultPolicy(),
		InvalidGeometry: InvalidRepair,
		InvalidFeature:  InvalidRepair,
		Redirects:       RedirectsSameOrigin,
		Limits:          feature.DefaultLimits(),
		SchemaChange:    SchemaEvolve,
	}
}

// Jurisdiction is one publisher (a county, a city) and its feeds.
type Jurisdiction struct {
	ID       string `yaml:"id"`
	Name     string `yaml:"name"`
	Timezone string `yaml:"timezone"`
	Feeds    []Feed `yaml:"feeds"`
	// Schema is the PostGIS schema of its feeds' layers (names.go).
	Schema string `yaml:"schema"`
	// Breaker is the policy of this jurisdiction's origins: the defaults'
	// breaker block overridden field by field by the jurisdiction's own.
	Breaker breaker.Policy `yaml:"breaker"`
	// MaxShrink is the defaults' max_shrink unless the jurisdiction sets it.
	MaxShrink float64 `yaml:"max_shrink"`
	// BBox is the jurisdiction's extent (EPSG:4326), nil when not declared:
	// snapshots mostly outside it are held.
	BBox *BBox `yaml:"bbox"`
	// Limits are the defaults' limits overridden field by field by the
	// jurisdiction's own limits block.
	Limits feature.Limits `yaml:"-"`
	// Headers are sent with the requests of every feed of the jurisdiction
	// (a feed may add or replace some).
	Headers map[string]string `yaml:"-"`

	// Location is Timezone loaded (UTC when empty).
	Location *time.Location `yaml:"-"`
	// SchemaChange is the defaults' schema_change unless the jurisdiction
	// sets it (typed layers).
	SchemaChange string `yaml:"schema_change"`
}

// Feed is one layer to mirror: the settings every kind shares, and the
// kind's own in Settings (of the kind's type, parsed by its package).
//
// A kind may leave a common setting empty rather than filled from defaults:
// a geojson feed's page_size (the document is fetched in one
// request as it is), an arcgis feed's page_size unless set on the feed.
type Feed struct {
	ID         string `yaml:"id"`
	Kind       string `yaml:"kind"` // one of the registry's (internal/kinds)
	URL        string `yaml:"url"`
	PageSize   int    `yaml:"page_size"`
	IDProperty string `yaml:"id_property"`
	Schedule   string `yaml:"schedule"`
	// LayerName is the feed's layer in its jurisdiction's schema, and
	// LayerSchema that schema (names.go).
	LayerName   string `yaml:"name"`
	LayerSchema string `yaml:"-"`
	// Timeout is the poll's budget of its own work: requests, reading,
	// staging, applying. Time spent waiting in line for a request slot is
	// not counted; QueueTimeout bounds it.
	Timeout        Duration `yaml:"timeout"`
	RequestTimeout Duration `yaml:"request_timeout"`
	QueueTimeout   Duration `yaml:"queue_timeout"`
	// MaxShrink is resolved: the feed's, else its jurisdiction's, else the
	// defaults'.
	MaxShrink float64 `yaml:"max_shrink"`
	// InvalidGeometry is resolved: the feed's, else the defaults'.
	InvalidGeometry string `yaml:"invalid_geometry"`
	// InvalidFeature is what a poll does with a feature whose properties or
	// id need repair (invalid UTF-8, a NUL character, a lone surrogate):
	// InvalidRepair (default: repair faithfully where a repair exists, skip
	// the feature's update otherwise) or InvalidSkip (skip every such
	// feature's update). Resolved like InvalidGeometry.
	InvalidFeature string `yaml:"invalid_feature"`
	// Limits bound the feed's responses and features; resolved field by field
	// from the feed, its jurisdiction, the defaults, then feature.DefaultLimits.
	Limits feature.Limits `yaml:"-"`
	// Headers are sent with every request of the feed (values may use
	// ${VAR}); never logged or stored.
	Headers map[string]string `yaml:"-"`
	// SchemaChange is what a snapshot whose schema drifted does:
	// SchemaEvolve (default: applied, the typed view follows) or
	// SchemaHold (held until `ingestd held accept|reject`). Resolved: the
	// feed's, else its jurisdiction's, else the defaults'.
	SchemaChange string `yaml:"schema_change"`
	// History is the feed's history retention (history.go).
	History History `yaml:"-"`
	// Redirects is RedirectsSameOrigin (default: a redirect to another
	// origin fails the request) or RedirectsFollow.
	Redirects string `yaml:"redirects"`
	// BBox is the jurisdiction's extent.
	BBox *BBox `yaml:"-"`

	// Jurisdiction is the ID of the jurisdiction the feed belongs to.
	Jurisdiction string `yaml:"-"`
	// Location is the jurisdiction's time zone, in which Schedule is read.
	Location *time.Location `yaml:"-"`
	// Cron is Schedule parsed, already evaluated in Location; hand it to
	// cron.Cron.Schedule rather than re-parsing Schedule.
	Cron cron.Schedule `yaml:"-"`

	// Settings are the kind's own settings, of its package's type
	// (wfs.Settings, …; nil for geojson, which has none).
	Settings source.Settings `yaml:"-"`

	// Conform maps the feed's features to a common layer (conform.go);
	// nil when the feed has no conform:.
	Conform *FeedConform `yaml:"-"`
}

// Key returns "jurisdiction/feed", the feed's name in logs, SQL and the CLI.
func (f *Feed) Key() string { return f.Jurisdiction + "/" + f.ID }

// Layer returns what the fetcher of the feed's kind needs to fetch it.
func (f *Feed) Layer() source.Layer {
	return source.Layer{
		Kind:           f.Kind,
		URL:            f.URL,
		Settings:       f.Settings,
		PageSize:       f.PageSize,
		IDProperty:     f.IDProperty,
		RequestTimeout: f.RequestTimeout.Std(),
		Limits:         f.Limits.WithDefaults(),
		Headers:        f.Headers,

		CrossOriginRedirects: f.Redirects == RedirectsFollow,

		// Typed layers: a kind that declares its layers' schema (WFS
		// DescribeFeatureType; OGC API schema or queryables) reads it.
		DescribeSchema: describesSchema(f.Kind),
	}
}

// ExpectedInterval returns the time between the next two activations of the feed's
// schedule after now, in the feed's location. For an irregular schedule (say
// "0 9 * * 1-5") that is the next gap only: on a Saturday it is the 24h between
// Monday's and Tuesday's polls, not the 72h weekend gap. It is 0 when the feed has
// no parsed schedule or the schedule never fires.
func (f *Feed) ExpectedInterval(now time.Time) time.Duration {
	if f.Cron == nil {
		return 0
	}
	next := f.Cron.Next(now)
	if next.IsZero() {
		return 0
	}
	after := f.Cron.Next(next)
	if after.IsZero() {
		return 0
	}
	return after.Sub(next)
}

// Feeds lists every feed of every jurisdiction, in file order. The pointers
// refer into c, so they stay valid as long as c does.
func (c *Config) Feeds() []*Feed {
	var out []*Feed
	for i := range c.Jurisdictions {
		j := &c.Jurisdictions[i]
		for k := range j.Feeds {
			out = append(out, &j.Feeds[k])
		}
	}
	return out
}

// Feed finds a feed by its key, "jurisdiction/feed". A linear scan is fine: configs
// hold hundreds of feeds, and no index can go stale if a caller edits c.
func (c *Config) Feed(key string) (*Feed, bool) {
	jid, fid, ok := strings.Cut(key, "/")
	if !ok {
		return nil, false
	}
	for i := range c.Jurisdictions {
		j := &c.Jurisdictions[i]
		if j.ID != jid {
			continue
		}
		for k := range j.Feeds {
			if j.Feeds[k].ID == fid {
				return &j.Feeds[k], true
			}
		}
	}
	return nil, false
}

// Error is one problem in a config file, positioned so an editor can
// jump to it (see yamlconf.Error).
type Error = yamlconf.Error

// Errors is every problem found in a config file, in file order.
// Loading reports them all at once so that an operator fixes a file in one
// round.
type Errors = yamlconf.Errors

// Load reads, parses and validates the config file at path, expanding ${VAR}
// from the process environment. See Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// The PathError would say "open <path>: ..."; keep the path-first shape of
		// every other config error, and keep errors.Is(err, fs.ErrNotExist) working.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses and validates data, the contents of the config file path
// (used in messages only). env looks up variables for ${VAR} in string values; nil
// means none are set.
//
// On failure the error is a Errors listing every problem found, and no
// Config is returned. On success every feed is complete: defaults resolved,
// Jurisdiction, Location and Cron filled in; Config.Warnings lists the
// non-fatal problems.
func Parse(path string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	p := &parser{Parser: &yamlconf.Parser{File: path, Env: env}, now: time.Now()}
	cfg := p.parse(data)
	if errs := p.Errors(); len(errs) > 0 {
		return nil, errs
	}
	cfg.Warnings = p.Warnings()
	return cfg, nil
}

// Keys accepted in each mapping, checked so that a typo ("typename") is an error
// instead of a silently ignored setting. A kind's own keys are its package's
// (kindconf.Spec.Keys, DefaultKeys): see feedKeys and defaultsKeys.
var (
	topKeys            = []string{"max_in_flight", "defaults", "jurisdictions", "dead_letter", "layers"}
	commonDefaultsKeys = []string{"schedule", "timeout", "request_timeout", "queue_timeout", "page_size", "breaker", "max_shrink", "invalid_geometry",
		"invalid_feature", "redirects", "limits", "schema_change", "history"}
	jurisdictionKeys = []string{"id", "name", "schema", "timezone", "feeds", "breaker", "max_shrink", "bbox", "limits", "headers",
		"schema_change", "history"}
	commonFeedKeys = []string{"id", "name", "kind", "url", "page_size",
		"id_property", "schedule", "timeout", "request_timeout", "queue_timeout", "max_shrink", "invalid_geometry",
		"invalid_feature", "redirects", "limits", "headers", "schema_change", "history", "conform", "tests"}
)

// idPattern keeps ids safe in SQL, logs, metric labels and `poll JURISDICTION/FEED`.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// maxIDLen keeps "jurisdiction/feed" and names derived from it within Postgres'
// 63-byte identifier limit and readable in a dashboard legend.
const maxIDLen = 63

// parser walks the yaml.Node tree instead of decoding into structs, so that every
// problem carries its line and column, presence can be told from a zero value
// (page_size: 0 means "no paging", not "inherit"), and ${VAR} is expanded after
// parsing without shifting positions.
type parser struct {
	*yamlconf.Parser
	now time.Time
}

// duration reads key as a positive Duration (yamlconf.Parser.Duration).
func (p *parser) duration(m *yamlconf.Mapping, key, path string) (Duration, *yaml.Node, bool, bool) {
	v, n, present, ok := p.Duration(m, key, path)
	return Duration(v), n, present, ok
}

func (p *parser) parse(data []byte) *Config {
	root := p.Document(data, "a mapping with a jurisdictions list")
	if root == nil {
		return nil
	}

	cfg := &Config{Path: p.File, MaxInFlight: DefaultMaxInFlight, Defaults: BuiltinDefaults(), DeadLetter: BuiltinDeadLetter()}
	top, ok := p.Mapping(root, "", topKeys)
	if !ok {
		return nil
	}
	if v, n, ok := p.Integer(top, "max_in_flight", ""); ok {
		if v < 1 {
			p.Errorf(n, "max_in_flight", "must be at least 1, got %d", v)
		} else {
			cfg.MaxInFlight = v
		}
	}

	d := p.defaults(top, &cfg.Defaults)
	p.deadLetter(top, &cfg.DeadLetter)

	if top.Missing("jurisdictions") {
		p.Errorf(top.Node, "jurisdictions", "required: list at least one jurisdiction")
	}
	jn, present := top.Get("jurisdictions")
	if !present {
		return cfg
	}
	items, ok := p.Sequence(jn, "jurisdictions")
	if !ok {
		return cfg
	}
	if len(items) == 0 {
		p.Errorf(jn, "jurisdictions", "must list at least one jurisdiction")
	}
	seen := map[string]*yaml.Node{}
	sources := map[string]sourceRef{} // url+type_name → first feed using it
	for i, item := range items {
		path := fmt.Sprintf("jurisdictions[%d]", i)
		j, ok := p.jurisdiction(item, path, d, sources)
		if !ok {
			continue
		}
		if j.ID != "" {
			if first, dup := seen[j.ID]; dup {
				p.Errorf(j.idNode, path+".id", "duplicate jurisdiction id %q (first at line %d)", j.ID, first.Line)
			} else {
				seen[j.ID] = j.idNode
			}
		}
		cfg.Jurisdictions = append(cfg.Jurisdictions, j.Jurisdiction)
	}
	p.layerNamesUnique(cfg, seen) // names.go
	cfg.originPolicies = p.originPolicies(cfg, seen)
	p.history(root, cfg) // history.go
	p.layers(root, cfg)  // conform.go
	p.conforms(root, cfg)
	return cfg
}

// resolvedDefaults is the effective defaults plus where the file set them, so
// that a feed inheriting a broken default is not reported a second time and a
// message can say "(from defaults)".
type resolvedDefaults struct {
	Defaults
	set        map[string]*yaml.Node
	scheduleOK bool
}

func (p *parser) defaults(top *yamlconf.Mapping, d *Defaults) *resolvedDefaults {
	rd := &resolvedDefaults{set: map[string]*yaml.Node{}, scheduleOK: true}
	defer func() { rd.Defaults = *d }()
	n, present := top.Get("defaults")
	if !present {
		return rd
	}
	m, ok := p.Mapping(n, "defaults", defaultsKeys())
	if !ok {
		return rd
	}
	const path = "defaults"
	if s, present := p.Str(m, "schedule", path); present {
		rd.set["schedule"] = s.Node
		if s.OK {
			// Syntax only: each feed re-parses it in its jurisdiction's time zone.
			if _, ok := p.schedule(s, path+".schedule", time.UTC); ok {
				d.Schedule = s.Val
			} else {
				rd.scheduleOK = false
			}
		} else {
			rd.scheduleOK = false
		}
	}
	p.defaultTimeouts(m, path, rd, d)
	if v, n, ok := p.Integer(m, "page_size", path); ok {
		rd.set["page_size"] = n
		if v < 0 {
			p.Errorf(n, path+".page_size", "must be 0 (no paging) or more, got %d", v)
		} else {
			d.PageSize = v
		}
	}
	d.Kinds = p.kindDefaults(m, path, nil)
	d.Breaker = p.breakerPolicy(m, path, d.Breaker)
	if v, ok := p.maxShrink(m, path); ok {
		d.MaxShrink = v
	}
	if v, ok := p.invalidGeometry(m, path); ok {
		d.InvalidGeometry = v
	}
	if v, ok := p.invalidFeature(m, path); ok {
		d.InvalidFeature = v
	}
	if v, ok := p.schemaChange(m, path); ok {
		d.SchemaChange = v
	}
	if v, ok := p.redirects(m, path); ok {
		d.Redirects = v
	}
	d.Limits = p.limits(m, path, d.Limits)
	return rd
}

// defaultTimeouts reads the defaults' timeouts: each must be positive, and
// a request may not outlast its poll.
func (p *parser) defaultTimeouts(m *yamlconf.Mapping, path string, rd *resolvedDefaults, d *Defaults) {
	timeoutOK, reqOK := true, true
	if v, n, present, ok := p.duration(m, "timeout", path); present {
		rd.set["timeout"] = n
		if ok {
			d.Timeout = v
		}
		timeoutOK = ok
	}
	if v, n, present, ok := p.duration(m, "request_timeout", path); present {
		rd.set["request_timeout"] = n
		if ok {
			d.RequestTimeout = v
		}
		reqOK = ok
	}
	if v, n, present, ok := p.duration(m, "queue_timeout", path); present {
		rd.set["queue_timeout"] = n
		if ok {
			d.QueueTimeout = v
		}
	}
	if timeoutOK && reqOK && d.RequestTimeout > d.Timeout {
		n, field := rd.set["request_timeout"], "request_timeout"
		if n == nil {
			n, field = rd.set["timeout"], "timeout"
		}
		p.Errorf(n, path+"."+field, "request_timeout %s exceeds timeout %s: one request cannot outlast the whole poll",
			d.RequestTimeout, d.Timeout)
	}
}

type parsedJurisdiction struct {
	Jurisdiction
	idNode *yaml.Node
}

// sourceRef remembers the first feed reading a url+type_name, for the duplicate warning.
type sourceRef struct {
	key  string
	line int
}

func (p *parser) jurisdiction(n *yaml.Node, path string, d *resolvedDefaults, sources map[string]sourceRef) (parsedJurisdiction, bool) {
	var j parsedJurisdiction
	m, ok := p.Mapping(n, path, jurisdictionAllKeys())
	if !ok {
		return j, false
	}
	j.ID, j.idNode = p.id(m, path, "jurisdiction")
	j.Schema = p.layerIdent(m, "schema", path, j.ID, true)
	if s, present := p.Str(m, "name", path); present && s.OK {
		j.Name = s.Val
	}
	j.Location = time.UTC
	if s, present := p.Str(m, "timezone", path); present && s.OK {
		j.Timezone = s.Val
		if loc, ok := p.location(s, path+".timezone"); ok {
			j.Location = loc
		}
	}

	j.Breaker = p.breakerPolicy(m, path, d.Breaker)
	j.MaxShrink, j.BBox = d.MaxShrink, p.bbox(m, path)
	if v, ok := p.maxShrink(m, path); ok {
		j.MaxShrink = v
	}
	j.SchemaChange = d.SchemaChange
	if v, ok := p.schemaChange(m, path); ok {
		j.SchemaChange = v
	}
	j.Limits = p.limits(m, path, d.Limits)
	j.Headers = p.headers(m, path, nil)
	// The kinds' own defaults (wfs version, arcgis full_every…) may be set
	// per jurisdiction too, over the defaults block's.
	jd := *d
	jd.Kinds = p.kindDefaults(m, path, d.Kinds)
	d = &jd

	if m.Missing("feeds") {
		p.Errorf(m.Node, path+".feeds", "required: list at least one feed")
	}
	fn, present := m.Get("feeds")
	if !present {
		return j, true
	}
	items, ok := p.Sequence(fn, path+".feeds")
	if !ok {
		return j, true
	}
	if len(items) == 0 {
		p.Errorf(fn, path+".feeds", "must list at least one feed")
	}
	seen := map[string]*yaml.Node{}
	for i, item := range items {
		fpath := fmt.Sprintf("%s.feeds[%d]", path, i)
		f, idNode, ok := p.feed(item, fpath, &j.Jurisdiction, d)
		if !ok {
			continue
		}
		if f.ID != "" {
			if first, dup := seen[f.ID]; dup {
				p.Errorf(idNode, fpath+".id", "duplicate feed id %q in jurisdiction %q (first at line %d)", f.ID, j.ID, first.Line)
			} else {
				seen[f.ID] = idNode
			}
		}
		if f.URL != "" {
			src := f.URL
			if n, ok := f.Settings.(source.NamedLayer); ok {
				tn, _ := n.LayerNames()
				src += "\x00" + tn
			}
			if first, dup := sources[src]; dup {
				// Not fatal (two views of one layer can be deliberate), but it
				// doubles the load on the server and usually means a copy-paste.
				p.Warnf(item, fpath, "same url and type_name as feed %s (line %d): the layer is fetched twice", first.key, first.line)
			} else {
				sources[src] = sourceRef{key: f.Key(), line: item.Line}
			}
		}
		j.Feeds = append(j.Feeds, f)
	}
	return j, true
}

// feed reads one feed: the common settings, then its kind's own through
// the kind's package (kindSettings).
func (p *parser) feed(n *yaml.Node, path string, j *Jurisdiction, d *resolvedDefaults) (Feed, *yaml.Node, bool) {
	f := Feed{Jurisdiction: j.ID, Location: j.Location, MaxShrink: j.MaxShrink, BBox: j.BBox,
		InvalidGeometry: d.InvalidGeometry, InvalidFeature: d.InvalidFeature, Redirects: d.Redirects,
		SchemaChange: j.SchemaChange}
	m, ok := p.Mapping(n, path, feedKeys())
	if !ok {
		return f, nil, false
	}
	p.feedPolicies(m, path, &f, j)
	var idNode *yaml.Node
	f.ID, idNode = p.id(m, path, "feed")
	f.LayerName, f.LayerSchema = p.layerIdent(m, "name", path, f.ID, false), j.Schema
	k, kindOK := p.kind(m, path, &f)
	psNode := p.feedSource(m, path, &f, d, k.Schemes)
	if kindOK {
		p.kindSettings(m, path, &f, k, d, psNode)
	}
	p.feedSchedule(m, path, &f, j, d)
	p.feedTimeouts(m, path, &f, d)
	return f, idNode, true
}

// feedPolicies reads what a feed does with bad data and how far it trusts
// its server: each over its jurisdiction's or the defaults'.
func (p *parser) feedPolicies(m *yamlconf.Mapping, path string, f *Feed, j *Jurisdiction) {
	if v, ok := p.maxShrink(m, path); ok {
		f.MaxShrink = v
	}
	if v, ok := p.invalidGeometry(m, path); ok {
		f.InvalidGeometry = v
	}
	if v, ok := p.invalidFeature(m, path); ok {
		f.InvalidFeature = v
	}
	if v, ok := p.schemaChange(m, path); ok {
		f.SchemaChange = v
	}
	if v, ok := p.redirects(m, path); ok {
		f.Redirects = v
	}
	f.Limits = p.limits(m, path, j.Limits)
	f.Headers = p.headers(m, path, j.Headers)
}

// kind reads the feed's kind, one of the registry's.
func (p *parser) kind(m *yamlconf.Mapping, path string, f *Feed) (kindconf.Spec, bool) {
	known := kinds.Names()
	s, present := p.Str(m, "kind", path)
	if !present {
		if !m.Typo("kind") {
			p.Errorf(m.Node, path+".kind", "required: %s", orList(known))
		}
		return kindconf.Spec{}, false
	}
	if !s.OK {
		return kindconf.Spec{}, false
	}
	k, ok := kinds.Lookup(s.Val)
	if !ok {
		p.Errorf(s.Node, path+".kind", "unknown kind %q: must be %s", s.Raw, orList(known))
		return kindconf.Spec{}, false
	}
	f.Kind = s.Val
	return k, true
}

// orList joins names as messages list them: "a", "b" or "c".
func orList(names []string) string {
	q := yamlconf.QuoteAll(names)
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// feedSource reads what every kind's request is built from: url,
// id_property and page_size (over the defaults'). It
// returns page_size's node when the feed sets a good one itself.
func (p *parser) feedSource(m *yamlconf.Mapping, path string, f *Feed, d *resolvedDefaults, schemes []string) *yaml.Node {
	if s, present := p.Str(m, "url", path); !present {
		if !m.Typo("url") {
			p.Errorf(m.Node, path+".url", "required")
		}
	} else if s.OK && p.url(s, path+".url", schemes) {
		f.URL = s.Val
	}
	if s, present := p.Str(m, "id_property", path); present && s.OK {
		f.IDProperty = s.Val
	}
	f.PageSize = d.PageSize
	v, n, ok := p.Integer(m, "page_size", path)
	switch {
	case !ok:
		return nil
	case v < 0:
		p.Errorf(n, path+".page_size", "must be 0 (no paging) or more, got %d", v)
		return nil
	}
	f.PageSize = v
	return n
}

// kindSettings hands the feed to its kind's package, which reads its own
// settings and may adjust the common ones (see kindconf.Feed); another
// kind's settings on the feed are ignored with a warning, or refused.
func (p *parser) kindSettings(m *yamlconf.Mapping, path string, f *Feed, k kindconf.Spec, d *resolvedDefaults, psNode *yaml.Node) {
	for _, o := range kinds.All() {
		if o.Name == f.Kind {
			continue
		}
		for _, key := range o.Keys {
			n, ok := m.Get(key)
			switch {
			case !ok || slices.Contains(k.Keys, key):
			case o.Strict:
				p.Errorf(n, path+"."+key, "only %s feed has %s (this feed is %s)", kindconf.Article(o.Name), key, f.Kind)
			default:
				p.Warnf(n, path+"."+key, "ignored for %s feed (%s setting)", kindconf.Article(f.Kind), kindconf.Article(o.Name))
			}
		}
	}
	kf := &kindconf.Feed{Parser: p.Parser, Map: m, Path: path, Kind: f.Kind, URL: f.URL,
		PageSize: f.PageSize, PageSizeNode: psNode, Headers: f.Headers, Defaults: d.Kinds[f.Kind]}
	f.Settings = k.Parse(kf)
	f.URL, f.PageSize, f.Headers = kf.URL, kf.PageSize, kf.Headers
}

// kindDefaults reads each kind's own keys of m — the defaults block (nil:
// none, the kinds' built-in defaults), or a jurisdiction — over base (the
// level above's, by kind; nil for the defaults block).
func (p *parser) kindDefaults(m *yamlconf.Mapping, path string, base map[string]any) map[string]any {
	if m == nil {
		m, _ = p.Mapping(&yaml.Node{Kind: yaml.MappingNode}, path, nil)
	}
	out := map[string]any{}
	for _, k := range kinds.All() {
		if k.ParseDefaults == nil {
			continue
		}
		if v := k.ParseDefaults(p.Parser, m, path, base[k.Name]); v != nil {
			out[k.Name] = v
		}
	}
	return out
}

// feedSchedule reads the feed's schedule, evaluated in its jurisdiction's
// time zone, and warns about one that fires more than once a minute.
func (p *parser) feedSchedule(m *yamlconf.Mapping, path string, f *Feed, j *Jurisdiction, d *resolvedDefaults) {
	if s, present := p.Str(m, "schedule", path); present {
		if s.OK {
			if c, ok := p.schedule(s, path+".schedule", j.Location); ok {
				f.Schedule, f.Cron = s.Val, c
			}
		}
	} else if d.scheduleOK {
		f.Schedule = d.Schedule
		// The default already parsed once; this cannot fail, but the schedule
		// must be bound to this feed's location.
		f.Cron, _ = parseCron(d.Schedule, j.Location)
	}
	if f.Cron != nil {
		if iv := f.ExpectedInterval(p.now); iv > 0 && iv < time.Minute {
			at := m.Node
			if n, ok := m.Get("schedule"); ok {
				at = n
			}
			p.Warnf(at, path+".schedule", "fires every %s: that is a lot of load on a public server", iv)
		}
	}
}

// feedTimeouts reads the feed's timeouts: each must be positive, and a
// request may not outlast its poll.
func (p *parser) feedTimeouts(m *yamlconf.Mapping, path string, f *Feed, d *resolvedDefaults) {
	f.Timeout, f.RequestTimeout = d.Timeout, d.RequestTimeout
	timeoutOK, reqOK := true, true
	toN, toPresent := (*yaml.Node)(nil), false
	rtN, rtPresent := (*yaml.Node)(nil), false
	if v, n, present, ok := p.duration(m, "timeout", path); present {
		toN, toPresent, timeoutOK = n, true, ok
		if ok {
			f.Timeout = v
		}
	}
	if v, n, present, ok := p.duration(m, "request_timeout", path); present {
		rtN, rtPresent, reqOK = n, true, ok
		if ok {
			f.RequestTimeout = v
		}
	}
	f.QueueTimeout = d.QueueTimeout
	if v, _, present, ok := p.duration(m, "queue_timeout", path); present && ok {
		f.QueueTimeout = v
	}
	if timeoutOK && reqOK && (toPresent || rtPresent) && f.RequestTimeout > f.Timeout {
		at, field := rtN, "request_timeout"
		if !rtPresent {
			at, field = toN, "timeout"
		}
		p.Errorf(at, path+"."+field, "request_timeout %s%s exceeds timeout %s%s: one request cannot outlast the whole poll",
			f.RequestTimeout, fromDefaults(!rtPresent), f.Timeout, fromDefaults(!toPresent))
	}
}

func fromDefaults(b bool) string {
	if b {
		return " (from defaults)"
	}
	return ""
}

// id reads and checks the required id of a jurisdiction or feed.
func (p *parser) id(m *yamlconf.Mapping, path, what string) (string, *yaml.Node) {
	s, present := p.Str(m, "id", path)
	if !present {
		if m.Typo("id") {
			return "", m.Node
		}
		p.Errorf(m.Node, path+".id", "required: every %s needs an id", what)
		return "", m.Node
	}
	if !s.OK {
		return "", s.Node
	}
	switch {
	case !idPattern.MatchString(s.Val):
		p.Errorf(s.Node, path+".id", "bad %s id %q: use lowercase letters, digits, '_' and '-', starting with a letter or digit (ids appear in SQL, metrics and `ingestd poll JURISDICTION/FEED`)", what, s.Raw)
		return "", s.Node
	case len(s.Val) > maxIDLen:
		p.Errorf(s.Node, path+".id", "%s id is %d bytes long; the limit is %d", what, len(s.Val), maxIDLen)
		return "", s.Node
	}
	return s.Val, s.Node
}

// url checks that a feed's url is an absolute http(s) URL, or of one of
// the kind's other schemes.
func (p *parser) url(s yamlconf.Scalar, field string, schemes []string) bool {
	u, err := url.Parse(s.Val)
	if err != nil {
		// url.Parse quotes the value; say what is wrong without echoing a URL that
		// may hold an expanded secret.
		detail := ""
		var ue *url.Error
		if errors.As(err, &ue) && !s.Expanded {
			detail = ": " + ue.Err.Error()
		}
		p.Errorf(s.Node, field, "bad url%s", detail)
		return false
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && !slices.Contains(schemes, u.Scheme):
		if u.Scheme == "" {
			p.Errorf(s.Node, field, "bad url: no scheme; write an absolute http:// or https:// URL")
		} else if s.Expanded {
			p.Errorf(s.Node, field, "bad url: scheme not supported after expanding environment variables; use %s", schemeList(schemes))
		} else {
			p.Errorf(s.Node, field, "bad url: scheme %q not supported; use %s", u.Scheme, schemeList(schemes))
		}
		return false
	case u.Host == "":
		p.Errorf(s.Node, field, "bad url: no host")
		return false
	}
	return true
}

// schemeList names the schemes a feed's url may have: "http or https",
// "http, https or ftp".
func schemeList(others []string) string {
	all := append([]string{"http", "https"}, others...)
	return strings.Join(all[:len(all)-1], ", ") + " or " + all[len(all)-1]
}

func (p *parser) location(s yamlconf.Scalar, field string) (*time.Location, bool) {
	if s.Val == "Local" {
		// "Local" would make schedules depend on the host the daemon runs on.
		p.Errorf(s.Node, field, "\"Local\" depends on the host; name the zone, e.g. \"America/Chicago\"")
		return nil, false
	}
	loc, err := time.LoadLocation(s.Val)
	if err != nil {
		p.Errorf(s.Node, field, "unknown time zone %q: use an IANA name such as \"America/Chicago\"", s.Raw)
		return nil, false
	}
	return loc, true
}

// schedule parses a cron spec and reports why it is bad.
func (p *parser) schedule(s yamlconf.Scalar, field string, loc *time.Location) (cron.Schedule, bool) {
	c, problem := parseCron(s.Val, loc)
	if problem != "" {
		if s.Expanded {
			// cron's own messages quote pieces of the spec, which came from the environment.
			problem = "invalid after expanding environment variables"
		}
		p.Errorf(s.Node, field, "bad cron spec %q: %s", s.Raw, problem)
		return nil, false
	}
	if c.Next(p.now).IsZero() {
		p.Errorf(s.Node, field, "bad cron spec %q: never fires (no matching date within five years)", s.Raw)
		return nil, false
	}
	return c, true
}

// parseCron parses spec with the standard 5-field parser (descriptors such as
// @hourly and "@every 15m" included) and binds it to loc. It returns a problem
// description instead of an error so callers can position it.
func parseCron(spec string, loc *time.Location) (cron.Schedule, string) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, "empty"
	}
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		// One place for the zone: a prefix here would silently override the
		// jurisdiction's timezone for this feed only.
		return nil, "time zone prefix not allowed here; set the jurisdiction's timezone instead"
	}
	if !strings.HasPrefix(spec, "@") {
		// cron's own message ends with the fields it split; this one says what
		// the five fields are instead.
		if n := len(strings.Fields(spec)); n != 5 {
			return nil, fmt.Sprintf("expected exactly 5 fields, found %d (minute hour day-of-month month day-of-week)", n)
		}
	}
	c, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, err.Error()
	}
	// ParseStandard binds the host's local zone; the jurisdiction's zone is meant.
	if ss, ok := c.(*cron.SpecSchedule); ok {
		ss.Location = loc
	}
	if cd, ok := c.(cron.ConstantDelaySchedule); ok {
		return everySchedule{every: cd.Delay}, ""
	}
	return c, ""
}

// everySchedule is "@every D" anchored to the clock: it fires at the
// multiples of D (counted from Go's zero time, the same for every process).
// cron's own ConstantDelaySchedule counts from whenever the process started,
// so instances started a second apart tick out of phase: each fires its own
// tick, the poll claim (which refuses only within half an interval of the
// last claim) lets several of them through, and the cluster polls the feed
// more often than once per interval; the phase would also move with every
// restart. Anchored, every instance fires the same ticks, as with 5-field specs.
type everySchedule struct{ every time.Duration }

func (s everySchedule) Next(t time.Time) time.Time {
	return t.Truncate(s.every).Add(s.every)
}
