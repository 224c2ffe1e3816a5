package pgtest

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// perCore is how many database tests Main lets run at once per core
// (GOMAXPROCS). Tests on a database of their own mostly wait, on
// PostgreSQL, on loopback servers and on timers: on 2 busy cores
// feeds/postgis took 15-24 s with 8 at once and 42-47 s with 4, and
// go test's default of GOMAXPROCS left the machine idle while they queued.
const perCore = 4

// Main runs m's tests, as m.Run does, with -parallel sized to the machine
// unless the command line sets it: perCore tests per core, at most bound
// (the package's own: how many of its tests the database and the
// machine can take at once), and never fewer than go test's default of
// GOMAXPROCS. A package's TestMain calls it as os.Exit(pgtest.Main(m, 8)).
// A package whose tests keep cores busy (processes, a browser) bounds
// those tests itself (cmd/ingestd's heavy tests take shares of the cores).
func Main(m *testing.M, bound int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(Parallel(runtime.GOMAXPROCS(0), bound)))
	}
	return m.Run()
}

// Parallel is the -parallel Main sets on a machine of procs cores for a
// package with the given bound: perCore per core, at most bound, at least
// procs.
func Parallel(procs, bound int) int {
	return max(procs, min(bound, perCore*procs))
}
