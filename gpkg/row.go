package gpkg

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/ingestd/ingestd/schema"
)

// decodeRow turns the scanned row into the reader's feature.
func (r *Reader) decodeRow(index int) (*feature.Feature, error) {
	fid := fidString(r.vals[0])
	if r.vals[0] == nil && r.view {
		fid = strconv.Itoa(index)
	}
	where := func() string { return feature.Where(index) + " (fid " + fid + ")" }
	total := int64(0)
	for i := 1; i < len(r.vals); i += 2 {
		n, _ := r.vals[i].(int64)
		total += n
	}
	if total > r.limits.FeatureBytes {
		return nil, &feature.LimitError{Name: "feature_bytes", Max: r.limits.FeatureBytes, Where: "gpkg " + where()}
	}
	f := &r.f
	*f = feature.Feature{ID: fid}
	if blob, ok := r.vals[2].([]byte); ok {
		g, h, err := DecodeGeometry(blob)
		if err != nil {
			return nil, r.fail(index, "fid "+fid, err)
		}
		if h.SRSID != r.srsID && h.SRSID > 0 {
			return nil, r.fail(index, fmt.Sprintf("fid %s: geometry blob header says srs_id %d, the layer's is %d", fid, h.SRSID, r.srsID), nil)
		}
		if f.Geometry, err = setSRID(g, r.srid); err != nil {
			return nil, r.fail(index, "fid "+fid, err)
		}
	} else if r.vals[2] != nil {
		return nil, r.fail(index, fmt.Sprintf("fid %s: geometry column holds a %T, not a blob", fid, r.vals[2]), nil)
	}
	o := &r.obj
	o.Reset()
	for i, c := range r.cols {
		if n, _ := r.vals[3+2*i].(int64); n > r.limits.ValueBytes {
			return nil, &feature.LimitError{Name: "value_bytes", Max: r.limits.ValueBytes,
				Where: fmt.Sprintf("gpkg %s, column %s", where(), feature.Snippet(c.name))}
		}
		v := r.vals[4+2*i]
		o.Key(r.keys, i)
		writeValue(o, c.typ, v)
		if i == r.idCol {
			f.ID = idString(v)
		}
	}
	f.Properties = o.Bytes()
	f.Repairs = o.Repairs
	if reason := feature.RefuseID(f.ID, r.limits.IDBytes); reason != "" {
		*f = feature.Feature{Refused: reason}
	}
	return f, nil
}

// writeValue writes one SQLite value by its storage class, as GDAL reads
// it: a BOOLEAN column's integers as true/false, blobs as base64, text as
// stored (dates and datetimes are ISO-8601 text in a GeoPackage).
func writeValue(o *propjson.Object, typ schema.Type, v any) {
	switch v := v.(type) {
	case nil:
		o.Null()
	case int64:
		if typ == schema.Boolean {
			o.Bool(v != 0)
		} else {
			o.Int(v)
		}
	case float64:
		o.Float(v, 64)
	case string:
		o.String(v)
	case []byte:
		o.Base64(v)
	default:
		o.String(fmt.Sprint(v))
	}
}

// idString renders an id column's value: text as it is, numbers
// canonically, null as no id.
func idString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return feature.FixUTF8(v)
	case []byte:
		return feature.FixUTF8(string(v))
	}
	return fmt.Sprint(v)
}
