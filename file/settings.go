package file

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/shapefile"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: a downloadable file.
const Kind = "file"

// Settings are a file layer's own settings (source.Layer.Settings).
type Settings struct {
	// Format is one of FormatNames but "auto"; "" sniffs the file.
	Format string
	// Layer chooses among a file's layers (a zip of several Shapefiles, a
	// GeoPackage's tables).
	Layer string
	// X and Y, or WKT, name a CSV's geometry columns ("" finds them).
	X, Y, WKT string
	// CRS is the crs: setting as written; SRID its EPSG code (0: the
	// file's own CRS, 4326 where the format has none).
	CRS  string
	SRID int
	// Encoding overrides the file's text encoding (a Shapefile's .cpg or
	// language driver; a CSV's UTF-8).
	Encoding string
	// Separator is a CSV's field separator (0: a comma).
	Separator rune
	// HeaderLine is the line of a CSV's header (0: the first), the lines
	// before it skipped (a title above the header); NoHeader: there is
	// none, and the columns are named COLUMN1, COLUMN2, … as batch-machine
	// names them.
	HeaderLine int
	NoHeader   bool
}

// Identity lists every setting: they change what is read from the same
// file, so a 304 for the file must not stand for a layer read otherwise.
func (s Settings) Identity() []string {
	id := []string{s.Format, s.Layer, s.X, s.Y, s.WKT, strconv.Itoa(s.SRID), s.Encoding}
	if s.Separator != 0 {
		id = append(id, string(s.Separator))
	}
	if s.HeaderLine > 1 || s.NoHeader {
		id = append(id, "header_line="+strconv.Itoa(s.HeaderLine)+strconv.FormatBool(s.NoHeader))
	}
	return id
}

// settingsOf returns l's file settings (zero when it has none).
func settingsOf(l source.Layer) Settings {
	s, _ := l.Settings.(Settings)
	return s
}

// Spec is the file kind as the registry of kinds lists it: format, layer,
// x, y, wkt, crs, encoding, separator and header_line, and its fetcher.
func Spec() kindconf.Spec {
	return kindconf.Spec{Name: Kind, Keys: []string{"format", "layer", "x", "y", "wkt", "crs", "encoding", "separator", "header_line"}, Parse: parseFeed,
		NewFetcher: newFetcher, Schemes: []string{"ftp"}}
}

// newFetcher is the file kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies.
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return NewClient(d.HTTP, d.Breakers, d.Logger, WithUserAgent(d.UserAgent))
}

// parseFeed reads a file feed's settings. The file is read whole, so
// page_size is ignored with a warning (and the wfs kind's keys, like
// every other kind's, by the config).
func parseFeed(f *kindconf.Feed) source.Settings {
	var s Settings
	f.Ignore("page_size")
	f.PageSize = 0
	if f.URL != "" {
		if u, err := url.Parse(f.URL); err == nil && u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ftp" {
			f.Errorf(f.At("url"), f.Field("url"), "a file feed's url is an http, https or ftp URL")
			f.URL = ""
		} else if err == nil && u.Scheme == "ftp" {
			checkFTP(f, u)
		}
	}
	str := func(key string) (string, bool) {
		v, present := f.Str(f.Map, key, f.Path)
		if !present || !v.OK {
			return "", false
		}
		if strings.TrimSpace(v.Val) == "" {
			f.Errorf(v.Node, f.Field(key), "empty: leave it out")
			return "", false
		}
		return strings.TrimSpace(v.Val), true
	}
	if v, ok := str("format"); ok {
		switch {
		case v == "auto":
		case !slices.Contains(FormatNames(), v):
			f.Errorf(f.At("format"), f.Field("format"), "unknown format %q: one of %s", v, strings.Join(FormatNames(), ", "))
		default:
			s.Format = v
		}
	}
	s.Layer, _ = str("layer")
	s.X, _ = str("x")
	s.Y, _ = str("y")
	s.WKT, _ = str("wkt")
	checkColumns(f, &s)
	if v, ok := str("crs"); ok {
		if crs, err := feature.ParseCRS(v); err != nil {
			f.Errorf(f.At("crs"), f.Field("crs"), "%v: give an EPSG code, e.g. EPSG:2264", err)
		} else {
			s.CRS, s.SRID = v, crs.SRID
		}
	}
	s.Separator = separator(f, s.Format)
	s.Encoding = textEncoding(f, s.Format, s.Separator)
	s.HeaderLine, s.NoHeader = headerLine(f, s.Format)
	return s
}

// textEncoding reads the encoding of a Shapefile's DBF or a CSV: a name
// package shapefile knows. The other formats say their own (GeoJSON,
// GeoPackage and FlatGeobuf text is UTF-8), so it is refused on them
// rather than ignored; and a CSV is cut into fields before its text is
// decoded, so its separator must not be a byte that can end a character
// of the encoding.
func textEncoding(f *kindconf.Feed, format string, sep rune) string {
	v, present := f.Str(f.Map, "encoding", f.Path)
	if !present || !v.OK {
		return ""
	}
	name := strings.TrimSpace(v.Val)
	e, err := shapefile.LookupEncoding(name)
	switch {
	case name == "":
		f.Errorf(v.Node, f.Field("encoding"), "empty: leave it out")
	case err != nil:
		f.Errorf(v.Node, f.Field("encoding"), "%v", err)
	case format != "" && format != FormatCSV && format != FormatShapefile:
		f.Errorf(v.Node, f.Field("encoding"), "only a Shapefile's DBF or a CSV has an encoding setting (format is %s, whose text is in its own encoding)", format)
	case sep != 0 && !e.Splits(sep):
		f.Errorf(v.Node, f.Field("encoding"), "separator %q can be the second byte of a %s character: a CSV in %s needs another separator", string(sep), e.Name, e.Name)
	default:
		return name
	}
	return ""
}

// headerLine reads a CSV's header_line: a line number from 1, or none.
func headerLine(f *kindconf.Feed, format string) (int, bool) {
	v, present := f.Str(f.Map, "header_line", f.Path)
	if !present || !v.OK {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.Val))
	switch {
	case strings.TrimSpace(v.Val) == "none":
	case err != nil || n < 1:
		f.Errorf(f.At("header_line"), f.Field("header_line"), "the line of the CSV's header, from 1, or none; not %q", v.Raw)
		return 0, false
	}
	if format != "" && format != FormatCSV {
		f.Errorf(f.At("header_line"), f.Field("header_line"), "only a CSV has a header line (format is %s)", format)
		return 0, false
	}
	if err != nil {
		return 0, true
	}
	return n, false
}

// separator reads a CSV's separator: one character, not a quote or a line
// break; "tab" or "\t" for a tab.
func separator(f *kindconf.Feed, format string) rune {
	v, present := f.Str(f.Map, "separator", f.Path)
	if !present || !v.OK {
		return 0
	}
	s := v.Val
	if s == "tab" || s == `\t` {
		s = "\t"
	}
	r := []rune(s)
	switch {
	case len(r) != 1 || r[0] == '"' || r[0] == '\r' || r[0] == '\n' || r[0] == utf8.RuneError:
		f.Errorf(f.At("separator"), f.Field("separator"), "a CSV's separator is one character (\";\", \"|\", tab), not %q", v.Raw)
		return 0
	case format != "" && format != FormatCSV:
		f.Errorf(f.At("separator"), f.Field("separator"), "only a CSV has a separator (format is %s)", format)
		return 0
	}
	return r[0]
}

// checkColumns: x and y go together, and not with wkt; all are a CSV's.
func checkColumns(f *kindconf.Feed, s *Settings) {
	switch {
	case (s.X == "") != (s.Y == ""):
		key := "y"
		if s.X == "" {
			key = "x"
		}
		f.Errorf(f.Map.Node, f.Field(key), "required with %s: a CSV's points need both columns", map[string]string{"x": "y", "y": "x"}[key])
	case s.X != "" && s.WKT != "":
		f.Errorf(f.At("wkt"), f.Field("wkt"), "either x: and y: or wkt:, not both")
	}
	if (s.X != "" || s.WKT != "") && s.Format != "" && s.Format != FormatCSV {
		key := "x"
		if s.WKT != "" {
			key = "wkt"
		}
		f.Errorf(f.At(key), f.Field(key), "only a CSV has geometry columns (format is %s)", s.Format)
	}
}
