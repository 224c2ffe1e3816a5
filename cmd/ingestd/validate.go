package main

import (
	"fmt"
	"io"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
)

// testSummary counts the acceptance tests validate ran.
type testSummary struct {
	feeds, tests, failed int
}

// runConformTests runs the tests: of every feed that has a conform and
// writes one line per failure to w, in file order:
//
//	FILE:LINE: jurisdiction/feed: test N "description": street: got "MAIN ST", want "N MAIN ST"
//
// A test counts as failed once however many of its columns differ.
func runConformTests(cfg *config.Config, w io.Writer) testSummary {
	var s testSummary
	for _, f := range cfg.Feeds() {
		if f.Conform == nil || len(f.Conform.Tests) == 0 {
			continue
		}
		s.feeds++
		s.tests += len(f.Conform.Tests)
		failed := map[int]bool{}
		for _, fl := range conform.RunTests(f.Conform.Conform, f.Conform.Tests) {
			failed[fl.Index] = true
			fmt.Fprintf(w, "%s:%d: %s: %s\n", cfg.Path, fl.Line, f.Key(), fl)
		}
		s.failed += len(failed)
	}
	return s
}

// String is validate's summary line of the tests.
func (s testSummary) String() string {
	return fmt.Sprintf("acceptance tests: %d passed, %d failed (%d feeds)", s.tests-s.failed, s.failed, s.feeds)
}
