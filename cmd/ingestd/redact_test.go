package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

// The command's logger redacts whatever reaches it: strings, errors, URLs,
// string lists, the message itself, and header values.
func TestLoggerRedacts(t *testing.T) {
	var buf bytes.Buffer
	c := common{logLevel: "debug"}
	logger, err := c.logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://LOGUSER@127.0.0.1/wfs?k=LOGK")
	logger.With("url", "http://127.0.0.1/a?ticket=LOGTICKET").Info("GET http://127.0.0.1/b?pw=LOGPW failed",
		"error", errors.New(`Get "http://a:LOGPASS@127.0.0.1/": refused`),
		"parsed", u,
		"list", []string{"http://127.0.0.1/c?hash=LOGHASH"},
		"headers", http.Header{"Authorization": {"Bearer LOGBEARER"}, "Accept": {"*/*"}})
	out := buf.String()
	for _, s := range []string{"LOGUSER", "LOGK", "LOGTICKET", "LOGPW", "LOGPASS", "LOGHASH", "LOGBEARER"} {
		if strings.Contains(out, s) {
			t.Errorf("log leaks %s: %s", s, out)
		}
	}
	if !strings.Contains(out, `"headers":"Accept,Authorization"`) || !strings.Contains(out, "k=REDACTED") {
		t.Errorf("log lost what it may show: %s", out)
	}
}

// Durations are logged as their text, not as nanoseconds.
func TestLoggerWritesDurationsAsText(t *testing.T) {
	var buf bytes.Buffer
	logger, err := (&common{logLevel: "info"}).logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("replayer started", "interval", 5*time.Second, "lease", config.Duration(90*time.Second))
	if out := buf.String(); !strings.Contains(out, `"interval":"5s"`) || !strings.Contains(out, `"lease":"1m30s"`) {
		t.Errorf("durations not as text: %s", out)
	}
}
