package pgtest

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Main runs m's tests, as m.Run does, with -parallel raised to at least n
// unless the command line sets it; a package's TestMain calls it as
// os.Exit(pgtest.Main(m, 8)).
//
// go test runs GOMAXPROCS parallel tests at once, which suits tests that
// keep a core busy. Tests on a database of their own mostly wait, on
// PostgreSQL, on loopback servers and on timers, so on 2 cores the default
// left the machine idle while they queued behind each other.
func Main(m *testing.M, n int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
	return m.Run()
}
