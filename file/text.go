package file

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkt"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/encoding/gml"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/shapefile"
)

// fileReader is the common part of the single-layer text formats.
type fileReader struct {
	f    *os.File
	name string
	srid int
}

func (r *fileReader) Declared() *schema.Declared { return nil }
func (r *fileReader) SRID() int                  { return r.srid }
func (r *fileReader) Layers() []string           { return []string{r.name} }
func (r *fileReader) Close() error               { return r.f.Close() }

// geojsonFile reads a GeoJSON file with package geojson's streaming reader,
// as kind geojson reads a document from the network.
type geojsonFile struct {
	fileReader
	*geojson.Reader
}

// SRID is the feed's crs:, else 4326; the reader gives each geometry the
// SRID of a legacy crs member that comes before the features.
func (g *geojsonFile) SRID() int { return g.fileReader.SRID() }

func openGeoJSON(p string, o OpenOptions) (FileReader, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	srid := o.SRID
	if srid == 0 {
		srid = 4326 // RFC 7946; a legacy crs member before the features says otherwise
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if b, _ := br.Peek(3); string(b) == "\xef\xbb\xbf" {
		br.Discard(3)
	}
	dec := geojson.NewReader(br, feature.WithIDProperty(o.IDProperty), feature.WithSRID(srid), feature.WithLimits(o.Limits))
	return &geojsonFile{fileReader: fileReader{f: f, name: layerName(o.Name), srid: srid}, Reader: dec}, nil
}

// gmlFile reads a GML file (an OGR or WFS FeatureCollection) with package
// gml's streaming reader, as kind wfs reads a GetFeature response.
type gmlFile struct {
	fileReader
	*gml.Reader
}

// SRID is the feed's crs:, else 4326; geometries carry their srsName's.
func (g *gmlFile) SRID() int { return g.fileReader.SRID() }

func openGML(p string, o OpenOptions) (FileReader, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	srid := o.SRID
	if srid == 0 {
		srid = 4326 // as GDAL's GML driver reads coordinates without a srsName
	}
	dec := gml.NewReader(bufio.NewReaderSize(f, 64<<10), feature.WithIDProperty(o.IDProperty), feature.WithSRID(srid), feature.WithLimits(o.Limits))
	return &gmlFile{fileReader: fileReader{f: f, name: layerName(o.Name), srid: srid}, Reader: dec}, nil
}

// layerName is a file's layer name: its name without folder or extension.
func layerName(name string) string {
	b := name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(b, '.'); i > 0 {
		b = b[:i]
	}
	return b
}

// csvFile reads a CSV file with a header line: points from x/y columns or
// geometries from a WKT column, the other columns as properties: a cell
// that reads as a JSON number is one, an empty cell is null, any other a
// string (the store infers the columns' types from the values).
type csvFile struct {
	fileReader
	r       *csv.Reader
	cr      *countingReader
	header  []string
	x, y, w int // column indexes; -1 when unused
	id      int
	enc     shapefile.Encoding
	limits  feature.Limits
	line    int // the line the current record starts on
	// skipped is the number of lines before the header (header_line: N
	// skips N-1), added to encoding/csv's line numbers.
	skipped int
	// pending is the first record of a file without a header line
	// (header_line: none), read to count its columns, not yet handed on.
	pending []string
	feat    feature.Feature
	prop    []byte
	err     error
}

// wktNames and xyNames are the geometry columns found without x:/y:/wkt:,
// as GDAL's CSV driver finds a WKT column.
var (
	wktNames = []string{"wkt", "geometry", "the_geom", "geom"}
	xyNames  = [][2]string{{"x", "y"}, {"lon", "lat"}, {"longitude", "latitude"}, {"lng", "lat"}}
)

func openCSV(p string, o OpenOptions) (FileReader, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	r, err := newCSV(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func newCSV(f *os.File, o OpenOptions) (*csvFile, error) {
	c := &csvFile{fileReader: fileReader{f: f, name: layerName(o.Name), srid: o.SRID}, x: -1, y: -1, w: -1, id: -1, limits: o.Limits.WithDefaults(), enc: shapefile.UTF8}
	if c.srid == 0 {
		c.srid = 4326
	}
	if o.Encoding != "" {
		e, err := shapefile.LookupEncoding(o.Encoding)
		if err != nil {
			return nil, err
		}
		c.enc = e
	}
	sep := ','
	if o.Separator != 0 {
		sep = o.Separator
	}
	if err := checkRecordSizes(f, c.limits.FeatureBytes, sep); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if b, _ := br.Peek(3); string(b) == "\xef\xbb\xbf" {
		br.Discard(3)
	}
	for ; c.skipped < o.HeaderLine-1; c.skipped++ {
		if err := skipLine(br); err != nil {
			return nil, fmt.Errorf("header_line %d: the file ends on line %d", o.HeaderLine, c.skipped+1)
		}
	}
	c.cr = &countingReader{r: br, limit: c.limits.FeatureBytes}
	c.r = csv.NewReader(c.cr)
	c.r.ReuseRecord = true
	c.r.Comma = sep
	hdr, err := c.r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("header line: %w", c.csvError(pe, 0, 0))
		}
		return nil, fmt.Errorf("header line: %w", err)
	}
	if o.NoHeader {
		// Named as batch-machine names them (headers: -1).
		c.pending = slices.Clone(hdr)
		for i := range hdr {
			c.header = append(c.header, fmt.Sprintf("COLUMN%d", i+1))
		}
	} else {
		for _, h := range hdr {
			s, _ := c.enc.Decode([]byte(h))
			c.header = append(c.header, strings.TrimSpace(s))
		}
	}
	// Two columns of one name are both kept (as GDAL writes them).
	c.header = feature.UniqueNames(c.header)
	if len(c.header) > c.limits.Properties {
		return nil, &feature.LimitError{Name: "properties", Max: int64(c.limits.Properties), Where: fmt.Sprintf("a header of %d columns", len(c.header))}
	}
	if err := c.geometryColumns(o); err != nil {
		return nil, err
	}
	c.id = c.column(o.IDProperty)
	c.cr.mark()
	return c, nil
}

// column is the index of the column called name (case aside), -1 if none.
func (c *csvFile) column(name string) int {
	if name == "" {
		return -1
	}
	return slices.IndexFunc(c.header, func(h string) bool { return strings.EqualFold(h, name) })
}

// geometryColumns finds the geometry's columns: the feed's x:/y: or wkt:,
// else a column named as GDAL's CSV driver finds one (WKT) or a x/y,
// lon/lat pair.
func (c *csvFile) geometryColumns(o OpenOptions) error {
	need := func(key, name string) (int, error) {
		i := c.column(name)
		if i < 0 {
			return -1, fmt.Errorf("%s: no column %q in the header (%s)", key, name, strings.Join(c.header, ", "))
		}
		return i, nil
	}
	var err error
	switch {
	case o.WKT != "":
		c.w, err = need("wkt", o.WKT)
		return err
	case o.X != "":
		if c.x, err = need("x", o.X); err != nil {
			return err
		}
		c.y, err = need("y", o.Y)
		return err
	}
	for _, n := range wktNames {
		if c.w = c.column(n); c.w >= 0 {
			return nil
		}
	}
	for _, p := range xyNames {
		if c.x, c.y = c.column(p[0]), c.column(p[1]); c.x >= 0 && c.y >= 0 {
			return nil
		}
	}
	c.x, c.y = -1, -1
	return fmt.Errorf("no geometry column: set x: and y:, or wkt: (the header is %s)", strings.Join(c.header, ", "))
}

func (c *csvFile) Next() (*feature.Feature, error) { return feature.StickyNext(&c.err, c.next) }

func (c *csvFile) next() (*feature.Feature, error) {
	if c.pending != nil {
		rec := c.pending
		c.pending = nil
		c.line = 1 + c.skipped
		return c.feature(rec)
	}
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, io.EOF
	}
	var le *feature.LimitError
	if errors.As(err, &le) {
		return nil, err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, c.csvError(pe, len(rec), len(c.header))
	}
	if err != nil {
		return nil, err
	}
	// The line the record starts on: a quoted field may span lines.
	c.line, _ = c.r.FieldPos(0)
	c.line += c.skipped
	c.cr.mark()
	return c.feature(rec)
}

// feature makes the feature of the record rec, which starts on c.line.
func (c *csvFile) feature(rec []string) (*feature.Feature, error) {
	var err error
	c.feat = feature.Feature{}
	if c.feat.Geometry, err = c.geometry(rec); err != nil {
		return nil, fmt.Errorf("line %d, %w", c.line, err)
	}
	// A fresh buffer per feature: the poll's stager keeps features of a
	// batch past the next call.
	p := make([]byte, 0, cap(c.prop))
	p = append(p, '{')
	first := true
	for i, v := range rec {
		if i == c.x || i == c.y || i == c.w {
			continue
		}
		if int64(len(v)) > c.limits.ValueBytes {
			return nil, &feature.LimitError{Name: "value_bytes", Max: c.limits.ValueBytes, Where: fmt.Sprintf("line %d, column %s", c.line, c.header[i])}
		}
		if !first {
			p = append(p, ',')
		}
		first = false
		p = appendJSONString(p, c.header[i])
		p = append(p, ':')
		s, repaired := c.enc.Decode([]byte(v))
		if repaired {
			c.feat.Repairs |= feature.RepairedUTF8
		}
		p = appendCell(p, s)
		if i == c.id {
			c.feat.ID = s
		}
	}
	c.prop = append(p, '}')
	c.feat.Properties = c.prop
	if why := feature.RefuseID(c.feat.ID, c.limits.IDBytes); why != "" {
		return &feature.Feature{Refused: why}, nil
	}
	return &c.feat, nil
}

// geometry is a record's geometry: a point from x/y, or the WKT (nil for
// empty cells).
func (c *csvFile) geometry(rec []string) (geom.T, error) {
	if c.w >= 0 {
		s := strings.TrimSpace(rec[c.w])
		if s == "" {
			return nil, nil
		}
		if i := strings.IndexByte(s, ';'); i > 0 && strings.HasPrefix(strings.ToUpper(s), "SRID=") {
			s = s[i+1:] // EWKT: the feed's crs: rules
		}
		g, err := wkt.Unmarshal(s)
		if err != nil {
			return nil, fmt.Errorf("column %s: not a WKT geometry (%s): %s", c.header[c.w], wktProblem(err), feature.Snippet(s))
		}
		return withSRID(g, c.srid), nil
	}
	xs, ys := strings.TrimSpace(rec[c.x]), strings.TrimSpace(rec[c.y])
	if xs == "" && ys == "" {
		return nil, nil
	}
	x, errX := strconv.ParseFloat(xs, 64)
	y, errY := strconv.ParseFloat(ys, 64)
	if errX != nil || errY != nil || math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y) {
		return nil, fmt.Errorf("columns %s, %s: %q, %q is not a point", c.header[c.x], c.header[c.y], feature.Snippet(xs), feature.Snippet(ys))
	}
	return geom.NewPointFlat(geom.XY, []float64{x, y}).SetSRID(c.srid), nil
}

// csvError says what a CSV record's parse error means, in ingestd's
// words and by the lines it spans (encoding/csv's own message names the
// record's line after the line of the fault, which reads as two records).
// fields and want are the record's number of fields and the header's,
// for a record of the wrong width.
func csvError(pe *csv.ParseError, fields, want int) error {
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return fmt.Errorf("line %d: %d fields where the header has %d", pe.StartLine, fields, want)
	case errors.Is(pe.Err, csv.ErrQuote) && pe.Line != pe.StartLine:
		return fmt.Errorf("the record starting on line %d: its quoted field runs on to line %d, column %d, where a quote is neither doubled nor closes the field",
			pe.StartLine, pe.Line, pe.Column)
	case errors.Is(pe.Err, csv.ErrQuote):
		return fmt.Errorf("line %d, column %d: a quote inside a quoted field is neither doubled nor closes the field", pe.Line, pe.Column)
	case errors.Is(pe.Err, csv.ErrBareQuote):
		return fmt.Errorf("line %d, column %d: a quote inside a field that is not quoted", pe.Line, pe.Column)
	}
	return fmt.Errorf("the record starting on line %d: unreadable at line %d, column %d", pe.StartLine, pe.Line, pe.Column)
}

// csvError is csvError with the lines counted from the file's first,
// before the header_line's skipped lines.
func (c *csvFile) csvError(pe *csv.ParseError, fields, want int) error {
	shifted := *pe
	shifted.StartLine += c.skipped
	shifted.Line += c.skipped
	return csvError(&shifted, fields, want)
}

// skipLine reads br past its next line break (or to its end: io.EOF when
// there was nothing left).
func skipLine(br *bufio.Reader) error {
	for {
		b, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(b) > 0:
			return nil
		}
		return err
	}
}

// wktProblem is the first line of go-geom's WKT syntax error, what it
// found wrong and where: its message goes on over lines with a caret and
// a hint, as a terminal shows them.
func wktProblem(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "wkt: "), "syntax error: ")
	if i := strings.LastIndex(msg, " at line "); i > 0 {
		if _, pos, ok := strings.Cut(msg[i:], ", pos "); ok {
			return msg[:i] + ", at character " + pos
		}
		return msg[:i]
	}
	return msg
}

// withSRID gives g its SRID.
func withSRID(g geom.T, srid int) geom.T {
	switch g := g.(type) {
	case *geom.Point:
		return g.SetSRID(srid)
	case *geom.MultiPoint:
		return g.SetSRID(srid)
	case *geom.LineString:
		return g.SetSRID(srid)
	case *geom.MultiLineString:
		return g.SetSRID(srid)
	case *geom.Polygon:
		return g.SetSRID(srid)
	case *geom.MultiPolygon:
		return g.SetSRID(srid)
	case *geom.GeometryCollection:
		return g.SetSRID(srid)
	}
	return g
}

// appendCell appends a CSV cell as JSON: null when empty, a number when
// it is one as JSON writes it (so "007" and "1e5x" stay strings), else a
// string.
func appendCell(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	if k := schema.StringKind(s); (k == schema.KStrInt || k == schema.KStrNum) && isJSONNumber(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
			return append(dst, s...)
		}
	}
	return appendJSONString(dst, s)
}

// isJSONNumber reports whether s is a number as JSON spells one.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	n := digits()
	if n == 0 || (n > 1 && s[start] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendJSONString appends s (valid UTF-8) as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// States of checkRecordSizes' scan, as encoding/csv reads a record (RFC
// 4180, its defaults: comma, no lazy quotes): a quote opens a quoted field
// only as a field's first byte, and inside one a doubled quote is a quote.
const (
	csvFieldStart = iota
	csvUnquoted
	csvQuoted
	csvQuoteSeen // a quote inside a quoted field: its end, or half of ""
)

// checkRecordSizes reads the CSV file f once before encoding/csv does,
// with a buffer of its own, and fails at the first record longer than
// limit bytes; f is left at its start. encoding/csv holds a record whole
// and copies it twice as it splits the fields, in buffers that double as
// they grow, so a record it meets past the bound has already cost several
// times the bound (countingReader only stops it reading on); this scan
// holds 64 KiB whatever the record (TestCSVLongLinePeakRSS). A file's
// bytes are on disk, so a second sequential read is cheap next to the
// store's work.
//
// sep is the field separator; a separator beyond ASCII is never seen as
// one, which only keeps a quote after it from opening a quoted field here.
func checkRecordSizes(f *os.File, limit int64, sep rune) error {
	buf := make([]byte, 64<<10)
	state, size, line, start := csvFieldStart, int64(0), 1, 1
	for {
		n, err := f.Read(buf)
		for _, b := range buf[:n] {
			size++
			if size > limit {
				return &feature.LimitError{Name: "feature_bytes", Max: limit, Where: fmt.Sprintf("the CSV record starting on line %d", start)}
			}
			if b == '\n' {
				line++
			}
			switch {
			case state == csvQuoted:
				if b == '"' {
					state = csvQuoteSeen
				}
			case state == csvQuoteSeen && b == '"':
				state = csvQuoted
			case b == '\n':
				state, size, start = csvFieldStart, 0, line
			case rune(b) == sep:
				state = csvFieldStart
			case state == csvFieldStart && b == '"':
				state = csvQuoted
			default:
				state = csvUnquoted
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the file: %w", redactPath(err))
		}
	}
	_, err := f.Seek(0, io.SeekStart)
	if err != nil {
		return fmt.Errorf("reading the file: %w", redactPath(err))
	}
	return nil
}

// countingReader bounds the bytes of one CSV record: encoding/csv holds a
// whole record in memory, so a line without end must fail at
// limits.feature_bytes rather than take the process's memory.
type countingReader struct {
	r     io.Reader
	n, at int64
	limit int64
}

// mark records where the current record ends.
func (c *countingReader) mark() { c.at = c.n }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n-c.at > c.limit+int64(len(p)) {
		return 0, &feature.LimitError{Name: "feature_bytes", Max: c.limit, Where: "a CSV record"}
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
