package wfs

import (
	"log/slog"
	"slices"
	"strings"
)

// LogValue is how a Layer appears in a log: its identity with the URL
// redacted, and the names of its headers but never their values, which are
// credentials. Without it, slog would print every field, Headers included.
func (l Layer) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", l.Kind), slog.String("url", RedactURL(l.URL))}
	if l.TypeName != "" {
		attrs = append(attrs, slog.String("type_name", l.TypeName))
	}
	if len(l.Headers) > 0 {
		attrs = append(attrs, slog.String("headers", headerNames(l.Headers)))
	}
	return slog.GroupValue(attrs...)
}

// headerNames lists the names of h, sorted, comma-separated.
func headerNames(h map[string]string) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
