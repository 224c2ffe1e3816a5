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

// TestIncompleteErrorNamedOnce: a kind that sets Kind is named by it, one
// that leaves it to Named is named once there, and a count is reported
// only when there is one (0 is a count).
func TestIncompleteErrorNamedOnce(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&IncompleteError{Kind: "wfs", URL: "http://x/wfs", Expected: 12, Got: 3, Reason: "page 1 cut short"},
			"wfs: incomplete result from http://x/wfs: page 1 cut short (expected 12 features, got 3); nothing applied"},
		{Named("arcgis", &IncompleteError{URL: "http://x/0", Expected: -1, Reason: "object id 7 was read twice"}),
			"arcgis: incomplete result from http://x/0: object id 7 was read twice; nothing applied"},
		{Named("ogcapi", &IncompleteError{Kind: "ogcapi", URL: "http://x/items", Expected: 0, Got: 5, Reason: "more than numberMatched"}),
			"ogcapi: incomplete result from http://x/items: more than numberMatched (expected 0 features, got 5); nothing applied"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
		var ie *IncompleteError
		if !errors.As(c.err, &ie) {
			t.Errorf("%v: not an *IncompleteError", c.err)
		}
	}
}
