package main

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// Flags may follow the operands on every subcommand: a flag after an
// operand is parsed (an unknown one is reported as such, not taken for an
// operand), and a known one takes effect.
func TestFlagsAnywhere(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "-no-such-flag"},
		{"poll", "town/zoning", "-no-such-flag"},
		{"validate", "../../jurisdictions.yaml", "-no-such-flag"},
		{"discover", "http://127.0.0.1:1/wfs", "-no-such-flag"},
		{"status", "-no-such-flag"},
		{"migrate", "-no-such-flag"},
		{"breaker", "open", "http://127.0.0.1:1", "-no-such-flag"},
		{"deadletter", "list", "-no-such-flag"},
		{"deadletter", "replay", "1", "-no-such-flag"},
		{"held", "accept", "town/zoning", "-no-such-flag"},
		{"feeds", "prune", "-no-such-flag"},
		{"scrub-secrets", "-no-such-flag"},
		{"changes", "-since", "0", "metro/cycle_hire", "-no-such-flag"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "flag provided but not defined: -no-such-flag") {
			t.Errorf("ingestd %s: exit %d, want 2 naming the flag:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	// The command: -config after the feed is read (the file does
	// not exist), not taken for a second operand.
	code, _, stderr := runCLI(t, "changes", "-since", "0", "metro/cycle_hire", "-config", "jurisdictions.yaml",
		"-database-url", "postgres://127.0.0.1:1/none?connect_timeout=1")
	if code != 1 || strings.Contains(stderr, "takes one") {
		t.Errorf("changes with flags after the feed: exit %d, want 1 (no database):\n%s", code, stderr)
	}
}

// "--" ends the flags: what follows is operands, dash or not.
func TestParseFlagsDoubleDash(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	n := fs.Int("n", 0, "")
	if err := parseFlags(fs, []string{"a", "-n", "3", "b", "--", "-c", "-n"}); err != nil {
		t.Fatal(err)
	}
	if *n != 3 || !slices.Equal(fs.Args(), []string{"a", "b", "-c", "-n"}) {
		t.Fatalf("n=%d operands %q, want 3 and [a b -c -n]", *n, fs.Args())
	}
}
