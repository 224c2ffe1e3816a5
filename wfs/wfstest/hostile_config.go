package wfstest

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
	hostileTimeout        = 20 * time.Second
	hostileRequestTimeout = 5 * time.Second
	hostilePageSize       = 100
)

// HostileConfigOptions say how HostileConfig renders the corpus.
type HostileConfigOptions struct {
	// Origins maps each origin of HostileOrigins to its base URL
	// (http://127.0.0.1:PORT).
	Origins map[string]string
	// Schedule is every feed's schedule (default "0 * * * *").
	Schedule string
}

// HostileConfig renders the ingestd configuration (jurisdictions.yaml) that
// polls every case: one feed per case, one jurisdiction per origin, since a
// breaker policy is set per jurisdiction. Retries are off (one attempt per
// page: every case is decided by its first answer) and the breakers never
// trip, except where a case's Breaker says otherwise.
func HostileConfig(cases []HostileCase, opt HostileConfigOptions) (string, error) {
	schedule := opt.Schedule
	if schedule == "" {
		schedule = "0 * * * *"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# The hostile corpus (wfs/wfstest/hostile_cases.go): one feed per case.
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
`, schedule, hostileTimeout, hostileRequestTimeout, hostilePageSize)
	byJur := map[string][]*HostileCase{}
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
				return "", fmt.Errorf("wfstest: cases %s and %s share an origin but not a breaker policy", byJur[j][0].Name, c.Name)
			}
		}
		if p := byJur[j][0].Breaker; p != "" {
			fmt.Fprintf(&b, "    breaker: %s\n", p)
		}
		b.WriteString("    feeds:\n")
		for _, c := range byJur[j] {
			base, ok := opt.Origins[c.OriginName()]
			if !ok {
				return "", fmt.Errorf("wfstest: no URL for origin %q of case %s", c.OriginName(), c.Name)
			}
			u, err := url.Parse(base + "/hostile/" + c.Name)
			if err != nil {
				return "", fmt.Errorf("wfstest: case %s: %w", c.Name, err)
			}
			if c.UserInfo != "" {
				u.User = url.User(c.UserInfo)
			}
			u.RawQuery = c.Query
			fmt.Fprintf(&b, "      - id: %s\n        url: %q\n", c.Name, u.String())
			switch c.Kind {
			case HostileWFS, HostileGML:
				format := "application/json"
				if c.Kind == HostileGML {
					format = "application/gml+xml; version=3.2"
				}
				fmt.Fprintf(&b, "        kind: wfs\n        type_name: points\n        version: \"2.0.0\"\n        output_format: %q\n        sort_by: n\n", format)
				if c.PageSize > 0 {
					fmt.Fprintf(&b, "        page_size: %d\n", c.PageSize)
				}
			default:
				b.WriteString("        kind: geojson\n")
			}
			if c.Timeout > 0 {
				fmt.Fprintf(&b, "        timeout: %s\n", c.Timeout)
			}
			if c.RequestTimeout > 0 {
				fmt.Fprintf(&b, "        request_timeout: %s\n", c.RequestTimeout)
			}
			if len(c.Limits) > 0 {
				keys := make([]string, 0, len(c.Limits))
				for k := range c.Limits {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				b.WriteString("        limits:\n")
				for _, k := range keys {
					fmt.Fprintf(&b, "          %s: %d\n", k, c.Limits[k])
				}
			}
		}
	}
	return b.String(), nil
}
