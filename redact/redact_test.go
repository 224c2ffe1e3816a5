package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"token-only userinfo", "http://TOKEN1@127.0.0.1:8080/wfs", "http://REDACTED@127.0.0.1:8080/wfs"},
		{"user and password", "https://bob:hunter2@x.example/wfs?service=WFS", "https://REDACTED:REDACTED@x.example/wfs?service=WFS"},
		{"unknown names are redacted, harmless kept",
			"https://x.example/a?pw=1&ticket=2&hash=3&k=4&access_key_id=5&token=6&X-Amz-Signature=7&count=5&typeNames=a%3Ab&SERVICE=WFS",
			"https://x.example/a?pw=REDACTED&ticket=REDACTED&hash=REDACTED&k=REDACTED&access_key_id=REDACTED&token=REDACTED&X-Amz-Signature=REDACTED&count=5&typeNames=a%3Ab&SERVICE=WFS"},
		{"encoded name is still a name", "https://x.example/wfs?%74oken=abc&%63ount=5", "https://x.example/wfs?%74oken=REDACTED&%63ount=5"},
		{"bare name may be the token", "https://x.example/wfs?SECRETBARE&f=json", "https://x.example/wfs?REDACTED&f=json"},
		{"empty value stays empty", "https://x.example/wfs?token=&f=json", "https://x.example/wfs?token=&f=json"},
		{"semicolon separates", "https://x.example/wfs?count=5;token=abc", "https://x.example/wfs?count=5;token=REDACTED"},
		{"fragment", "https://x.example/a.json#access_token=abc", "https://x.example/a.json#REDACTED"},
		{"nothing to hide", "https://x.example/wfs?typeNames=a&sortBy=pin+ASC&map=/srv/z.map", "https://x.example/wfs?typeNames=a&sortBy=pin+ASC&map=/srv/z.map"},
		{"unparseable: userinfo and query", "http://TOKEN2@x.example:bad/wfs?token=abc&a=1", "http://REDACTED@x.example:bad/wfs?token=REDACTED&a=REDACTED"},
		{"unparseable: password", "http://u:p w@x.example:bad/", "http://REDACTED@x.example:bad/"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("%s: URL(%q)\n got %q\nwant %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// Redacting twice changes nothing: text that passed through one sink (the
// database) may pass through another (the CLI).
func TestURLIdempotent(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"http://a:b@x.example/wfs?token=1&count=2#f",
		"http://TOK@x.example:bad/?k=1",
	} {
		once := URL(in)
		if twice := URL(once); twice != once {
			t.Errorf("URL(URL(%q)) = %q, want %q", in, twice, once)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	in := `wfs: GET http://TOK@127.0.0.1:1/wfs?k=SEC1&count=5: HTTP 404; redirect to "https://h.example/x?sig=SEC2" failed (see https://h.example/doc).`
	want := `wfs: GET http://REDACTED@127.0.0.1:1/wfs?k=REDACTED&count=5: HTTP 404; redirect to "https://h.example/x?sig=REDACTED" failed (see https://h.example/doc).`
	if got := Text(in); got != want {
		t.Errorf("Text\n got %s\nwant %s", got, want)
	}
	for _, plain := range []string{"no url here: k=1", "what? why=because", "a ? b"} {
		if got := Text(plain); got != plain {
			t.Errorf("Text changed a message without a URL or query: %q → %q", plain, got)
		}
	}
	// A server's error that echoes the request target has no scheme.
	echo := `InvalidParameterValue: cannot parse /wfs?service=WFS&pw=SEC3&typeNames=a.`
	if got, want := Text(echo), `InvalidParameterValue: cannot parse /wfs?service=WFS&pw=REDACTED&typeNames=a.`; got != want {
		t.Errorf("Text\n got %s\nwant %s", got, want)
	}
}

// net/http's errors quote the request URL whole: Error redacts them.
func TestErrorOfHTTPClient(t *testing.T) {
	t.Parallel()
	req, err := http.NewRequest(http.MethodGet, "http://SECRETUSER:SECRETPW@127.0.0.1:1/wfs?pw=SECRETQ", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = http.DefaultClient.Do(req) // port 1: connection refused
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("Do = %v, want a *url.Error", err)
	}
	msg := Error(fmt.Errorf("feed a/b: %w", err))
	for _, s := range []string{"SECRETUSER", "SECRETPW", "SECRETQ"} {
		if strings.Contains(msg, s) {
			t.Errorf("Error leaks %s: %s", s, msg)
		}
	}
	if !strings.Contains(msg, "127.0.0.1:1/wfs?pw=REDACTED") {
		t.Errorf("Error lost the request: %s", msg)
	}
	if Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
}
