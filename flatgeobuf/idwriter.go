package flatgeobuf

import (
	"encoding/base64"
	"strconv"

	"github.com/ingestd/ingestd/feature"
)

// idWriter renders a value as a feature id (the writer writeValue takes).
type idWriter struct{ s string }

func (w *idWriter) Null()         { w.s = "" }
func (w *idWriter) Int(v int64)   { w.s = strconv.FormatInt(v, 10) }
func (w *idWriter) Uint(v uint64) { w.s = strconv.FormatUint(v, 10) }
func (w *idWriter) Bool(v bool)   { w.s = strconv.FormatBool(v) }
func (w *idWriter) Float(v float64, bits int) {
	w.s = strconv.FormatFloat(v, 'g', -1, bits)
}
func (w *idWriter) Text(b []byte)   { w.s = feature.FixUTF8(string(b)) }
func (w *idWriter) Base64(b []byte) { w.s = base64.StdEncoding.EncodeToString(b) }
func (w *idWriter) Raw(b []byte)    { w.s = feature.FixUTF8(string(b)) }
