package file_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/ingestd/ingestd/file"
)

// rssChildEnv makes the test binary a child that reads one CSV of a 100 MB
// line and prints the error: its peak RSS is then the read's own.
const rssChildEnv = "INGESTD_DOWNLOAD_RSS_CHILD"

// maxLongLineRSS bounds the child's peak RSS: the test binary's own (about
// 20 MB) and the bounded read, far under the hostile corpus's 102 MB.
const maxLongLineRSS = 64 << 10 // KB

// TestCSVLongLinePeakRSS: a CSV whose one line is 100 MB fails at
// limits.feature_bytes (16 MiB) without encoding/csv ever holding the
// line, in a process of its own whose peak RSS it prints and bounds.
// Run with -v to see the figure.
func TestCSVLongLinePeakRSS(t *testing.T) {
	if os.Getenv(rssChildEnv) != "" {
		longLineChild(t)
		return
	}
	if testing.Short() {
		t.Skip("runs a process of its own")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCSVLongLinePeakRSS$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), rssChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KB on Linux
	_, msg, _ := strings.Cut(string(out), "LONG-LINE: ")
	msg, _, _ = strings.Cut(msg, "\n")
	t.Logf("a CSV line of 100 MB: peak RSS %d MB; %s", rss>>10, msg)
	if !strings.Contains(msg, "limits.feature_bytes exceeded (16777216 bytes): the CSV record starting on line 2") {
		t.Errorf("child's error %q", msg)
	}
	if rss > maxLongLineRSS {
		t.Errorf("peak RSS %d MB, want at most %d MB", rss>>10, maxLongLineRSS>>10)
	}
}

// longLineChild fetches the CSV of a 100 MB line and prints the error.
func longLineChild(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "id,name,WKT\n1,")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 1600 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(w, ",POINT (1 2)\n")
	}))
	defer srv.Close()
	c := file.NewClient(srv.Client(), nil, nil, file.WithTempDir(t.TempDir()))
	_, err := c.Fetch(t.Context(), layer(srv.URL+"/long.csv", file.Settings{}), 0, (&collect{}).handle)
	t.Logf("LONG-LINE: %v", err)
}
