package source

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A Layer handed to slog whole shows neither its header values nor the
// secrets of its URL.
func TestLayerLogValueHidesSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := Layer{Kind: "wfs", URL: "http://USERTOK@127.0.0.1/wfs?pw=QUERYTOK", Settings: namedSettings{"a"},
		Headers: map[string]string{"Authorization": "Bearer HEADERTOK", "X-Api-Key": "KEYTOK"}}
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("layer", "layer", l)
	out := buf.String()
	for _, s := range []string{"USERTOK", "QUERYTOK", "HEADERTOK", "KEYTOK"} {
		if strings.Contains(out, s) {
			t.Errorf("log leaks %s: %s", s, out)
		}
	}
	if !strings.Contains(out, `"headers":"Authorization,X-Api-Key"`) {
		t.Errorf("log does not name the headers: %s", out)
	}
	if !strings.Contains(out, `"type_name":"a"`) {
		t.Errorf("log does not name the layer: %s", out)
	}
}

// namedSettings are a kind's settings that name the layer (NamedLayer),
// as wfs.Settings do.
type namedSettings struct{ typeName string }

func (s namedSettings) Identity() []string                    { return nil }
func (s namedSettings) LayerNames() (typeName, sortBy string) { return s.typeName, "" }
