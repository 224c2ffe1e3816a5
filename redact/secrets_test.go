package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The six shapes in which hostile servers echo a credential,
// none of them inside a URL: each is scrubbed by value.
func TestSecretsScrubEchoes(t *testing.T) {
	t.Parallel()
	const tok, key = "tokZ9xq.ab/c+d=", "KEYq71xzpw"
	s := NewSecrets(tok, key)
	tests := []struct{ name, in, want string }{
		{"arcgis 498", `arcgis: error 498: Invalid token: tokZ9xq.ab/c+d=`, `arcgis: error 498: Invalid token: REDACTED`},
		{"html title", `<html><head><title>Token tokZ9xq.ab/c+d= rejected</title>`, `<html><head><title>Token REDACTED rejected</title>`},
		{"echoed header in JSON", `{"error":{"code":500,"details":["X-Esri-Authorization: Bearer tokZ9xq.ab\/c+d="]}}`,
			`{"error":{"code":500,"details":["X-Esri-Authorization: Bearer REDACTED"]}}`},
		{"ogc api 403", `exception document Forbidden: api key KEYq71xzpw may not read collection c`,
			`exception document Forbidden: api key REDACTED may not read collection c`},
		{"quota page", `<p>Quota exceeded for key keyQ71XZPW</p>`, `<p>Quota exceeded for key REDACTED</p>`},
		{"next link, other spelling", `http://h/collections/c/items?APIKEY=KEYq71xzpw&offset=10`, `http://h/collections/c/items?APIKEY=REDACTED&offset=10`},
		{"query escaped", `?token=tokZ9xq.ab%2Fc%2Bd%3D&f=json`, `?token=REDACTED&f=json`},
		{"lower-case hex", `?token=tokZ9xq.ab%2fc%2bd%3d`, `?token=REDACTED`},
		{"path escaped", `/a/tokZ9xq.ab%2Fc+d=/b`, `/a/REDACTED/b`},
		{"go quoted", fmt.Sprintf("body %q", `x "tokZ9xq.ab/c+d="`), `body "x \"REDACTED\""`},
		{"html escaped", html.EscapeString(`<b>tokZ9xq.ab/c+d=</b>`), `&lt;b&gt;REDACTED&lt;/b&gt;`},
		{"twice, and adjacent", `tokZ9xq.ab/c+d=KEYq71xzpw and KEYq71xzpw`, `REDACTED and REDACTED`},
		{"nothing", `nothing here: token, key, KEYq71xz`, `nothing here: token, key, KEYq71xz`},
	}
	for _, tt := range tests {
		if got := s.Scrub(tt.in); got != tt.want {
			t.Errorf("%s: Scrub(%q)\n got %q\nwant %q", tt.name, tt.in, got, tt.want)
		}
	}
	// JSON as a log handler writes it.
	b, _ := json.Marshal(map[string]string{"error": "Invalid token: " + tok + " <" + key + ">"})
	if got := s.Scrub(string(b)); strings.Contains(strings.ToLower(got), "tokz9xq") || strings.Contains(strings.ToLower(got), "keyq71") {
		t.Errorf("JSON form leaks: %s", got)
	}
}

// A value shorter than MinSecretLen is not scrubbed by value: it would
// garble ordinary words. A long one inside a longer word is.
func TestSecretsMinLength(t *testing.T) {
	t.Parallel()
	s := NewSecrets("gis", "county1", "  ", "parcels2024x")
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1 (only parcels2024x is long enough)", s.Len())
	}
	in := "arcgis: county1 failed on parcels2024xyz"
	if got, want := s.Scrub(in), "arcgis: county1 failed on REDACTEDyz"; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
}

// Overlapping secrets become one marker; the longest of two at a position
// wins.
func TestSecretsOverlap(t *testing.T) {
	t.Parallel()
	s := NewSecrets("abcdefgh12", "efgh1234zz", "abcdefgh")
	if got, want := s.Scrub("x abcdefgh1234zz y abcdefgh z"), "x REDACTED y REDACTED z"; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
}

func TestSecretsNilAndEmpty(t *testing.T) {
	t.Parallel()
	var none *Secrets
	in := "GET http://u@h/a?k=zzzzzzzzzzz failed: zzzzzzzzzzz"
	if got := none.Text(in); got != Text(in) {
		t.Errorf("nil Text = %q", got)
	}
	if none.Scrub(in) != in || none.Len() != 0 || none.Forms() != nil || none.Patterns(100) != nil {
		t.Error("nil Secrets must hold nothing")
	}
	if got := NewSecrets().Error(errors.New(in)); got != Text(in) {
		t.Errorf("empty Error = %q", got)
	}
	if got := NewSecrets("zzzzzzzzzzz").Text(in); strings.Contains(got, "zzzz") || !strings.Contains(got, "k=REDACTED") {
		t.Errorf("Text = %q", got)
	}
}

// Wrap hides the value but keeps the chain.
func TestSecretsWrap(t *testing.T) {
	t.Parallel()
	s := NewSecrets("hunter2hunter2")
	err := s.Wrap(fmt.Errorf("poll: %w: Invalid token hunter2hunter2", fs.ErrPermission))
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Wrap = %v (Is ErrPermission: %v)", err, errors.Is(err, fs.ErrPermission))
	}
	if s.Wrap(nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
}

// The writer scrubs each write and reports the caller's length.
func TestSecretsWriter(t *testing.T) {
	t.Parallel()
	s := NewSecrets()
	var buf bytes.Buffer
	w := s.Writer(&buf)
	line := []byte(`{"msg":"poll failed","error":"Invalid token: s3cr3tT0ken"}` + "\n")
	if n, err := w.Write(line); n != len(line) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	// Added after the writer was made: a reload reaches it.
	s.Add("s3cr3tT0ken")
	if n, err := w.Write(line); n != len(line) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "s3cr3tT0ken") || lines[1] != `{"msg":"poll failed","error":"Invalid token: REDACTED"}` {
		t.Errorf("written:\n%s", buf.String())
	}
}

// Patterns match in Go what Scrub matches (PostgreSQL reads the same
// syntax; feeds/postgis tests it there), and split at maxLen.
func TestSecretsPatterns(t *testing.T) {
	t.Parallel()
	vals := []string{"a.b*c(d)[e]{f}|g^h$i+j?k\\l", "Plain-Key-12345"}
	for i := range 40 {
		vals = append(vals, fmt.Sprintf("generated-secret-%03d", i))
	}
	s := NewSecrets(vals...)
	pats := s.Patterns(200)
	if len(pats) < 5 {
		t.Fatalf("%d patterns of at most 200 bytes for %d forms", len(pats), len(s.Forms()))
	}
	for _, p := range pats {
		if len(p) > 200 {
			t.Errorf("pattern of %d bytes", len(p))
		}
	}
	all := regexp.MustCompile("(?i)" + strings.Join(pats, "|"))
	for _, v := range vals {
		for _, in := range []string{v, strings.ToUpper(v), url.QueryEscape(v)} {
			if !all.MatchString("x " + in + " y") {
				t.Errorf("patterns miss %q", in)
			}
		}
	}
	if all.MatchString("generated-secret-") {
		t.Error("patterns match a prefix")
	}
}

func TestHeaderSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
		want        []string
	}{
		{"X-Esri-Authorization", "Bearer tok123", []string{"Bearer tok123", "tok123"}},
		{"Authorization", "Basic dXNlcjpwYXNzd29yZA==", []string{"Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "user:password", "user", "password"}},
		{"X-Api-Key", "k3y", []string{"k3y"}},
		{"X-Api-Key", "not:a scheme", []string{"not:a scheme"}},
		{"Accept", "application/geo+json", nil},
		{"user-agent", "ingestd-county-mirror", nil},
	}
	for _, tt := range tests {
		if got := HeaderSecrets(tt.name, tt.value); !slices.Equal(got, tt.want) {
			t.Errorf("HeaderSecrets(%s, %q) = %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	t.Parallel()
	got := URLSecrets("https://us%40er:p%3Ass@h.example/c/items?apikey=a%2Bb&SERVICE=WFS&limit=10&BARE&token=&x=1;sig=z#frag")
	want := []string{"us@er", "p:ss", "frag", "a+b", "BARE", "", "1", "z"}
	if !slices.Equal(got, want) {
		t.Errorf("URLSecrets = %q, want %q", got, want)
	}
	if URLSecrets("http://h:bad/%zz") != nil {
		t.Error("an unparseable URL holds no secret that can be told apart")
	}
}

// Add from many goroutines while others scrub: the race detector's test.
func TestSecretsConcurrent(t *testing.T) {
	t.Parallel()
	s := NewSecrets()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.Add(fmt.Sprintf("concurrent-secret-%d", i))
		}()
		go func() {
			defer wg.Done()
			_ = s.Scrub("a concurrent-secret-3 b")
		}()
	}
	wg.Wait()
	if s.Len() != 8 || s.Scrub("concurrent-secret-3") != Marker {
		t.Errorf("Len %d, Scrub %q", s.Len(), s.Scrub("concurrent-secret-3"))
	}
}

// BenchmarkSecretsScrub is the cost of scrubbing a 1 KB error text against
// a set of 500 secrets (a large configuration): what every stored error
// and log line pays.
func BenchmarkSecretsScrub(b *testing.B) {
	vals := make([]string, 500)
	for i := range vals {
		vals[i] = fmt.Sprintf("key-%08x-%08x", i*7919, i*104729)
	}
	s := NewSecrets(vals...)
	text := strings.Repeat("wfs: GET http://h.example/wfs?service=WFS&count=1000: HTTP 500 ", 16)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Scrub(text)
	}
}
