package source

import (
	"errors"
	"io"
	"testing"
)

func TestNamed(t *testing.T) {
	if Named("arcgis", nil) != nil {
		t.Fatal("Named(nil) is not nil")
	}
	err := Named("arcgis", io.ErrUnexpectedEOF)
	if err.Error() != "arcgis: unexpected EOF" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Named: %q, Is %v; want the kind's name before the text, and the chain kept", err, errors.Is(err, io.ErrUnexpectedEOF))
	}
	if again := Named("arcgis", err); again != err {
		t.Errorf("Named twice: %q, want the error as it was", again)
	}
	if other := Named("ogcapi", err); other.Error() != "ogcapi: arcgis: unexpected EOF" {
		t.Errorf("Named by another kind: %q", other)
	}
}
