package config

import (
	"time"

	"github.com/ingestd/ingestd/internal/yamlconf"
)

// DeadLetter is the dead_letter block of jurisdictions.yaml: how
// parked polls are replayed.
type DeadLetter struct {
	// MaxAttempts is the replays a parked poll gets before it is abandoned.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxCheckpointAge bounds how old staged pages may be for a replay to
	// continue them; an older checkpoint restarts the poll from the first
	// page, so that a snapshot never mixes pages fetched hours apart.
	MaxCheckpointAge Duration `yaml:"max_checkpoint_age"`
	// Lease is how long a replaying instance holds a row without renewing
	// its claim: after it dies, its rows wait this long before another
	// instance takes them over.
	Lease Duration `yaml:"lease"`
	// Interval is the time between two looks for due rows.
	Interval Duration `yaml:"interval"`
	// FailedBackoff is the first wait after a poll failed on a closed
	// breaker; it doubles per replay, capped at the feed's schedule interval.
	FailedBackoff Duration `yaml:"failed_backoff"`
	// StuckOpenAfter is the number of consecutive cooldowns an origin may
	// stay open before it is reported as stuck (event origin_stuck_open).
	StuckOpenAfter int `yaml:"stuck_open_after"`
}

// BuiltinDeadLetter returns the dead_letter settings used when the file does
// not set them: 10 attempts; checkpoints kept 6h; 2m leases; a look every 5s;
// a failed poll retried after 30s, doubling; an origin open across 3
// consecutive cooldowns is stuck.
func BuiltinDeadLetter() DeadLetter {
	return DeadLetter{
		MaxAttempts:      10,
		MaxCheckpointAge: Duration(6 * time.Hour),
		Lease:            Duration(2 * time.Minute),
		Interval:         Duration(5 * time.Second),
		FailedBackoff:    Duration(30 * time.Second),
		StuckOpenAfter:   3,
	}
}

var deadLetterKeys = []string{"max_attempts", "max_checkpoint_age", "lease", "interval", "failed_backoff", "stuck_open_after"}

// deadLetter reads the top-level dead_letter block into d.
func (p *parser) deadLetter(top *yamlconf.Mapping, d *DeadLetter) {
	n, present := top.Get("dead_letter")
	if !present {
		return
	}
	const path = "dead_letter"
	m, ok := p.Mapping(n, path, deadLetterKeys)
	if !ok {
		return
	}
	for key, dst := range map[string]*int{"max_attempts": &d.MaxAttempts, "stuck_open_after": &d.StuckOpenAfter} {
		if v, n, ok := p.Integer(m, key, path); ok {
			if v < 1 {
				p.Errorf(n, path+"."+key, "must be at least 1, got %d", v)
			} else {
				*dst = v
			}
		}
	}
	for key, dst := range map[string]*Duration{"max_checkpoint_age": &d.MaxCheckpointAge, "lease": &d.Lease,
		"interval": &d.Interval, "failed_backoff": &d.FailedBackoff} {
		if v, _, _, ok := p.duration(m, key, path); ok {
			*dst = v
		}
	}
}
