package httpcall

import (
	"compress/flate"
	"errors"
	"io"
	"testing"
)

// TestGzipErrorNamedOnce: an error of a corrupt outer layer passes through
// the inner layers' readers, and is still named gzip's once, not per layer.
func TestGzipErrorNamedOnce(t *testing.T) {
	t.Parallel()
	err := gzipError(gzipError(gzipError(flate.CorruptInputError(36))))
	if got, want := err.Error(), "gzip: flate: corrupt input before offset 36"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var ce flate.CorruptInputError
	if !errors.As(err, &ce) {
		t.Errorf("%v does not wrap the flate error", err)
	}
	if err := gzipError(io.ErrUnexpectedEOF); !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != "gzip: unexpected EOF" {
		t.Errorf("got %v", err)
	}
	if reset := errors.New("connection reset by peer"); gzipError(reset) != reset {
		t.Errorf("a transport error was named gzip's")
	}
}
