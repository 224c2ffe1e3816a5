// Package oaimport turns OpenAddresses' source catalog (schema 2:
// sources/**.json, one file per county or city, each with layers of
// addresses, parcels, buildings and centerlines) into an ingestd config:
// one jurisdiction per source file, one feed per layer entry, its conform
// and acceptance tests carried over (an ftp:// download as a file feed, as
// an http one). What the config cannot express (a skipped entry, an
// encoding ingestd does not know, a format it does not read) becomes a
// comment naming the reason, and a Tally counts both by protocol and
// format.
package oaimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/conform"
)

// Source is one catalog file read: its path as given and its id.
type Source struct {
	Path string
	// ID is the jurisdiction id: the path below sources/ without .json,
	// lowercased, '/' and anything else an id may not hold made '-'
	// (sources/us/nc/wake.json → us-nc-wake).
	ID   string
	Data []byte
}

// Files lists the catalog files under paths (files or folders), sorted,
// each with its id.
func Files(paths []string) ([]Source, error) {
	var out []Source
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("openaddresses: %w", err)
		}
		if !st.IsDir() {
			out = append(out, Source{Path: p})
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".json") {
				out = append(out, Source{Path: path})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("openaddresses: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Path, b.Path) })
	for i := range out {
		data, err := os.ReadFile(out[i].Path)
		if err != nil {
			return nil, fmt.Errorf("openaddresses: %w", err)
		}
		out[i].Data, out[i].ID = data, SourceID(out[i].Path)
	}
	return out, nil
}

var notID = regexp.MustCompile(`[^a-z0-9_-]+`)

// SourceID is the jurisdiction id of the catalog file at path: its path
// below the last "sources" folder (or its base name), without .json,
// lowercased, '/' and what an id may not hold made '-'.
func SourceID(path string) string {
	p := filepath.ToSlash(path)
	if i := strings.LastIndex(p, "sources/"); i >= 0 {
		p = p[i+len("sources/"):]
	} else {
		p = p[strings.LastIndexByte(p, '/')+1:]
	}
	p = strings.ToLower(strings.TrimSuffix(p, ".json"))
	p = strings.Trim(notID.ReplaceAllString(strings.ReplaceAll(p, "/", "-"), "-"), "-_")
	return shorten(p, 63)
}

// shorten keeps s within n bytes, ending a cut one with a hash of the
// whole so that two long names stay apart.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	return strings.TrimRight(s[:n-len(suffix)], "-_") + suffix
}

// catalog types: the parts of a schema-2 source the import reads.
type (
	sourceFile struct {
		Schema   int                    `json:"schema"`
		Coverage map[string]any         `json:"coverage"`
		Layers   map[string][]layerItem `json:"layers"`
	}
	layerItem struct {
		Name        string          `json:"name"`
		Data        string          `json:"data"`
		Protocol    string          `json:"protocol"`
		Compression string          `json:"compression"`
		Skip        bool            `json:"skip"`
		Note        any             `json:"note"`
		Conform     json.RawMessage `json:"conform"`
		Request     *struct {
			Headers map[string]string `json:"headers"`
		} `json:"request"`
		Test *struct {
			Enabled *bool          `json:"enabled"`
			Tests   []conform.Test `json:"acceptance-tests"`
		} `json:"test"`
	}
)

// Tally counts layer entries by protocol and format: expressed as feeds,
// or not, by reason.
type Tally struct {
	// Rows are keyed by "protocol format" (format "-" when none).
	Rows map[string]*TallyRow
	// Files and Jurisdictions count the source files read and the
	// jurisdictions written (a file none of whose layers is expressed
	// writes none).
	Files, Jurisdictions int
	// Tests counts the acceptance tests carried over, LeftOut those left
	// out because the reference implementation fails them too.
	Tests, LeftOut int
}

// TallyRow is one protocol and format's count.
type TallyRow struct {
	Expressed int
	// Skipped counts the entries not expressed, by reason; "skip: true" is
	// the catalog's own.
	Skipped map[string]int
}

func (t *Tally) add(key, reason string) {
	if t.Rows == nil {
		t.Rows = map[string]*TallyRow{}
	}
	r := t.Rows[key]
	if r == nil {
		r = &TallyRow{Skipped: map[string]int{}}
		t.Rows[key] = r
	}
	if reason == "" {
		r.Expressed++
	} else {
		r.Skipped[reason]++
	}
}

// Totals returns the entries expressed, skipped by the catalog (skip:
// true) and not expressed for another reason.
func (t *Tally) Totals() (expressed, catalogSkip, notExpressed int) {
	for _, r := range t.Rows {
		expressed += r.Expressed
		for reason, n := range r.Skipped {
			if reason == ReasonSkip {
				catalogSkip += n
			} else {
				notExpressed += n
			}
		}
	}
	return
}

// String prints the tally, one protocol and format a line, then totals.
func (t *Tally) String() string {
	var b strings.Builder
	keys := slices.Sorted(maps.Keys(t.Rows))
	for _, k := range keys {
		r := t.Rows[k]
		fmt.Fprintf(&b, "%-22s expressed %5d", k, r.Expressed)
		for _, reason := range slices.Sorted(maps.Keys(r.Skipped)) {
			fmt.Fprintf(&b, "; %s: %d", reason, r.Skipped[reason])
		}
		b.WriteString("\n")
	}
	e, s, n := t.Totals()
	share := 0.0
	if e+n > 0 {
		share = 100 * float64(e) / float64(e+n)
	}
	fmt.Fprintf(&b, "total: %d files, %d jurisdictions; %d layers expressed, %d skip: true, %d not expressed (%.1f %% of the layers not skipped expressed); %d acceptance tests carried, %d left out\n",
		t.Files, t.Jurisdictions, e, s, n, share, t.Tests, t.LeftOut)
	return b.String()
}

// ReasonSkip is the reason of an entry the catalog marks skip: true.
const ReasonSkip = "skip: true"

// Import writes an ingestd config for the sources to its result, and
// counts what it expressed.
func Import(sources []Source) ([]byte, *Tally, error) {
	t := &Tally{}
	var b bytes.Buffer
	b.WriteString("# Written by `ingestd import openaddresses` from OpenAddresses' source catalog.\n")
	b.WriteString("# Each jurisdiction is one source file, each feed one of its layer entries;\n")
	b.WriteString("# entries it cannot express are comments naming the reason.\n")
	b.WriteString("jurisdictions:\n")
	seen := map[string]bool{}
	for _, s := range sources {
		t.Files++
		id := s.ID
		for i := 2; seen[id]; i++ {
			id = shorten(s.ID, 60) + fmt.Sprintf("-%d", i)
		}
		seen[id] = true
		if err := importSource(&b, t, s, id); err != nil {
			return nil, nil, err
		}
	}
	if t.Jurisdictions == 0 {
		return nil, t, fmt.Errorf("openaddresses: no layer of the %d source files could be expressed as a feed", t.Files)
	}
	return b.Bytes(), t, nil
}

// layerOrder is the order feeds are written in.
var layerOrder = []string{"addresses", "parcels", "buildings", "centerlines"}

// importSource writes one source file's jurisdiction (or only comments
// when none of its layers is expressed).
func importSource(b *bytes.Buffer, t *Tally, s Source, id string) error {
	var src sourceFile
	dec := json.NewDecoder(bytes.NewReader(s.Data))
	dec.UseNumber() // a test's 12 and 12.0 print differently in batch-machine
	if err := dec.Decode(&src); err != nil {
		return fmt.Errorf("openaddresses: %s: not a source file: %v", s.Path, err)
	}
	var notes []string
	var feeds []*yaml.Node
	if src.Schema != 2 {
		notes = append(notes, fmt.Sprintf("schema %d: only schema 2 is read", src.Schema))
		t.add("- -", "schema 1")
	}
	names := map[string]bool{}
	for _, layer := range append(layerOrder, otherLayers(src.Layers)...) {
		for _, it := range src.Layers[layer] {
			f, fnotes, reason := feedFor(t, id, layer, it, names)
			notes = append(notes, fnotes...)
			t.add(tallyKey(it), reason)
			if reason != "" && reason != ReasonSkip {
				notes = append(notes, fmt.Sprintf("%s/%s: not expressed: %s", layer, it.Name, reason))
				continue
			}
			if reason == "" {
				feeds = append(feeds, f)
			}
		}
	}
	fmt.Fprintf(b, "  # %s\n", catalogPath(s.Path))
	for _, n := range notes {
		fmt.Fprintf(b, "  # %s\n", oneLine(n))
	}
	if len(feeds) == 0 {
		b.WriteString("  # (no layer expressed: no jurisdiction written)\n")
		return nil
	}
	t.Jurisdictions++
	j := mapping("id", scalar(id))
	if name := coverageName(src.Coverage); name != "" {
		j.Content = append(j.Content, scalar("name"), scalar(name))
	}
	if schema := strings.ReplaceAll(id, "-", "_"); !validSchema(schema) {
		j.Content = append(j.Content, scalar("schema"), scalar("oa_"+schema))
	}
	j.Content = append(j.Content, scalar("feeds"), &yaml.Node{Kind: yaml.SequenceNode, Content: feeds})
	out, err := marshal(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{j}})
	if err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(strings.TrimRight(string(out), "\n"), "\n") {
		b.WriteString("  " + line)
	}
	b.WriteString("\n")
	return nil
}

// catalogPath is path from its "sources" folder on, as the catalog names
// its files.
func catalogPath(path string) string {
	p := filepath.ToSlash(path)
	if i := strings.LastIndex(p, "sources/"); i >= 0 {
		return p[i:]
	}
	return p
}

// otherLayers are the layer kinds of a source besides the four, sorted.
func otherLayers(m map[string][]layerItem) []string {
	var out []string
	for k := range m {
		if !slices.Contains(layerOrder, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func tallyKey(it layerItem) string {
	p, f := it.Protocol, "-"
	var c struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(it.Conform, &c)
	if c.Format != "" {
		f = c.Format
	}
	if it.Compression != "" {
		f += "+" + it.Compression
	}
	return p + " " + f
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var identPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// validSchema: a plain identifier that is not one of the schemas ingestd
// refuses (the config's names.go has the whole rule; a catalog id is
// never a reserved word).
func validSchema(s string) bool {
	return identPattern.MatchString(s) && len(s) <= 63 && !slices.Contains([]string{"public", "ingestd", "topology", "tiger", "tiger_data", "postgis"}, s) && !strings.HasPrefix(s, "pg_")
}

// coverageName names a source by its coverage: the census name and state
// when there is one, else the smallest area named.
func coverageName(c map[string]any) string {
	str := func(m map[string]any, k string) string {
		v, _ := m[k].(string)
		return v
	}
	if uc, ok := c["US Census"].(map[string]any); ok && str(uc, "name") != "" {
		if st := str(uc, "state"); st != "" {
			return str(uc, "name") + ", " + st
		}
		return str(uc, "name")
	}
	var parts []string
	for _, k := range []string{"city", "town", "village", "county", "district", "province", "region", "state"} {
		if v := str(c, k); v != "" {
			parts = append(parts, v)
		}
	}
	if v := str(c, "country"); v != "" {
		parts = append(parts, strings.ToUpper(v))
	}
	return strings.Join(parts, ", ")
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func marshal(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return nil, fmt.Errorf("openaddresses: writing the config: %v", err)
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("openaddresses: writing the config: %v", err)
	}
	return b.Bytes(), nil
}
