package main

import (
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd/redact"
)

// redactAttr is the ReplaceAttr of every logger the command builds: the last
// line of defence between a URL and the log, and the one place durations
// become text ("5s", where slog's JSON writes nanoseconds). Packages log URLs redacted
// already, but an error from a library (net/http's *url.Error quotes the
// whole request URL, a redirect's Location, a driver message) is only text
// once the handler formats it, so every string, error and message is
// redacted here, where it becomes text.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(v.Duration().String())
	case slog.KindString:
		if s := v.String(); s != redact.Text(s) {
			a.Value = slog.StringValue(redact.Text(s))
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(redact.Error(x))
		case interface{ Std() time.Duration }: // config.Duration
			a.Value = slog.StringValue(x.Std().String())
		case *url.URL:
			a.Value = slog.StringValue(redact.URL(x.String()))
		case http.Header:
			// Header values carry credentials (Authorization, X-Api-Key, a
			// feed's headers:): a log shows the names only.
			a.Value = slog.StringValue(strings.Join(slices.Sorted(maps.Keys(x)), ","))
		case []string:
			out := make([]string, len(x))
			for i, s := range x {
				out[i] = redact.Text(s)
			}
			a.Value = slog.AnyValue(out)
		}
	}
	return a
}
