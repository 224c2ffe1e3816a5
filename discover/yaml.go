package discover

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/redact"
)

// Feeds says how Write writes the feeds.
type Feeds struct {
	// Jurisdiction is the id of the jurisdiction the feeds go under.
	Jurisdiction string
	// Schedule, when set, is every feed's schedule.
	Schedule string
}

// Write writes what results found: each layer as a comment (its geometry
// type, count, id and why, notes and checks), then a configuration with
// one feed per layer that can be polled, which `ingestd validate` accepts
// as it is; a layer that failed, or whose checks say a poll would fail,
// is a comment saying why, and one whose checks warn is its feed commented
// out. Every URL is redacted.
func Write(w io.Writer, results []*Result, f Feeds) error {
	var b strings.Builder
	for _, r := range results {
		listing(&b, r)
	}
	ids := map[string]bool{}
	var feeds strings.Builder
	written := 0
	for _, r := range results {
		for i := range r.Layers {
			feed(&feeds, &r.Layers[i], f, ids, &written)
		}
	}
	if written == 0 {
		// A jurisdiction must list a feed: nothing to paste.
		b.WriteString("# no layer could be written as a feed\n")
		b.WriteString(feeds.String())
	} else {
		fmt.Fprintf(&b, "jurisdictions:\n  - id: %s\n    feeds:\n", scalar(f.Jurisdiction))
		b.WriteString(feeds.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// listing writes r's layers as comments.
func listing(b *strings.Builder, r *Result) {
	kind := r.Kind
	if kind == "" {
		kind = "kind unknown"
	}
	fmt.Fprintf(b, "# %s (%s): %d layers", redact.URL(r.URL), kind, len(r.Layers))
	if r.Skipped > 0 {
		fmt.Fprintf(b, ", %d left out by -filter", r.Skipped)
	}
	b.WriteString("\n")
	for _, p := range r.Problems {
		comment(b, "  ", "FAILED: "+p)
	}
	for i := range r.Layers {
		l := &r.Layers[i]
		name := l.Name
		if l.Service != "" {
			name = l.Service + "/" + l.Name
		}
		if l.Err != nil {
			comment(b, "  ", name+": FAILED: "+redact.Error(l.Err))
			continue
		}
		count := "count unknown"
		if l.Count >= 0 {
			count = fmt.Sprintf("%d features (%s)", l.Count, l.CountFrom)
		}
		geometry := l.Geometry
		if geometry == "" {
			geometry = "geometry unknown"
		}
		comment(b, "  ", fmt.Sprintf("%s: %s, %s", name, geometry, count))
		comment(b, "    ", "id: "+l.IDWhy)
		for _, n := range l.Notes {
			comment(b, "    ", "note: "+n)
		}
		for _, c := range l.Checks {
			verdict := "ok"
			switch {
			case c.Fails:
				verdict = "FAILS"
			case c.Warns:
				verdict = "WARNING"
			}
			comment(b, "    ", fmt.Sprintf("check %s: %s: %s", c.What, verdict, c.Detail))
		}
	}
	b.WriteString("#\n")
}

// comment writes s as one comment line (line breaks in a server's text
// would end the comment and leave YAML behind).
func comment(b *strings.Builder, indent, s string) {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
	fmt.Fprintf(b, "#%s%s\n", indent, s)
}

// feed writes l's feed, or a comment saying why it has none, or the feed
// commented out when a check warns; written counts the feeds written.
func feed(b *strings.Builder, l *Layer, f Feeds, ids map[string]bool, written *int) {
	id := feedID(l.Name, ids)
	if l.Failing() {
		why := "its checks say a poll would fail"
		if l.Err != nil {
			why = "it could not be described"
		}
		comment(b, "      ", fmt.Sprintf("no feed %s for %s: %s", id, l.Name, why))
		delete(ids, id)
		return
	}
	if l.Suspicious() {
		// Written, but commented out: a check's warning is for a person
		// to judge before the feed polls (its id stays taken).
		comment(b, "      ", fmt.Sprintf("feed %s for %s commented out: a check warns (see above); uncomment it once judged", id, l.Name))
		var sub strings.Builder
		writeFeed(&sub, l, id, f)
		for line := range strings.Lines(sub.String()) {
			b.WriteString("#" + line)
		}
		return
	}
	writeFeed(b, l, id, f)
	*written++
}

// writeFeed writes l's feed under id.
func writeFeed(b *strings.Builder, l *Layer, id string, f Feeds) {
	u := l.URL
	if l.Kind == KindOGCAPI {
		// The collection's own url: a landing page shared by several
		// feeds reads to validate as one layer fetched twice.
		u = strings.TrimRight(u, "/") + "/collections/" + url.PathEscape(l.Collection)
		if q := strings.IndexByte(l.URL, '?'); q >= 0 {
			u = strings.TrimRight(l.URL[:q], "/") + "/collections/" + url.PathEscape(l.Collection) + l.URL[q:]
		}
	}
	raw := u
	u = redact.URL(u)
	if u != raw {
		comment(b, "      ", "the url's credentials are redacted: put them in headers: (or token:) as ${VAR}")
	}
	fmt.Fprintf(b, "      - id: %s\n        kind: %s\n        url: %s\n", id, l.Kind, scalar(u))
	switch l.Kind {
	case KindWFS:
		fmt.Fprintf(b, "        type_name: %s\n        version: %s\n        output_format: auto\n", scalar(l.TypeName), scalar(l.Version))
		if l.PageSizeZero {
			b.WriteString("        page_size: 0\n")
		}
	}
	if l.FileLayer != "" {
		fmt.Fprintf(b, "        layer: %s\n", scalar(l.FileLayer))
	}
	if l.IDProperty != "" {
		fmt.Fprintf(b, "        id_property: %s\n", scalar(l.IDProperty))
	}
	if f.Schedule != "" {
		fmt.Fprintf(b, "        schedule: %s\n", scalar(f.Schedule))
	}
}

// feedID is a feed id made of name ([a-z0-9_-], starting with a letter or
// digit, at most 48 bytes), unique among ids.
func feedID(name string, ids map[string]bool) string {
	if _, local, ok := strings.Cut(name, ":"); ok {
		name = local
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	id := strings.Trim(b.String(), "_-")
	for strings.Contains(id, "__") {
		id = strings.ReplaceAll(id, "__", "_")
	}
	if len(id) > 48 {
		id = strings.TrimRight(id[:48], "_-")
	}
	if id == "" {
		id = "layer"
	}
	base := id
	for n := 2; ids[id]; n++ {
		id = base + "_" + strconv.Itoa(n)
	}
	ids[id] = true
	return id
}

// JurisdictionID is a jurisdiction id made of s (a host name), as feedID.
func JurisdictionID(s string) string { return feedID(s, map[string]bool{}) }

// scalar is s as a YAML scalar, quoted when it must be, with "${" written
// "$${" so that ingestd's ${VAR} expansion gives s back.
func scalar(s string) string {
	s = strings.ReplaceAll(s, "${", "$${")
	out, err := yaml.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(string(out), "\n")
}
