package oaimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/shapefile"
)

// arcgisLayerPath is what kind arcgis takes as a layer URL.
var arcgisLayerPath = regexp.MustCompile(`/(FeatureServer|MapServer)/\d+/?$`)

// fileFormats maps the catalog's conform.format to kind file's format:
// "" sniffs. A format absent here is not expressed.
var fileFormats = map[string]string{
	"":                  "",
	"shapefile":         "shapefile",
	"shapefile-polygon": "shapefile",
	"csv":               "csv",
	"geojson":           "geojson",
	"gdb":               "filegdb",
	"gpkg":              "gpkg",
	"xml":               "gml",
}

// readOptions are the catalog's reading options of a file, as its conform
// holds them.
type readOptions struct {
	Format    string `json:"format"`
	File      string `json:"file"`
	Layer     string `json:"layer"`
	SRS       string `json:"srs"`
	Lat       string `json:"lat"`
	Lon       string `json:"lon"`
	Encoding  string `json:"encoding"`
	CSVSplit  string `json:"csvsplit"`
	Headers   *int   `json:"headers"`
	SkipLines *int   `json:"skiplines"`
}

// feedFor makes the feed of one layer entry, or says why it cannot
// (reason); notes are comments to write beside the jurisdiction.
func feedFor(t *Tally, jid, layer string, it layerItem, names map[string]bool) (*yaml.Node, []string, string) {
	if it.Skip {
		note := ""
		if s, ok := it.Note.(string); ok && s != "" {
			note = " (" + s + ")"
		}
		return nil, []string{fmt.Sprintf("%s/%s: skip: true in the catalog%s", layer, it.Name, note)}, ReasonSkip
	}
	if _, ok := conform.LayerColumns(layer); !ok {
		return nil, nil, fmt.Sprintf("layer %s is not a common layer", layer)
	}
	if len(it.Conform) == 0 {
		return nil, nil, "no conform"
	}
	var notes []string
	if raw, twice := lastKeyWins(it.Conform); len(twice) > 0 {
		it.Conform = raw
		notes = append(notes, fmt.Sprintf("%s/%s: conform key %s given twice: the last kept, as batch-machine (Python's json) reads it", layer, it.Name, strings.Join(twice, ", ")))
	}
	spec, err := conform.ParseOpenAddresses(it.Conform, layer)
	var c *conform.Conform
	if err == nil {
		c, err = conform.Compile(spec)
	}
	if err != nil {
		return nil, nil, "conform does not compile: " + strings.TrimPrefix(err.Error(), "conform: ")
	}
	var opt readOptions
	_ = json.Unmarshal(it.Conform, &opt) // options of another type are left to the reader's checks below

	id := feedID(layer, it.Name, names)
	f := mapping("id", scalar(id))
	switch it.Protocol {
	case "ESRI":
		u, err := url.Parse(it.Data)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, "bad url"
		}
		if !arcgisLayerPath.MatchString(u.Path) {
			return nil, nil, "ESRI url is not a layer's (…/FeatureServer/N or …/MapServer/N)"
		}
		f.Content = append(f.Content, scalar("kind"), scalar("arcgis"), scalar("url"), scalar(it.Data))
	case "http", "ftp":
		settings, note, reason := fileSettings(it, opt)
		if reason != "" {
			return nil, nil, reason
		}
		if note != "" {
			notes = append(notes, fmt.Sprintf("%s/%s: %s", layer, it.Name, note))
		}
		f.Content = append(f.Content, scalar("kind"), scalar("file"), scalar("url"), scalar(it.Data))
		f.Content = append(f.Content, settings...)
	default:
		return nil, nil, fmt.Sprintf("protocol %s", it.Protocol)
	}
	names[id] = true
	if it.Request != nil && len(it.Request.Headers) > 0 {
		h := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range sortedKeys(it.Request.Headers) {
			h.Content = append(h.Content, scalar(k), scalar(it.Request.Headers[k]))
		}
		f.Content = append(f.Content, scalar("headers"), h)
	}
	f.Content = append(f.Content, scalar("schedule"), scalar(weekly(jid+"/"+id)))

	cn := mapping("layer", scalar(layer))
	for _, a := range spec.Attributes {
		cn.Content = append(cn.Content, scalar(a.Column), valueNode(a.Value))
	}
	f.Content = append(f.Content, scalar("conform"), cn)

	if it.Test != nil && len(it.Test.Tests) > 0 {
		if it.Test.Enabled != nil && !*it.Test.Enabled {
			notes = append(notes, fmt.Sprintf("%s/%s: %d acceptance tests disabled in the catalog (test.enabled: false): left out", layer, it.Name, len(it.Test.Tests)))
			t.LeftOut += len(it.Test.Tests)
		} else {
			tn := &yaml.Node{Kind: yaml.SequenceNode}
			for i, tc := range it.Test.Tests {
				if why := referenceFails(c, tc); why != "" {
					notes = append(notes, fmt.Sprintf("%s/%s: acceptance test %d %q left out: %s, which the reference implementation fails too", layer, it.Name, i+1, tc.Description, why))
					t.LeftOut++
					continue
				}
				t.Tests++
				tn.Content = append(tn.Content, testNode(tc))
			}
			if len(tn.Content) > 0 {
				f.Content = append(f.Content, scalar("tests"), tn)
			}
		}
	}
	return f, notes, ""
}

// hasExt reports whether name ends with one of exts, case aside.
func hasExt(name string, exts ...string) bool {
	e := strings.ToLower(path.Ext(name))
	return slices.Contains(exts, e)
}

// lastKeyWins returns a conform object whose keys are each given once,
// the last value of a key given twice kept (Python's json, which
// batch-machine reads the catalog with, keeps it silently), and the keys
// given twice; raw itself when there are none, or it is no object.
func lastKeyWins(raw json.RawMessage) (json.RawMessage, []string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return raw, nil
	}
	var keys, twice []string
	vals := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return raw, nil
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw, nil
		}
		if _, seen := vals[k]; seen {
			twice = append(twice, k)
		} else {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	if len(twice) == 0 {
		return raw, nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), twice
}

// fileSettings are the kind-file settings of a download entry and a note
// on what was left out, or why it cannot be expressed.
func fileSettings(it layerItem, o readOptions) (settings []*yaml.Node, note, reason string) {
	format, reason := downloadFormat(it, o)
	if reason != "" {
		return nil, "", reason
	}
	header, reason := headerLine(o)
	if reason != "" {
		return nil, "", reason
	}
	if utf8.RuneCountInString(o.CSVSplit) > 1 || o.CSVSplit == `"` {
		return nil, "", fmt.Sprintf("csvsplit: %q", o.CSVSplit)
	}
	var out []*yaml.Node
	add := func(k, v string) {
		if v != "" {
			out = append(out, scalar(k), scalar(v))
		}
	}
	add("format", format)
	switch {
	case o.Layer != "":
		add("layer", o.Layer)
	case o.File != "" && strings.EqualFold(path.Ext(o.File), ".shp"):
		b := path.Base(o.File)
		add("layer", strings.TrimSuffix(b, path.Ext(b)))
	case o.File != "":
		add("layer", o.File)
	}
	switch {
	case format != "" && format != "csv":
		// batch-machine reads the geometry of a Shapefile, GeoPackage,
		// File Geodatabase or GeoJSON file, whatever lat and lon say.
	case (o.Lat != "") != (o.Lon != ""):
		return nil, "", "lat without lon"
	case o.Lat != "":
		add("x", o.Lon)
		add("y", o.Lat)
	}
	if o.CSVSplit != "" && o.CSVSplit != "," {
		add("separator", o.CSVSplit)
	}
	add("header_line", header)
	if o.SRS != "" {
		if _, err := feature.ParseCRS(o.SRS); err != nil {
			return nil, "", "srs " + o.SRS
		}
		add("crs", o.SRS)
	}
	encoding, note, reason := encodingSetting(o, format)
	if reason != "" {
		return nil, "", reason
	}
	add("encoding", encoding)
	return out, note, ""
}

// downloadFormat is the kind-file format of a download entry, or why its
// URL, compression or format cannot be expressed.
func downloadFormat(it layerItem, o readOptions) (format, reason string) {
	u, err := url.Parse(it.Data)
	switch {
	case err != nil || u.Host == "":
		return "", "bad url"
	case u.Scheme == "ftp" && (u.Path == "" || strings.HasSuffix(u.Path, "/")):
		return "", "ftp:// url of a folder"
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ftp":
		return "", "url scheme " + u.Scheme
	}
	switch it.Compression {
	case "", "zip", "gzip":
	default:
		return "", "compression: " + it.Compression
	}
	format, ok := fileFormats[o.Format]
	if !ok {
		return "", "format " + o.Format
	}
	if format == "gml" && hasExt(o.File, ".kml", ".kmz") {
		// batch-machine reads format xml with OGR, which reads KML too.
		return "", "format xml of a KML file"
	}
	return format, ""
}

// headerLine is the header_line setting of a CSV entry ("" the first
// line), or why its headers and skiplines cannot be expressed.
// batch-machine reads headers: -1 as no header line, and headers: N only
// with skiplines: N, as the header on line N.
func headerLine(o readOptions) (header, reason string) {
	switch {
	case o.Headers == nil && o.SkipLines != nil:
		return "", fmt.Sprintf("skiplines: %d without headers", *o.SkipLines)
	case o.Headers == nil:
		return "", ""
	case *o.Headers == -1 && o.SkipLines == nil:
		return "none", ""
	case *o.Headers >= 1 && o.SkipLines != nil && *o.SkipLines == *o.Headers:
		if *o.Headers > 1 {
			return strconv.Itoa(*o.Headers), ""
		}
		return "", ""
	default:
		return "", fmt.Sprintf("headers: %d", *o.Headers)
	}
}

// encodingSetting is the encoding setting of an entry of format ("" none),
// a note when its encoding is left out, or why it cannot be expressed.
func encodingSetting(o readOptions, format string) (encoding, note, reason string) {
	switch enc := strings.ToLower(strings.ReplaceAll(o.Encoding, "_", "-")); {
	case enc == "":
	case enc == "utf-8-sig":
		// Python's name for UTF-8 after a byte-order mark, which the CSV
		// reader skips anyway.
	case format != "" && format != "csv" && format != "shapefile":
		// batch-machine reads a GeoJSON file as UTF-8 whatever encoding
		// says, and the other formats say their own.
		if enc != "utf-8" && enc != "utf8" {
			note = fmt.Sprintf("encoding %s left out: batch-machine reads a %s file's text as UTF-8, as ingestd does", o.Encoding, format)
		}
	default:
		e, err := shapefile.LookupEncoding(o.Encoding)
		if err != nil {
			return "", "", "encoding " + o.Encoding
		}
		if sep := []rune(o.CSVSplit); len(sep) == 1 && !e.Splits(sep[0]) {
			return "", "", fmt.Sprintf("csvsplit %q in %s", o.CSVSplit, o.Encoding)
		}
		return o.Encoding, "", ""
	}
	return "", note, ""
}

// referenceFails says why batch-machine fails an acceptance test it is
// known to fail: the inputs lack a field the conform names, or name it in
// another case. A test that fails otherwise is carried over, for validate
// to report.
func referenceFails(c *conform.Conform, tc conform.Test) string {
	if len(conform.RunTests(c, []conform.Test{tc})) == 0 {
		return ""
	}
	for _, field := range c.Fields() {
		if _, ok := tc.Inputs[field]; ok {
			continue
		}
		for k := range tc.Inputs {
			if strings.EqualFold(k, field) {
				return fmt.Sprintf("its inputs name field %s as %s", field, k)
			}
		}
		return fmt.Sprintf("its inputs lack field %s, which the conform names", field)
	}
	return ""
}

// feedID is the feed's id: the layer and the entry's name, unique in the
// jurisdiction.
func feedID(layer, name string, names map[string]bool) string {
	base := layer
	if n := strings.Trim(notID.ReplaceAllString(strings.ToLower(name), "-"), "-_"); n != "" {
		base += "-" + n
	}
	base = shorten(base, 60)
	id := base
	for i := 2; names[id]; i++ {
		id = base + "-" + strconv.Itoa(i)
	}
	return id
}

// weekly is a weekly cron schedule whose minute, hour and weekday come
// from a hash of key, so that a catalog's feeds spread over the week and
// keep their slot from one import to the next.
func weekly(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	v := h.Sum32()
	return fmt.Sprintf("%d %d * * %d", v%60, (v/60)%24, (v/(60*24))%7)
}

// testNode writes an acceptance test.
func testNode(tc conform.Test) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if tc.Description != "" {
		n.Content = append(n.Content, scalar("description"), scalar(tc.Description))
	}
	in := make(map[string]any, len(tc.Inputs))
	for k, v := range tc.Inputs {
		in[k] = v
	}
	exp := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range sortedKeys(tc.Expected) {
		exp.Content = append(exp.Content, scalar(k), scalar(tc.Expected[k]))
	}
	n.Content = append(n.Content, scalar("inputs"), valueNode(in), scalar("expected"), exp)
	return n
}

// valueNode writes a decoded JSON value with its type kept: a number as
// written in the catalog (12 and 12.0 differ to batch-machine, which
// prints them as Python does), a string always quoted as a string.
func valueNode(v any) *yaml.Node {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case string:
		return scalar(x)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: string(x)}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: string(x)}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, e := range x {
			n.Content = append(n.Content, valueNode(e))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range sortedKeys(x) {
			n.Content = append(n.Content, scalar(k), valueNode(x[k]))
		}
		if len(x) <= 4 && !nested(x) {
			n.Style = yaml.FlowStyle
		}
		return n
	}
	return scalar(fmt.Sprint(v))
}

// nested reports whether a map holds a list or map (then written in block
// style, for readability).
func nested(m map[string]any) bool {
	for _, v := range m {
		switch v.(type) {
		case []any, map[string]any:
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
