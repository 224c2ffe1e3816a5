package config

import (
	"fmt"
	"time"

	"github.com/ingestd/ingestd/internal/yamlconf"
	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as "90s", "5m" or "1h30m".
//
// A bare number is refused rather than read as seconds or nanoseconds: "timeout: 30"
// is ambiguous to the person who wrote it, and guessing wrong silently turns a
// thirty-minute poll budget into thirty nanoseconds.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration ("1h30m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a duration string such as "90s" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a duration such as \"90s\" or \"5m\"", n.Line)
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes d in the form UnmarshalYAML reads, so a resolved config can be
// printed back (e.g. by `ingestd validate`) and read again.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// parseDuration is UnmarshalYAML's reading, the config loader's
// (yamlconf.ParseDuration).
func parseDuration(s string) (Duration, error) {
	v, err := yamlconf.ParseDuration(s)
	return Duration(v), err
}
