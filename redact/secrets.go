package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"html"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// MinSecretLen is the length, in bytes, below which a value is not
// scrubbed by value. A short value (a user name "gis", a password
// "county1") would also match words of ordinary messages, and scrubbing
// them would garble every error that contains them; such a value is still
// redacted where it stands in a URL (URL, Text). Tokens and API keys are
// far longer.
const MinSecretLen = 8

// Secrets is the set of credential values a configuration holds (tokens,
// header values, URL userinfo, the values of credential parameters; see
// HeaderSecrets and URLSecrets), scrubbed by value from any text: where a
// server echoes a credential back in prose ("Invalid token: …", an HTML
// page, an exception naming the key, a next link spelling the parameter
// APIKEY where the feed's url has apikey), URL-based redaction cannot see
// it, because it is no longer in a URL.
//
// Each value is also searched in the spellings it takes in transit: query
// and path escaping, full percent-encoding, JSON and Go string escaping
// (with and without escaped slashes), and HTML escaping; letters compare
// ASCII-case-insensitively (%2f is %2F, a server may upper-case a key).
// Every match becomes Marker.
//
// A Secrets is safe for concurrent use, and its methods accept a nil
// receiver, which holds no value (its Text is Text, and so on). Values are
// only ever added: a reload adds the new configuration's, and one a reload
// removed may still sit in an error in flight.
type Secrets struct {
	mu  sync.Mutex // serialises Add
	set atomic.Pointer[secretSet]
}

// secretSet is one immutable state of a Secrets.
type secretSet struct {
	values []string // as added, sorted
	// forms are every spelling searched, ASCII lower case, longest first.
	forms []string
	// byPrefix indexes forms by their first 8 bytes (every form is at
	// least MinSecretLen long), so that a text is scanned once, with one
	// map lookup per byte, however many secrets there are.
	byPrefix map[uint64][]string
	// needles are those distinct prefixes, for mayHold (data.go).
	needles [][]byte
}

// NewSecrets returns a set holding values (see Add).
func NewSecrets(values ...string) *Secrets {
	s := &Secrets{}
	s.Add(values...)
	return s
}

// Add adds values to the set, ignoring those shorter than MinSecretLen
// (after trimming white space) and those already in it.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.set.Load()
	var have []string
	if old != nil {
		have = old.values
	}
	merged := slices.Clone(have)
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) >= MinSecretLen {
			merged = append(merged, v)
		}
	}
	slices.Sort(merged)
	merged = slices.Compact(merged)
	if slices.Equal(merged, have) {
		return
	}
	s.set.Store(newSecretSet(merged))
}

// Len returns how many values the set holds.
func (s *Secrets) Len() int {
	if set := s.load(); set != nil {
		return len(set.values)
	}
	return 0
}

// Forms returns every spelling the set searches for, in ASCII lower case
// (compare them case-insensitively), longest first: what a store needs to
// scrub text it already holds (Patterns).
func (s *Secrets) Forms() []string {
	if set := s.load(); set != nil {
		return slices.Clone(set.forms)
	}
	return nil
}

// Patterns returns regular expressions that together match every form
// (Forms), each an alternation of quoted forms of at most maxLen bytes
// (and at least one form): the syntax is both Go's and PostgreSQL's
// (ARE), meant to be used case-insensitively (`~*`, regexp_replace's "i"
// flag), so that a store scrubs its rows in SQL by the same spellings.
func (s *Secrets) Patterns(maxLen int) []string {
	var out []string
	var b strings.Builder
	for _, f := range s.Forms() {
		q := regexp.QuoteMeta(f)
		if b.Len() > 0 && b.Len()+1+len(q) > maxLen {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(q)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

func (s *Secrets) load() *secretSet {
	if s == nil {
		return nil
	}
	return s.set.Load()
}

// Scrub returns text with every occurrence of a secret, in any of its
// forms, replaced by Marker; overlapping occurrences become one Marker.
// It does nothing else: a stored next link keeps its other parameters.
func (s *Secrets) Scrub(text string) string {
	set := s.load()
	if set == nil || len(text) < MinSecretLen {
		return text
	}
	return set.scrub(text)
}

// Text is Text after Scrub: the form in which a message may leave the
// process or enter the database.
func (s *Secrets) Text(text string) string { return Text(s.Scrub(text)) }

// URL is URL after Scrub (a secret may sit in a path).
func (s *Secrets) URL(raw string) string { return URL(s.Scrub(raw)) }

// Error is Error after Scrub; Error(nil) is "".
func (s *Secrets) Error(err error) string {
	if err == nil {
		return ""
	}
	return s.Text(err.Error())
}

// Wrap returns err with its message as Error gives it, still unwrapping to
// err (errors.Is and errors.As see through it); Wrap(nil) is nil.
func (s *Secrets) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: s.Error(err), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that scrubs (Scrub) each write before passing it
// to w: for a log handler, which writes each record in one call, or a
// command's output. A secret split across two writes is not seen, so
// write whole lines.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &scrubWriter{w: w, s: s} }

type scrubWriter struct {
	w io.Writer
	s *Secrets
}

func (sw *scrubWriter) Write(p []byte) (int, error) {
	out := p
	if set := sw.s.load(); set != nil && len(p) >= MinSecretLen {
		if idx := set.find(p); idx != nil {
			out = set.replace(p, idx)
		}
	}
	if _, err := sw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func newSecretSet(values []string) *secretSet {
	set := &secretSet{values: values, byPrefix: map[uint64][]string{}}
	seen := map[string]bool{}
	for _, v := range values {
		for _, f := range forms(v) {
			f = asciiLower(f)
			if len(f) < MinSecretLen || seen[f] {
				continue
			}
			seen[f] = true
			set.forms = append(set.forms, f)
		}
	}
	// Longest first: of two forms at one position, the longer wins.
	slices.SortStableFunc(set.forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range set.forms {
		k := prefixKey([]byte(f))
		if _, ok := set.byPrefix[k]; !ok {
			set.needles = append(set.needles, []byte(f[:8]))
		}
		set.byPrefix[k] = append(set.byPrefix[k], f)
	}
	return set
}

// forms returns the spellings of v a text may carry.
func forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), percentAll(v)}
	for _, escapeHTML := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(v) == nil {
			j := strings.TrimSuffix(strings.TrimSpace(b.String()), `"`)
			j = strings.TrimPrefix(j, `"`)
			out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
		}
	}
	for _, q := range []string{strconv.Quote(v), strconv.QuoteToASCII(v)} {
		out = append(out, q[1:len(q)-1])
	}
	h := html.EscapeString(v)
	out = append(out, h, strings.ReplaceAll(h, "+", "&#43;"))
	return out
}

// percentAll percent-encodes every byte of v but letters and digits.
func percentAll(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func asciiLower(s string) string {
	b := []byte(s)
	lowerInPlace(b)
	return string(b)
}

func lowerInPlace(b []byte) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// prefixKey is the first 8 bytes of b (len(b) >= 8), already lower case.
func prefixKey(b []byte) uint64 { return binary.LittleEndian.Uint64(b[:8]) }

func (set *secretSet) scrub(text string) string {
	p := []byte(text)
	idx := set.find(p)
	if idx == nil {
		return text
	}
	return string(set.replace(p, idx))
}

// find returns the byte ranges of p that hold a form, merged where they
// overlap or touch, in order; nil when there is none.
func (set *secretSet) find(p []byte) [][2]int {
	if len(set.forms) == 0 || len(p) < MinSecretLen {
		return nil
	}
	lower := bytes.Clone(p)
	lowerInPlace(lower)
	var idx [][2]int
	for i := 0; i+MinSecretLen <= len(lower); i++ {
		cands, ok := set.byPrefix[prefixKey(lower[i:])]
		if !ok {
			continue
		}
		for _, f := range cands {
			if !bytes.HasPrefix(lower[i:], []byte(f)) {
				continue
			}
			end := i + len(f)
			if n := len(idx); n > 0 && i <= idx[n-1][1] {
				idx[n-1][1] = max(idx[n-1][1], end)
			} else {
				idx = append(idx, [2]int{i, end})
			}
			break // longest first
		}
	}
	return idx
}

// replace returns p with each range of idx replaced by Marker.
func (set *secretSet) replace(p []byte, idx [][2]int) []byte {
	out := make([]byte, 0, len(p))
	last := 0
	for _, r := range idx {
		out = append(out, p[last:r[0]]...)
		out = append(out, Marker...)
		last = r[1]
	}
	return append(out, p[last:]...)
}

// harmlessHeaders are request headers whose values say what is asked for,
// not who asks (lower case); every other configured header value is a
// secret.
var harmlessHeaders = map[string]bool{
	"accept": true, "accept-charset": true, "accept-encoding": true, "accept-language": true,
	"cache-control": true, "content-type": true, "pragma": true, "user-agent": true,
}

// HeaderSecrets returns the secrets a configured request header holds: its
// value, and for a value of the form "<scheme> <credentials>"
// (Authorization: Bearer …, X-Esri-Authorization: Bearer …) the
// credentials alone, and for Basic their decoded user, password and
// "user:password". A header of harmlessHeaders (Accept, User-Agent, …)
// holds none.
func HeaderSecrets(name, value string) []string {
	if harmlessHeaders[strings.ToLower(strings.TrimSpace(name))] {
		return nil
	}
	value = strings.TrimSpace(value)
	out := []string{value}
	scheme, cred, ok := strings.Cut(value, " ")
	cred = strings.TrimSpace(cred)
	if !ok || cred == "" || !isToken(scheme) {
		return out
	}
	out = append(out, cred)
	if strings.EqualFold(scheme, "basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			user, pass, _ := strings.Cut(string(dec), ":")
			out = append(out, string(dec), user, pass)
		}
	}
	return out
}

// isToken reports whether s is an HTTP auth-scheme name (letters, digits,
// "-", "_", ".").
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// URLSecrets returns the secrets a configured URL holds, as URL would
// redact them: its userinfo's user and password, its fragment, and the
// value of every query parameter but the harmless ones (a bare name, too:
// ?TOKEN), decoded. A URL that does not parse holds none that can be told
// apart; it is refused by the configuration anyway.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	if u.Fragment != "" {
		out = append(out, u.Fragment)
	}
	for _, seg := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		key, value, hasValue := strings.Cut(seg, "=")
		name, err := url.QueryUnescape(key)
		if err != nil || Harmless(name) {
			continue
		}
		if !hasValue {
			out = append(out, name)
			continue
		}
		if v, err := url.QueryUnescape(value); err == nil {
			out = append(out, v)
		} else {
			out = append(out, value)
		}
	}
	return out
}
