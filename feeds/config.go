package feeds

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	// Embedded so that a jurisdiction's timezone validates (and schedules fire) the
	// same on a slim container without /usr/share/zoneinfo as on the operator's laptop.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
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
	DeadLetter DeadLetterConfig `yaml:"dead_letter"`

	// Warnings are problems that do not stop the daemon but that an operator
	// should hear about (`ingestd validate` prints them), in file order.
	Warnings []*ConfigError `yaml:"-"`

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
	Version      string   `yaml:"version"`
	OutputFormat string   `yaml:"output_format"`
	// Breaker is the circuit breaker, retry and pacing policy of every origin
	// whose jurisdiction does not override it.
	Breaker breaker.Policy `yaml:"breaker"`
	// MaxShrink is the share of its features a snapshot may lose before it
	// is held (see Guard); 0 means DefaultMaxShrink.
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
//   - page_size 1000: features per WFS request; small enough for servers'
//     default maxFeatures caps, large enough to keep request counts low.
//   - version "2.0.0", output_format "application/json". Either may be "auto":
//     the poll then reads the server's GetCapabilities (cached for an hour) and
//     picks the best version ingestd speaks, GeoJSON else GML 3.2 else GML 3.1.1,
//     and turns paging off with a warning when the server cannot page
//     (wfs.Negotiate has the rules).
func BuiltinDefaults() Defaults {
	return Defaults{
		Schedule:        "0 * * * *",
		Timeout:         Duration(10 * time.Minute),
		RequestTimeout:  Duration(60 * time.Second),
		QueueTimeout:    Duration(30 * time.Minute),
		PageSize:        1000,
		Version:         "2.0.0",
		OutputFormat:    "application/json",
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

// Feed is one layer to mirror.
//
// For a geojson feed the WFS-only settings (version, output_format, page_size) are
// left empty rather than filled from defaults: the document is fetched in one
// request as it is.
type Feed struct {
	ID           string `yaml:"id"`
	Kind         string `yaml:"kind"` // "wfs", "geojson", "arcgis" or "ogcapi"
	URL          string `yaml:"url"`
	TypeName     string `yaml:"type_name"`
	Version      string `yaml:"version"`
	OutputFormat string `yaml:"output_format"`
	PageSize     int    `yaml:"page_size"`
	IDProperty   string `yaml:"id_property"`
	SortBy       string `yaml:"sort_by"`
	Schedule     string `yaml:"schedule"`
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
	// History is the feed's history retention (config_history.go).
	History History `yaml:"-"`
	// Redirects is RedirectsSameOrigin (default: a redirect to another
	// origin fails the request) or RedirectsFollow.
	Redirects string `yaml:"redirects"`
	// BBox is the jurisdiction's extent.
	BBox *BBox `yaml:"-"`

	// ArcGIS REST (kind arcgis; see config_arcgis.go). Its token is in
	// Headers (ArcGISTokenHeader).

	// Where is the query's where clause ("": 1=1).
	Where string `yaml:"where"`
	// OutFields is the query's outFields ("": *).
	OutFields string `yaml:"out_fields"`

	// Jurisdiction is the ID of the jurisdiction the feed belongs to.
	Jurisdiction string `yaml:"-"`
	// Location is the jurisdiction's time zone, in which Schedule is read.
	Location *time.Location `yaml:"-"`
	// Cron is Schedule parsed, already evaluated in Location; hand it to
	// cron.Cron.Schedule rather than re-parsing Schedule.
	Cron cron.Schedule `yaml:"-"`

	// OGC API – Features (kind ogcapi). PageSize is sent as limit.

	// Collection is the collection id when URL is the landing page.
	Collection string `yaml:"collection"`
	// CRS is the Part 2 CRS to ask for ("" means CRS84).
	CRS string `yaml:"crs"`
	// FilterBBox is the feed's bbox filter (minx, miny, maxx, maxy in
	// CRS84), sent as bbox=; not the jurisdiction's extent (BBox).
	FilterBBox []float64 `yaml:"bbox"`
	// Completeness is what proves the collection whole (config_ogcapi.go):
	// "" or CompletenessNumberMatched, or CompletenessLinksOnly.
	Completeness string `yaml:"completeness"`
}

// Feed kinds.
const (
	KindWFS     = "wfs"
	KindGeoJSON = "geojson"
	// KindOGCAPI is an OGC API – Features collection (package ogcapi).
	KindOGCAPI = "ogcapi"
)

// Key returns "jurisdiction/feed", the feed's name in logs, SQL and the CLI.
func (f *Feed) Key() string { return f.Jurisdiction + "/" + f.ID }

// Layer returns what the wfs client needs to fetch the feed.
func (f *Feed) Layer() source.Layer {
	return source.Layer{
		Kind:           f.Kind,
		URL:            f.URL,
		TypeName:       f.TypeName,
		Version:        f.Version,
		OutputFormat:   f.OutputFormat,
		PageSize:       f.PageSize,
		IDProperty:     f.IDProperty,
		SortBy:         f.SortBy,
		RequestTimeout: f.RequestTimeout.Std(),
		Limits:         f.Limits.WithDefaults(),
		Headers:        f.Headers,

		CrossOriginRedirects: f.Redirects == RedirectsFollow,

		Where:      f.Where,
		OutFields:  f.OutFields,
		Collection: f.Collection,
		CRS:        f.CRS,
		BBox:       f.FilterBBox,
		LinksOnly:  f.Completeness == CompletenessLinksOnly,
		// Typed layers: a WFS layer's schema is its DescribeFeatureType;
		// an OGC API collection's, its schema or queryables, when linked.
		DescribeSchema: f.Kind == KindWFS || f.Kind == KindOGCAPI,
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

// ConfigError is one problem in a config file, positioned so an editor can jump to
// it. Field is the path of the offending value, e.g. "jurisdictions[1].feeds[0].url".
type ConfigError struct {
	File   string
	Line   int // 1-based; 0 when the problem concerns the whole file
	Column int // 1-based; 0 when unknown
	Field  string
	Msg    string
}

// Error formats e as "file:line:column: field: message".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors is every problem found in a config file, in file order. Loading
// reports them all at once so that an operator fixes a file in one round.
type ConfigErrors []*ConfigError

// Error lists the problems one per line.
func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *ConfigError values.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// LoadConfig reads, parses and validates the config file at path, expanding ${VAR}
// from the process environment. See ParseConfig.
func LoadConfig(path string) (*Config, error) {
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
	return ParseConfig(path, data, os.LookupEnv)
}

// ParseConfig parses and validates data, the contents of the config file path
// (used in messages only). env looks up variables for ${VAR} in string values; nil
// means none are set.
//
// On failure the error is a ConfigErrors listing every problem found, and no
// Config is returned. On success every feed is complete: defaults resolved,
// Jurisdiction, Location and Cron filled in; Config.Warnings lists the
// non-fatal problems.
func ParseConfig(path string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	p := &parser{file: path, env: env, now: time.Now()}
	cfg := p.parse(data)
	if errs := sortErrors(p.errs); len(errs) > 0 {
		return nil, errs
	}
	cfg.Warnings = sortErrors(p.warns)
	return cfg, nil
}

// Keys accepted in each mapping, checked so that a typo ("typename") is an error
// instead of a silently ignored setting.
var (
	topKeys      = []string{"max_in_flight", "defaults", "jurisdictions", "dead_letter"}
	defaultsKeys = []string{"schedule", "timeout", "request_timeout", "queue_timeout", "page_size", "version", "output_format", "breaker", "max_shrink", "invalid_geometry",
		"invalid_feature", "redirects", "limits", "schema_change", "history"}
	jurisdictionKeys = []string{"id", "name", "timezone", "feeds", "breaker", "max_shrink", "bbox", "limits", "headers",
		"schema_change", "history"}
	feedKeys = []string{"id", "kind", "url", "type_name", "version", "output_format", "page_size",
		"id_property", "sort_by", "schedule", "timeout", "request_timeout", "queue_timeout", "max_shrink", "invalid_geometry",
		"invalid_feature", "redirects", "limits", "headers", "schema_change", "history",
		"where", "out_fields", "token", // arcgis only
		"collection", "crs", "bbox", "completeness"} // ogcapi only (ogcapiKeys)
	wfsVersions = []string{"2.0.0", "1.1.0"}
	// Query parameters the wfs client writes itself; one pasted into url along
	// with a whole GetFeature request would be sent twice or contradict the config.
	wfsOwnParams = []string{"service", "request", "version", "typename", "typenames", "outputformat",
		"count", "maxfeatures", "startindex", "sortby", "resulttype"}
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
	file  string
	env   func(string) (string, bool)
	now   time.Time
	errs  ConfigErrors
	warns ConfigErrors
}

func (p *parser) at(n *yaml.Node, field, format string, args ...any) *ConfigError {
	e := &ConfigError{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, p.at(n, field, format, args...))
}

func (p *parser) warnf(n *yaml.Node, field, format string, args ...any) {
	p.warns = append(p.warns, p.at(n, field, format, args...))
}

// sortErrors puts es in file order and drops repeats: a mapping pulled in twice
// through a merge key (<<: *anchor) would otherwise report its problems twice.
func sortErrors(es ConfigErrors) ConfigErrors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
	out := es[:0]
	for _, e := range es {
		// Same place, same problem: the field paths differ only by which mapping
		// merged it in; the first (the anchor's own) is kept.
		if n := len(out); n > 0 && e.Line == out[n-1].Line && e.Column == out[n-1].Column && e.Msg == out[n-1].Msg {
			continue
		}
		out = append(out, e)
	}
	return out
}

// yamlLineRE pulls the line out of go-yaml's syntax errors ("yaml: line 7: ...").
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) parse(data []byte) *Config {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := &ConfigError{File: p.file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		p.errs = append(p.errs, e)
		return nil
	}
	if len(doc.Content) == 0 {
		p.errorf(nil, "", "empty config: expected a mapping with a jurisdictions list")
		return nil
	}

	cfg := &Config{Path: p.file, MaxInFlight: DefaultMaxInFlight, Defaults: BuiltinDefaults(), DeadLetter: BuiltinDeadLetter()}
	top, ok := p.mapping(doc.Content[0], "", topKeys)
	if !ok {
		return nil
	}
	if v, n, ok := p.integer(top, "max_in_flight", ""); ok {
		if v < 1 {
			p.errorf(n, "max_in_flight", "must be at least 1, got %d", v)
		} else {
			cfg.MaxInFlight = v
		}
	}

	d := p.defaults(top, &cfg.Defaults)
	p.deadLetter(top, &cfg.DeadLetter)

	if top.missing("jurisdictions") {
		p.errorf(top.node, "jurisdictions", "required: list at least one jurisdiction")
	}
	jn, present := top.get("jurisdictions")
	if !present {
		return cfg
	}
	items, ok := p.sequence(jn, "jurisdictions")
	if !ok {
		return cfg
	}
	if len(items) == 0 {
		p.errorf(jn, "jurisdictions", "must list at least one jurisdiction")
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
				p.errorf(j.idNode, path+".id", "duplicate jurisdiction id %q (first at line %d)", j.ID, first.Line)
			} else {
				seen[j.ID] = j.idNode
			}
		}
		cfg.Jurisdictions = append(cfg.Jurisdictions, j.Jurisdiction)
	}
	cfg.originPolicies = p.originPolicies(cfg, seen)
	p.history(doc.Content[0], cfg) // config_history.go
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

func (p *parser) defaults(top *mapping, d *Defaults) *resolvedDefaults {
	rd := &resolvedDefaults{set: map[string]*yaml.Node{}, scheduleOK: true}
	defer func() { rd.Defaults = *d }()
	n, present := top.get("defaults")
	if !present {
		return rd
	}
	m, ok := p.mapping(n, "defaults", defaultsKeys)
	if !ok {
		return rd
	}
	const path = "defaults"
	if s, present := p.str(m, "schedule", path); present {
		rd.set["schedule"] = s.node
		if s.ok {
			// Syntax only: each feed re-parses it in its jurisdiction's time zone.
			if _, ok := p.schedule(s, path+".schedule", time.UTC); ok {
				d.Schedule = s.val
			} else {
				rd.scheduleOK = false
			}
		} else {
			rd.scheduleOK = false
		}
	}
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
		p.errorf(n, path+"."+field, "request_timeout %s exceeds timeout %s: one request cannot outlast the whole poll",
			d.RequestTimeout, d.Timeout)
	}
	if v, n, ok := p.integer(m, "page_size", path); ok {
		rd.set["page_size"] = n
		if v < 0 {
			p.errorf(n, path+".page_size", "must be 0 (no paging) or more, got %d", v)
		} else {
			d.PageSize = v
		}
	}
	if s, present := p.str(m, "version", path); present && s.ok {
		rd.set["version"] = s.node
		if v, ok := p.version(s, path+".version"); ok {
			d.Version = v
		}
	}
	if s, present := p.str(m, "output_format", path); present && s.ok {
		rd.set["output_format"] = s.node
		d.OutputFormat = s.val
	}
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
	m, ok := p.mapping(n, path, jurisdictionKeys)
	if !ok {
		return j, false
	}
	j.ID, j.idNode = p.id(m, path, "jurisdiction")
	if s, present := p.str(m, "name", path); present && s.ok {
		j.Name = s.val
	}
	j.Location = time.UTC
	if s, present := p.str(m, "timezone", path); present && s.ok {
		j.Timezone = s.val
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

	if m.missing("feeds") {
		p.errorf(m.node, path+".feeds", "required: list at least one feed")
	}
	fn, present := m.get("feeds")
	if !present {
		return j, true
	}
	items, ok := p.sequence(fn, path+".feeds")
	if !ok {
		return j, true
	}
	if len(items) == 0 {
		p.errorf(fn, path+".feeds", "must list at least one feed")
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
				p.errorf(idNode, fpath+".id", "duplicate feed id %q in jurisdiction %q (first at line %d)", f.ID, j.ID, first.Line)
			} else {
				seen[f.ID] = idNode
			}
		}
		if f.URL != "" {
			src := f.URL + "\x00" + f.TypeName
			if first, dup := sources[src]; dup {
				// Not fatal (two views of one layer can be deliberate), but it
				// doubles the load on the server and usually means a copy-paste.
				p.warnf(item, fpath, "same url and type_name as feed %s (line %d): the layer is fetched twice", first.key, first.line)
			} else {
				sources[src] = sourceRef{key: f.Key(), line: item.Line}
			}
		}
		j.Feeds = append(j.Feeds, f)
	}
	return j, true
}

func (p *parser) feed(n *yaml.Node, path string, j *Jurisdiction, d *resolvedDefaults) (Feed, *yaml.Node, bool) {
	f := Feed{Jurisdiction: j.ID, Location: j.Location, MaxShrink: j.MaxShrink, BBox: j.BBox,
		InvalidGeometry: d.InvalidGeometry, InvalidFeature: d.InvalidFeature, Redirects: d.Redirects,
		SchemaChange: j.SchemaChange}
	m, ok := p.mapping(n, path, feedKeys)
	if !ok {
		return f, nil, false
	}
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
	var idNode *yaml.Node
	f.ID, idNode = p.id(m, path, "feed")

	kindOK := false
	if s, present := p.str(m, "kind", path); !present {
		if !m.typos["kind"] {
			p.errorf(m.node, path+".kind", "required: %q, %q, %q or %q", KindWFS, KindGeoJSON, KindArcGIS, KindOGCAPI)
		}
	} else if s.ok {
		switch s.val {
		case KindWFS, KindGeoJSON, KindArcGIS, KindOGCAPI:
			f.Kind, kindOK = s.val, true
		default:
			p.errorf(s.node, path+".kind", "unknown kind %q: must be %q, %q, %q or %q", s.raw, KindWFS, KindGeoJSON, KindArcGIS, KindOGCAPI)
		}
	}
	isWFS := f.Kind == KindWFS

	if s, present := p.str(m, "url", path); !present {
		if !m.typos["url"] {
			p.errorf(m.node, path+".url", "required")
		}
	} else if s.ok && p.url(s, path+".url", isWFS) {
		f.URL = s.val
	}

	tn, tnPresent := p.str(m, "type_name", path)
	if tnPresent && tn.ok {
		f.TypeName = tn.val
	}
	if isWFS && f.TypeName == "" && (!tnPresent || tn.ok) && !m.typos["type_name"] {
		p.errorf(m.node, path+".type_name", "required for a wfs feed (the WFS typeName, e.g. \"topp:states\")")
	}
	if s, present := p.str(m, "id_property", path); present && s.ok {
		f.IDProperty = s.val
	}
	if s, present := p.str(m, "sort_by", path); present && s.ok {
		f.SortBy = s.val
	}

	// WFS-only settings: resolved from defaults for wfs, ignored (with a warning
	// when set on the feed) for geojson.
	wfsOnly := map[string]*yaml.Node{}
	version, versionNode := d.Version, (*yaml.Node)(nil)
	if s, present := p.str(m, "version", path); present && s.ok {
		versionNode = s.node
		if v, ok := p.version(s, path+".version"); ok {
			version = v
		}
	}
	outputFormat, ofNode := d.OutputFormat, (*yaml.Node)(nil)
	if s, present := p.str(m, "output_format", path); present && s.ok {
		ofNode = s.node
		outputFormat = s.val
	}
	pageSize, psNode := d.PageSize, (*yaml.Node)(nil)
	if v, n, ok := p.integer(m, "page_size", path); ok {
		psNode = n
		if v < 0 {
			p.errorf(n, path+".page_size", "must be 0 (no paging) or more, got %d", v)
		} else {
			pageSize = v
		}
	}
	wfsOnly["version"], wfsOnly["output_format"], wfsOnly["page_size"] = versionNode, ofNode, psNode
	if tnPresent {
		wfsOnly["type_name"] = tn.node
	}
	switch {
	case isWFS:
		f.Version, f.OutputFormat, f.PageSize = version, outputFormat, pageSize
		if f.PageSize == 0 {
			at := psNode
			if at == nil {
				at = m.node
			}
			p.warnf(at, path+".page_size", "0 fetches the whole layer in one request; servers cap responses (e.g. GeoServer's maxFeatures) and a capped layer looks complete")
		} else if f.SortBy == "" {
			p.warnf(m.node, path+".sort_by", "paging without sort_by: some servers return pages in no stable order, so features can be skipped or repeated")
		}
	case f.Kind == KindArcGIS:
		p.arcgisFeed(m, path, &f, wfsOnly, pageSize, psNode)
	case f.Kind == KindOGCAPI:
		f.PageSize = pageSize
		if f.PageSize == 0 {
			at := psNode
			if at == nil {
				at = m.node
			}
			p.errorf(at, path+".page_size", "must be at least 1 for an ogcapi feed: it is the limit of each page, which the feed follows by its next links")
		}
		for _, k := range []string{"type_name", "version", "output_format"} {
			if n := wfsOnly[k]; n != nil {
				p.warnf(n, path+"."+k, "ignored for an ogcapi feed")
			}
		}
		p.ogcapi(m, path, &f)
	case kindOK: // geojson
		for _, k := range []string{"type_name", "version", "output_format", "page_size"} {
			if n := wfsOnly[k]; n != nil {
				p.warnf(n, path+"."+k, "ignored for a geojson feed")
			}
		}
	}
	if kindOK && f.Kind != KindArcGIS {
		p.arcgisOnly(m, path, f.Kind)
	}
	if kindOK && f.Kind != KindOGCAPI {
		for _, k := range ogcapiKeys {
			if n, ok := m.get(k); ok {
				p.warnf(n, path+"."+k, "ignored for a %s feed (an ogcapi setting)", f.Kind)
			}
		}
	}

	// Schedule, evaluated in the jurisdiction's time zone.
	if s, present := p.str(m, "schedule", path); present {
		if s.ok {
			if c, ok := p.schedule(s, path+".schedule", j.Location); ok {
				f.Schedule, f.Cron = s.val, c
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
			at := m.node
			if n, ok := m.get("schedule"); ok {
				at = n
			}
			p.warnf(at, path+".schedule", "fires every %s: that is a lot of load on a public server", iv)
		}
	}

	// Timeouts: each must be positive, and a request may not outlast its poll.
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
		p.errorf(at, path+"."+field, "request_timeout %s%s exceeds timeout %s%s: one request cannot outlast the whole poll",
			f.RequestTimeout, fromDefaults(!rtPresent), f.Timeout, fromDefaults(!toPresent))
	}
	return f, idNode, true
}

func fromDefaults(b bool) string {
	if b {
		return " (from defaults)"
	}
	return ""
}

// id reads and checks the required id of a jurisdiction or feed.
func (p *parser) id(m *mapping, path, what string) (string, *yaml.Node) {
	s, present := p.str(m, "id", path)
	if !present {
		if m.typos["id"] {
			return "", m.node
		}
		p.errorf(m.node, path+".id", "required: every %s needs an id", what)
		return "", m.node
	}
	if !s.ok {
		return "", s.node
	}
	switch {
	case !idPattern.MatchString(s.val):
		p.errorf(s.node, path+".id", "bad %s id %q: use lowercase letters, digits, '_' and '-', starting with a letter or digit (ids appear in SQL, metrics and `ingestd poll JURISDICTION/FEED`)", what, s.raw)
		return "", s.node
	case len(s.val) > maxIDLen:
		p.errorf(s.node, path+".id", "%s id is %d bytes long; the limit is %d", what, len(s.val), maxIDLen)
		return "", s.node
	}
	return s.val, s.node
}

func (p *parser) url(s scalar, field string, isWFS bool) bool {
	u, err := url.Parse(s.val)
	if err != nil {
		// url.Parse quotes the value; say what is wrong without echoing a URL that
		// may hold an expanded secret.
		detail := ""
		var ue *url.Error
		if errors.As(err, &ue) && !s.expanded {
			detail = ": " + ue.Err.Error()
		}
		p.errorf(s.node, field, "bad url%s", detail)
		return false
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			p.errorf(s.node, field, "bad url: no scheme; write an absolute http:// or https:// URL")
		} else if s.expanded {
			p.errorf(s.node, field, "bad url: scheme not supported after expanding environment variables; use http or https")
		} else {
			p.errorf(s.node, field, "bad url: scheme %q not supported; use http or https", u.Scheme)
		}
		return false
	case u.Host == "":
		p.errorf(s.node, field, "bad url: no host")
		return false
	}
	if isWFS {
		var own []string
		for k := range u.Query() {
			for _, w := range wfsOwnParams {
				if strings.EqualFold(k, w) {
					own = append(own, k)
				}
			}
		}
		if len(own) > 0 {
			sort.Strings(own)
			p.warnf(s.node, field, "url already has %s; the wfs client builds the GetFeature request itself, so give the service endpoint only",
				strings.Join(own, ", "))
		}
	}
	return true
}

func (p *parser) version(s scalar, field string) (string, bool) {
	if s.val == "" {
		return BuiltinDefaults().Version, true
	}
	if s.val == wfs.Auto {
		return wfs.Auto, true
	}
	for _, v := range wfsVersions {
		if s.val == v {
			return v, true
		}
	}
	p.errorf(s.node, field, "unsupported WFS version %q: use %s or %q", s.raw, strings.Join(quoteAll(wfsVersions), ", "), wfs.Auto)
	return "", false
}

func (p *parser) location(s scalar, field string) (*time.Location, bool) {
	if s.val == "Local" {
		// "Local" would make schedules depend on the host the daemon runs on.
		p.errorf(s.node, field, "\"Local\" depends on the host; name the zone, e.g. \"America/Chicago\"")
		return nil, false
	}
	loc, err := time.LoadLocation(s.val)
	if err != nil {
		p.errorf(s.node, field, "unknown time zone %q: use an IANA name such as \"America/Chicago\"", s.raw)
		return nil, false
	}
	return loc, true
}

// schedule parses a cron spec and reports why it is bad.
func (p *parser) schedule(s scalar, field string, loc *time.Location) (cron.Schedule, bool) {
	c, problem := parseCron(s.val, loc)
	if problem != "" {
		if s.expanded {
			// cron's own messages quote pieces of the spec, which came from the environment.
			problem = "invalid after expanding environment variables"
		}
		p.errorf(s.node, field, "bad cron spec %q: %s", s.raw, problem)
		return nil, false
	}
	if c.Next(p.now).IsZero() {
		p.errorf(s.node, field, "bad cron spec %q: never fires (no matching date within five years)", s.raw)
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

// mapping is a YAML mapping with its keys checked and merge keys applied.
type mapping struct {
	node *yaml.Node
	vals map[string]*yaml.Node
	// typos holds the known keys suggested for unknown ones, so that a misspelt
	// required key is reported once (as the typo) rather than also as missing.
	typos map[string]bool
}

// missing reports whether a required key is absent and not already explained by a typo.
func (m *mapping) missing(key string) bool {
	_, ok := m.vals[key]
	return !ok && !m.typos[key]
}

func (m *mapping) get(key string) (*yaml.Node, bool) {
	n, ok := m.vals[key]
	return n, ok
}

// mapping checks that n is a mapping with known keys, each at most once, and
// reports unknown keys with the closest known one.
func (p *parser) mapping(n *yaml.Node, path string, known []string) (*mapping, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "expected a mapping of %s, found %s", strings.Join(known, ", "), describe(n))
		return nil, false
	}
	m := &mapping{node: n, vals: map[string]*yaml.Node{}, typos: map[string]bool{}}
	keys := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, path, "expected a key, found %s", describe(k))
			continue
		}
		field := join(path, k.Value)
		if first, dup := keys[k.Value]; dup {
			p.errorf(k, field, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		keys[k.Value] = k
		if !contains(known, k.Value) {
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := closest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
				m.typos[s] = true
			}
			p.errorf(k, field, "%s", msg)
			continue
		}
		m.vals[k.Value] = v
	}
	// Merge keys (<<: *anchor) fill in what the mapping does not set itself.
	for _, mv := range merges {
		mv = resolve(mv)
		srcs := []*yaml.Node{mv}
		if mv.Kind == yaml.SequenceNode {
			srcs = mv.Content
		}
		for _, src := range srcs {
			sub, ok := p.mapping(src, path, known)
			if !ok {
				continue
			}
			for k, v := range sub.vals {
				if _, set := m.vals[k]; !set {
					m.vals[k] = v
				}
			}
		}
	}
	return m, true
}

func (p *parser) sequence(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "expected a list, found %s", describe(n))
		return nil, false
	}
	return n.Content, true
}

// scalar is a string value after ${VAR} expansion. raw is the text in the file:
// messages quote raw, never val, so an expanded secret cannot leak into logs.
type scalar struct {
	node     *yaml.Node
	raw, val string
	expanded bool
	ok       bool // false when the value was bad (and reported)
}

// str reads key as a string. present is false when the key is absent or null
// (so "timeout:" with no value inherits, like leaving the key out).
func (p *parser) str(m *mapping, key, path string) (s scalar, present bool) {
	n, ok := m.get(key)
	if !ok {
		return s, false
	}
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return s, false
	}
	field := join(path, key)
	s.node = n
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, field, "expected a value, found %s", describe(n))
		return s, true
	}
	s.raw = n.Value
	val, err := expandEnv(n.Value, p.env)
	if err != nil {
		p.errorf(n, field, "%v", err)
		return s, true
	}
	s.val, s.expanded, s.ok = val, val != n.Value, true
	return s, true
}

func (p *parser) integer(m *mapping, key, path string) (int, *yaml.Node, bool) {
	s, present := p.str(m, key, path)
	if !present || !s.ok {
		return 0, s.node, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s.val))
	if err != nil {
		p.errorf(s.node, join(path, key), "expected a whole number, found %q", s.raw)
		return 0, s.node, false
	}
	return v, s.node, true
}

// duration reads key as a positive Duration; present reports whether the key was
// set, ok whether its value was good.
func (p *parser) duration(m *mapping, key, path string) (v Duration, n *yaml.Node, present, ok bool) {
	s, present := p.str(m, key, path)
	if !present || !s.ok {
		return 0, s.node, present, false
	}
	field := join(path, key)
	v, err := parseDuration(s.val)
	if err != nil {
		if s.expanded {
			p.errorf(s.node, field, "bad duration %q (after expanding environment variables): write e.g. \"90s\" or \"5m\"", s.raw)
		} else {
			p.errorf(s.node, field, "%v", err)
		}
		return 0, s.node, true, false
	}
	if v <= 0 {
		p.errorf(s.node, field, "must be more than 0, got %q", s.raw)
		return 0, s.node, true, false
	}
	return v, s.node, true, true
}

// expandEnv replaces ${NAME} with the value of NAME and "$${" with a literal "${".
// A lone "$" is left alone: URLs and filters may contain it. Errors name the
// variable, never a value.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated \"${\" (write \"$${\" for a literal \"${\")")
			}
			name := s[i+2 : i+2+end]
			if !envNamePattern.MatchString(name) {
				return "", fmt.Errorf("bad environment variable name %q in \"${...}\"", name)
			}
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// resolve follows an alias (*anchor) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// closest returns the known key nearest to key when it is near enough to be a
// typo (case and '_'/'-' differences count little), or "".
func closest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", -1
	for _, k := range known {
		d := levenshtein(norm(key), norm(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if limit := max(1, len(key)/3); bestDist >= 0 && bestDist <= limit {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
