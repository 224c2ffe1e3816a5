package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

func TestDeadLetter(t *testing.T) {
	const base = `
jurisdictions:
  - id: town
    feeds:
      - id: roads
        kind: geojson
        url: http://127.0.0.1:1/roads.geojson
`
	cfg, err := config.Parse("t.yaml", []byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DeadLetter != config.BuiltinDeadLetter() {
		t.Errorf("without a dead_letter block: %+v, want the built-in defaults", cfg.DeadLetter)
	}

	cfg, err = config.Parse("t.yaml", []byte("dead_letter:\n  max_attempts: 3\n  lease: 30s\n"+base), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.BuiltinDeadLetter()
	want.MaxAttempts, want.Lease = 3, config.Duration(30*time.Second)
	if cfg.DeadLetter != want {
		t.Errorf("dead_letter: %+v, want %+v", cfg.DeadLetter, want)
	}

	_, err = config.Parse("t.yaml", []byte("dead_letter:\n  max_attempts: 0\n  leese: 30s\n  interval: 5\n"+base), nil)
	for _, msg := range []string{
		"t.yaml:2:17: dead_letter.max_attempts: must be at least 1",
		"t.yaml:3:3: dead_letter.leese: unknown key",
		"t.yaml:4:13: dead_letter.interval: duration \"5\" has no unit",
	} {
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("error %v does not contain %q", err, msg)
		}
	}
}
