package config

import (
	"log/slog"
)

// LogValue is how a Feed appears in a log: its key and its layer as
// source.Layer logs it (URL redacted, header names without their values).
// Without it, slog would print every field, Headers included.
func (f Feed) LogValue() slog.Value {
	return slog.GroupValue(slog.String("feed", f.Key()), slog.Any("layer", f.Layer()))
}
