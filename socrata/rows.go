package socrata

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/geojson"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
)

// idField is the system field that identifies a row.
const idField = ":id"

// rowSlack is what the JSON decoder may have read ahead of a row's start
// besides the row itself (its buffer), under the feature_bytes bound.
const rowSlack = 64 << 10

// window is the page body as the JSON decoder reads it, failing with a
// *feature.LimitError once it has read more than max bytes past mark:
// one row (a JSON object) is bounded by limits.feature_bytes while it
// streams, not after encoding/json has buffered all of it.
type window struct {
	r    io.Reader
	read int64
	mark int64
	max  int64
	row  int
}

func (w *window) Read(p []byte) (int, error) {
	if w.read-w.mark > w.max {
		return 0, &feature.LimitError{Name: "feature_bytes", Max: w.max - rowSlack, Where: feature.Where(w.row)}
	}
	n, err := w.r.Read(p)
	w.read += int64(n)
	return n, err
}

// rowReader is the FeatureReader of one page (.json: an array of row
// objects). It makes each row a feature: :id its ID, the geometry
// column's GeoJSON value its geometry, every other member its properties.
// Its errors are *httpcall.BodyError, so that Fetch tells them from the
// handler's own through the handler's wrapping.
type rowReader struct {
	dec     *json.Decoder
	win     *window
	limits  feature.Limits
	geomCol string
	url     string
	attempt *httpcall.Attempt

	started bool
	done    bool // the array and the body ended
	n       int
	err     error
	f       feature.Feature
	// ids are the page's ids in order, for the fetch's checks.
	ids []string
	// updated is the largest :updated_at of the page (text, ISO-8601).
	updated string
}

func newRowReader(br *bufio.Reader, a *httpcall.Attempt, limits feature.Limits, geomCol string) *rowReader {
	w := &window{r: br, max: limits.FeatureBytes + rowSlack}
	dec := json.NewDecoder(w)
	return &rowReader{dec: dec, win: w, limits: limits, geomCol: geomCol, url: a.Redacted, attempt: a}
}

// BodyBytes returns the body bytes (decompressed) read so far, so that a
// PageFunc can bound a poll's bytes as they arrive.
func (r *rowReader) BodyBytes() int64 { return r.attempt.BodyBytes() }

// Next returns the page's next row as a feature, io.EOF after the last.
func (r *rowReader) Next() (*feature.Feature, error) {
	f, err := feature.StickyNext(&r.err, r.next)
	if err != nil && err != io.EOF {
		var be *httpcall.BodyError
		if !errors.As(err, &be) {
			err = &httpcall.BodyError{URL: r.url, Err: err}
			r.err = err
		}
	}
	return f, err
}

func (r *rowReader) next() (*feature.Feature, error) {
	if r.done {
		return nil, io.EOF
	}
	if !r.started {
		r.started = true
		if err := r.delim('['); err != nil {
			return nil, err
		}
	}
	if !r.dec.More() {
		if err := r.delim(']'); err != nil {
			return nil, err
		}
		if _, err := r.dec.Token(); err != io.EOF {
			return nil, r.malformed(-1, "data after the array of rows", err)
		}
		r.done = true
		return nil, io.EOF
	}
	r.win.mark, r.win.row = r.dec.InputOffset(), r.n
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return nil, r.decodeErr(r.n, err)
	}
	if err := r.row(raw); err != nil {
		return nil, err
	}
	r.n++
	return &r.f, nil
}

// delim reads the delimiter want.
func (r *rowReader) delim(want json.Delim) error {
	tok, err := r.dec.Token()
	if err != nil {
		return r.decodeErr(-1, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return r.malformed(-1, fmt.Sprintf("want %q, found %v: a page is an array of rows", want, tok), nil)
	}
	return nil
}

// decodeErr is err from the decoder: a body cut short or a read error as
// is (the origin's), a limit as is, a syntax error as the feed's
// *feature.DecodeError.
func (r *rowReader) decodeErr(index int, err error) error {
	var le *feature.LimitError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &le), err == io.ErrUnexpectedEOF, r.attempt.BodyErr() != nil:
		return err
	case err == io.EOF:
		return io.ErrUnexpectedEOF
	case errors.As(err, &se), errors.As(err, &te):
		return r.malformed(index, "", err)
	}
	return err
}

func (r *rowReader) malformed(index int, msg string, err error) error {
	if err != nil {
		err = feature.Bound(err)
	}
	return &feature.DecodeError{Format: "socrata", Index: index, Msg: feature.BoundMessage(msg), Err: err}
}

// row splits one row object into r.f.
func (r *rowReader) row(raw []byte) error {
	r.f = feature.Feature{}
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return r.malformed(r.n, "a row is not a JSON object", err)
	}
	props := make([]byte, 0, len(raw))
	props = append(props, '{')
	members, id := 0, ""
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return r.malformed(r.n, "", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return r.malformed(r.n, "", err)
		}
		if int64(len(v)) > r.limits.ValueBytes {
			return &feature.LimitError{Name: "value_bytes", Max: r.limits.ValueBytes, Where: fmt.Sprintf("%s, column %s", feature.Where(r.n), feature.Snippet(key))}
		}
		switch key {
		case idField:
			if id, err = rowID(v); err != nil {
				return r.malformed(r.n, err.Error(), nil)
			}
			continue
		case r.geomCol:
			if err := r.geometry(key, v); err != nil {
				return err
			}
			continue
		case ":updated_at":
			var s string
			if json.Unmarshal(v, &s) == nil && s > r.updated {
				r.updated = s
			}
		}
		if members++; members > r.limits.Properties {
			return &feature.LimitError{Name: "properties", Max: int64(r.limits.Properties), Where: feature.Where(r.n)}
		}
		if len(props) > 1 {
			props = append(props, ',')
		}
		props = strconv.AppendQuote(props, key)
		props = append(props, ':')
		props = append(props, v...)
	}
	props = append(props, '}')
	if id == "" {
		return r.malformed(r.n, "the row has no :id (the portal ignored $select=:id,*): its rows cannot be proven read once", nil)
	}
	r.ids = append(r.ids, id)
	if reason := feature.RefuseID(id, r.limits.IDBytes); reason != "" {
		r.f = feature.Feature{Refused: reason}
		return nil
	}
	r.f.ID = id
	if _, repair := feature.JSONTextStats(props); repair != 0 {
		props = feature.RepairJSONText(props)
		r.f.Repairs |= repair
	}
	r.f.Properties = props
	return nil
}

// rowID reads an :id, a string (row-abcd~efgh) or a number.
func rowID(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return feature.FixUTF8(s), nil
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf(":id is %s, not a string or a number", feature.Snippet(string(v)))
}

// geometry decodes the geometry column's value (GeoJSON, WGS 84).
func (r *rowReader) geometry(col string, v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	var g geom.T
	if err := geojson.Unmarshal(v, &g); err != nil {
		return r.malformed(r.n, "geometry column "+feature.Snippet(col), err)
	}
	g, err := geom.SetSRID(g, 4326)
	if err != nil {
		return r.malformed(r.n, "geometry column "+feature.Snippet(col), err)
	}
	r.f.Geometry = g
	return nil
}
