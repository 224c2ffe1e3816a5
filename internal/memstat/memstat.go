// Package memstat reads this process's memory figures for the benchmarks
// that print them.
package memstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is the peak resident set size of this process in bytes (VmHWM in
// /proc/self/status), or 0 where /proc cannot tell.
func PeakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
