package hostile

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Corpus defaults: short enough that the whole corpus runs in well under a
// minute, long enough for a loaded machine.
const (
	corpusTimeout        = 20 * time.Second
	corpusRequestTimeout = 5 * time.Second
	corpusPageSize       = 100
)

// ConfigOptions say how Config renders the corpus.
type ConfigOptions struct {
	// Origins maps each origin of Origins to its base URL
	// (http://127.0.0.1:PORT).
	Origins map[string]string
	// Schedule is every feed's schedule (default "0 * * * *").
	Schedule string
}

// Config renders the ingestd configuration (jurisdictions.yaml) that
// polls every case: one feed per case, one jurisdiction per origin, since a
// breaker policy is set per jurisdiction. Retries are off (one attempt per
// page: every case is decided by its first answer) and the breakers never
// trip, except where a case's Breaker says otherwise.
func Config(cases []Case, opt ConfigOptions) (string, error) {
	schedule := opt.Schedule
	if schedule == "" {
		schedule = "0 * * * *"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# The hostile corpus (internal/hostile): one feed per case.
max_in_flight: 20
defaults:
  schedule: %q
  timeout: %s
  request_timeout: %s
  page_size: %d
  breaker: {consecutive_failures: 1000000, failure_ratio: 0, max_attempts: 1, rate_limit: 0, max_in_flight_per_origin: 0}
# Parked polls come back within seconds under ingestd run: the replays are
# part of what the process must survive (and of its peak RSS).
dead_letter: {interval: 1s, failed_backoff: 2s}
jurisdictions:
`, schedule, corpusTimeout, corpusRequestTimeout, corpusPageSize)
	byJur := map[string][]*Case{}
	var jurs []string
	for i := range cases {
		c := &cases[i]
		j := c.Jurisdiction()
		if byJur[j] == nil {
			jurs = append(jurs, j)
		}
		byJur[j] = append(byJur[j], c)
	}
	sort.Strings(jurs)
	for _, j := range jurs {
		fmt.Fprintf(&b, "  - id: %s\n", j)
		for _, c := range byJur[j] {
			if c.Breaker != byJur[j][0].Breaker {
				return "", fmt.Errorf("hostile: cases %s and %s share an origin but not a breaker policy", byJur[j][0].Name, c.Name)
			}
		}
		if p := byJur[j][0].Breaker; p != "" {
			fmt.Fprintf(&b, "    breaker: %s\n", p)
		}
		b.WriteString("    feeds:\n")
		for _, c := range byJur[j] {
			if err := writeFeed(&b, c, opt.Origins); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

// casePaths are the paths below /hostile/NAME of the feed URL of each kind
// that is not the case's URL itself.
var casePaths = map[string]string{
	ArcGIS: "/arcgis/rest/services/points/FeatureServer/0",
	OGCAPI: "/collections/points",
}

// urlPath is the path below /hostile/NAME of the case's feed URL.
func (c *Case) urlPath() string {
	switch c.Kind {
	case File:
		return "/" + c.File.fileName()
	case Socrata:
		return "/resource/" + DatasetID(c.Name) + ".json"
	}
	return casePaths[c.Kind]
}

// writeFeed writes case c's feed entry.
func writeFeed(b *strings.Builder, c *Case, origins map[string]string) error {
	base, ok := origins[c.OriginName()]
	if !ok {
		return fmt.Errorf("hostile: no URL for origin %q of case %s", c.OriginName(), c.Name)
	}
	u, err := url.Parse(base + "/hostile/" + c.Name + c.urlPath())
	if err != nil {
		return fmt.Errorf("hostile: case %s: %w", c.Name, err)
	}
	if c.UserInfo != "" {
		u.User = url.User(c.UserInfo)
	}
	u.RawQuery = c.Query
	fmt.Fprintf(b, "      - id: %s\n        url: %q\n", c.Name, u.String())
	switch c.Kind {
	case WFS, GML:
		format := "application/json"
		if c.Kind == GML {
			format = "application/gml+xml; version=3.2"
		}
		fmt.Fprintf(b, "        kind: wfs\n        type_name: points\n        version: \"2.0.0\"\n        output_format: %q\n        sort_by: n\n", format)
	case ArcGIS, OGCAPI:
		fmt.Fprintf(b, "        kind: %s\n", c.Kind)
	case Socrata:
		fmt.Fprintf(b, "        kind: socrata\n        app_token: ${%s}\n", AppTokenVar)
	case File:
		b.WriteString("        kind: file\n")
		for _, kv := range [][2]string{{"format", c.File.Format}, {"layer", c.File.Layer}, {"x", c.File.X}, {"y", c.File.Y},
			{"wkt", c.File.WKT}, {"crs", c.File.CRS}, {"encoding", c.File.Encoding}} {
			if kv[1] != "" {
				fmt.Fprintf(b, "        %s: %q\n", kv[0], kv[1])
			}
		}
	default:
		b.WriteString("        kind: geojson\n")
	}
	if c.PageSize > 0 {
		fmt.Fprintf(b, "        page_size: %d\n", c.PageSize)
	}
	if c.Timeout > 0 {
		fmt.Fprintf(b, "        timeout: %s\n", c.Timeout)
	}
	if c.RequestTimeout > 0 {
		fmt.Fprintf(b, "        request_timeout: %s\n", c.RequestTimeout)
	}
	if c.Redirects != "" {
		fmt.Fprintf(b, "        redirects: %s\n", c.Redirects)
	}
	writeLimits(b, c.Limits)
	return nil
}

// writeLimits writes a feed's limits block, keys sorted.
func writeLimits(b *strings.Builder, limits map[string]int64) {
	if len(limits) == 0 {
		return
	}
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("        limits:\n")
	for _, k := range keys {
		fmt.Fprintf(b, "          %s: %d\n", k, limits[k])
	}
}
