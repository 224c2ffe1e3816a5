package main

import (
	"runtime"
	"testing"

	"golang.org/x/sync/semaphore"
)

// The heavy end-to-end tests of this package run ingestd processes, a
// PostgreSQL cluster or Chromium beside each other. Each takes its share of
// the machine's cores from heavyCores before it starts, so that however
// many of them -parallel lets run, together they never ask for more cores
// than the test binary has (GOMAXPROCS): on a small machine they queue
// instead of starving each other. Shares are in quarter cores: what each
// test's own processes used, CPU time over wall time, when run alone on a
// 2-core machine, rounded up (scripts/bench.sh has the figures; on 2 cores
// they all fit, so the package's wall time is that of its longest test).
// They mostly wait, on timers, on loopback servers and on PostgreSQL, which
// is why -parallel (pgtest.Main) lets more tests run than there are cores.
const (
	heavyHostile    = 2 // 4 `ingestd poll` at a time, and an `ingestd run` of 207 feeds
	heavyCluster    = 1 // three `ingestd run`
	heavyCrash      = 1 // a PostgreSQL cluster of its own, crashed and restarted; two daemons
	heavyStatusPage = 1 // an `ingestd run` and headless Chromium
	heavySecrets    = 1 // dozens of one-off ingestd commands and a daemon
)

// heavyCores holds the quarter cores of GOMAXPROCS.
var heavyCores = semaphore.NewWeighted(int64(4 * runtime.GOMAXPROCS(0)))

// heavy takes quarters of a core for t (at most all of them) and gives them
// back when t ends. It waits while other heavy tests hold them.
func heavy(t testing.TB, quarters int64) {
	t.Helper()
	quarters = min(quarters, int64(4*runtime.GOMAXPROCS(0)))
	if err := heavyCores.Acquire(t.Context(), quarters); err != nil {
		t.Fatalf("waiting for %d quarter cores: %v", quarters, err)
	}
	t.Cleanup(func() { heavyCores.Release(quarters) })
}
