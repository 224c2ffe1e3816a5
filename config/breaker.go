package config

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/internal/yamlconf"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/breaker"
)

// breakerKeys are the settings of a `breaker:` block, under defaults or a
// jurisdiction. Each maps to a field of breaker.Policy (see its docs); a
// jurisdiction's block overrides the defaults block field by field.
var breakerKeys = []string{
	"consecutive_failures", "failure_ratio", "min_calls", "window",
	"open_base", "open_max", "open_decay", "half_open_max_calls",
	"max_attempts", "backoff_base", "backoff_max", "attempt_timeout",
	"target_concurrency", "rate_limit", "burst", "max_in_flight_per_origin", "max_retry_after",
	"retry_budget_ratio", "retry_budget_min",
}

// breakerPolicy reads the `breaker:` block of m (if any) over base. An invalid
// result is reported at the block and base is returned, so one bad setting
// yields one error instead of a cascade.
func (p *parser) breakerPolicy(m *yamlconf.Mapping, path string, base breaker.Policy) breaker.Policy {
	n, present := m.Get("breaker")
	if !present || yamlconf.Resolve(n).Tag == "!!null" {
		return base
	}
	path = yamlconf.Join(path, "breaker")
	bm, ok := p.Mapping(n, path, breakerKeys)
	if !ok {
		return base
	}
	pol := base
	errsBefore := p.ErrorCount()
	ints := map[string]*int{
		"consecutive_failures": &pol.ConsecutiveFailures, "min_calls": &pol.MinCalls,
		"half_open_max_calls": &pol.HalfOpenMaxCalls, "max_attempts": &pol.MaxAttempts,
		"burst": &pol.Burst, "max_in_flight_per_origin": &pol.MaxInFlightPerOrigin,
		"retry_budget_min": &pol.RetryBudgetMin,
	}
	for key, dst := range ints {
		if v, n, ok := p.Integer(bm, key, path); ok {
			if v < 0 {
				p.Errorf(n, yamlconf.Join(path, key), "must be 0 or more, got %d", v)
				continue
			}
			*dst = v
		}
	}
	floats := map[string]*float64{
		"failure_ratio": &pol.FailureRatio, "rate_limit": &pol.RateLimit,
		"target_concurrency": &pol.TargetConcurrency,
		"retry_budget_ratio": &pol.RetryBudgetRatio,
	}
	for key, dst := range floats {
		if v, ok := p.number(bm, key, path); ok {
			*dst = v
		}
	}
	durations := map[string]*time.Duration{
		"window": &pol.Window, "open_base": &pol.OpenBase, "open_max": &pol.OpenMax,
		"open_decay": &pol.OpenDecay, "backoff_base": &pol.BackoffBase, "backoff_max": &pol.BackoffMax,
		"max_retry_after": &pol.MaxRetryAfter,
	}
	for key, dst := range durations {
		if v, _, present, ok := p.duration(bm, key, path); present && ok {
			*dst = v.Std()
		}
	}
	// attempt_timeout may be "0s": no per-attempt bound beyond request_timeout.
	if s, present := p.Str(bm, "attempt_timeout", path); present && s.OK {
		if v, err := parseDuration(s.Val); err != nil {
			p.Errorf(s.Node, yamlconf.Join(path, "attempt_timeout"), "%v", err)
		} else if v < 0 {
			p.Errorf(s.Node, yamlconf.Join(path, "attempt_timeout"), "must be 0s or more, got %q", s.Raw)
		} else {
			pol.AttemptTimeout = v.Std()
		}
	}
	if p.ErrorCount() > errsBefore {
		return base
	}
	if err := pol.Validate(); err != nil {
		p.Errorf(bm.Node, path, "%s", strings.TrimPrefix(err.Error(), breaker.ErrInvalidPolicy.Error()+": "))
		return base
	}
	return pol
}

// number reads key as a number ≥ 0.
func (p *parser) number(m *yamlconf.Mapping, key, path string) (float64, bool) {
	s, present := p.Str(m, key, path)
	if !present || !s.OK {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s.Val), 64)
	if err != nil || v < 0 {
		p.Errorf(s.Node, yamlconf.Join(path, key), "expected a number of 0 or more, found %q", s.Raw)
		return 0, false
	}
	return v, true
}

// originPolicies works out the breaker policy of every origin the config
// polls. Breakers are per origin, settings per jurisdiction: when two
// jurisdictions reach one origin with different settings, the more protective
// value of each field wins (a county portal shared by two cities must be
// treated as gently as the gentler of them asks), with a warning.
func (p *parser) originPolicies(cfg *Config, idNodes map[string]*yaml.Node) map[string]breaker.Policy {
	out := map[string]breaker.Policy{}
	owner := map[string]string{} // origin → first jurisdiction using it
	for _, j := range cfg.Jurisdictions {
		seen := map[string]bool{}
		for _, f := range j.Feeds {
			u, err := url.Parse(f.URL)
			if err != nil || u.Host == "" {
				continue // already reported
			}
			origin := breaker.Origin(u)
			if seen[origin] {
				continue
			}
			seen[origin] = true
			prev, ok := out[origin]
			if !ok {
				out[origin], owner[origin] = j.Breaker, j.ID
				continue
			}
			if prev != j.Breaker {
				p.Warnf(idNodes[j.ID], "jurisdictions."+j.ID+".breaker",
					"origin %s is shared with jurisdiction %q, whose breaker settings differ: the more protective setting of each field applies to both",
					origin, owner[origin])
				out[origin] = breaker.MoreProtective(prev, j.Breaker)
			}
		}
	}
	return out
}

// OriginPolicies returns the breaker policy of each origin the config polls,
// keyed by breaker.Origin, sorted iteration left to the caller.
func (c *Config) OriginPolicies() map[string]breaker.Policy {
	return c.originPolicies
}

// Origins returns the origins the config polls, sorted.
func (c *Config) Origins() []string {
	out := make([]string, 0, len(c.originPolicies))
	for o := range c.originPolicies {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}
