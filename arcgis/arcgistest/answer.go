package arcgistest

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// answer is a query's answer for features, written as it streams (a
// 470 MB padded answer costs the server a feature at a time).
type answer struct {
	head     []byte // the members before the features, as a JSON object
	feats    []Feature
	exceeded bool
	// errorAfter ends the answer with an error object after its features.
	errorAfter bool
	faults     Faults
}

// answerOf is the answer of feats from l, taken under the server's lock.
func answerOf(l *Layer, feats []Feature, exceeded, errorAfter bool) *answer {
	head, _ := json.Marshal(map[string]any{"objectIdFieldName": "OBJECTID", "geometryType": l.GeometryType,
		"hasZ": l.HasZ, "hasM": l.HasM, "fields": l.Fields})
	return &answer{head: head, feats: feats, exceeded: exceeded, errorAfter: errorAfter, faults: l.Faults}
}

// write writes the answer as ArcGIS Server does (the layer's members, the
// features, exceededTransferLimit), gzipped when the faults say so; it
// stops at the first write error (the client went away).
func (a *answer) write(w http.ResponseWriter, r *http.Request) {
	bw, flush, end := body(w, a.faults)
	defer end()
	bw.Write(a.head[:len(a.head)-1])
	bw.WriteString(`,"features":[`)
	for i, ft := range a.feats {
		if i > 0 {
			bw.WriteByte(',')
		}
		attrs := map[string]any{"OBJECTID": ft.OID}
		for k, v := range ft.Attributes {
			attrs[k] = v
		}
		b, _ := json.Marshal(attrs)
		bw.WriteString(`{"attributes":`)
		bw.Write(b[:len(b)-1])
		for k, left := 0, a.faults.Padding; left > 0; k++ {
			n := min(left, PadValueBytes)
			bw.WriteString(`,"PAD` + strconv.Itoa(k) + `":"`)
			if !repeat(bw, 'p', int64(n)) {
				return
			}
			bw.WriteByte('"')
			left -= n
		}
		g, _ := json.Marshal(ft.Geometry)
		bw.WriteString(`},"geometry":`)
		bw.Write(g)
		if _, err := bw.WriteString(`}`); err != nil {
			return
		}
		if i == 0 && a.faults.Hold != nil {
			flush()
			select {
			case <-a.faults.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	bw.WriteString(`],"exceededTransferLimit":` + strconv.FormatBool(a.exceeded))
	if a.errorAfter {
		bw.WriteString(`,"error":{"code":500,"message":"Error performing query operation"}`)
	}
	bw.WriteString("}\n")
}

// body is the writer of an answer's body, gzipped when faults say so; flush
// sends what it holds to the client at once, end ends the body.
func body(w http.ResponseWriter, faults Faults) (bw *bufio.Writer, flush, end func()) {
	w.Header().Set("Content-Type", "application/json")
	var out io.Writer = w
	var zw *gzip.Writer
	if faults.gzip() {
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ = gzip.NewWriterLevel(w, gzip.BestCompression)
		out = zw
	}
	bw = bufio.NewWriterSize(out, 64<<10)
	flush = func() {
		_ = bw.Flush()
		if zw != nil {
			_ = zw.Flush()
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	end = func() {
		_ = bw.Flush()
		if zw != nil {
			_ = zw.Close()
		}
	}
	return bw, flush, end
}

// repeat writes n bytes c, and reports whether the writes went through.
func repeat(bw *bufio.Writer, c byte, n int64) bool {
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = c
	}
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := bw.Write(chunk[:k]); err != nil {
			return false
		}
		n -= k
	}
	return true
}

// writeDoc writes a small document, gzipped when faults say so.
func writeDoc(w http.ResponseWriter, faults Faults, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, faults, string(b))
}

// writeRaw writes a document as it is written, gzipped when faults say so.
func writeRaw(w http.ResponseWriter, faults Faults, doc string) {
	bw, _, end := body(w, faults)
	defer end()
	bw.WriteString(doc)
}

// writeBomb writes doc (an object) with one more member, key, a string of
// n bytes, first: a gzip bomb in a small document.
func writeBomb(w http.ResponseWriter, doc map[string]any, key string, n int64) {
	bw, _, end := body(w, Faults{Gzip: true})
	defer end()
	rest, _ := json.Marshal(doc)
	bw.WriteString(`{"` + key + `":"`)
	if !repeat(bw, 'a', n) {
		return
	}
	bw.WriteString(`",`)
	bw.Write(rest[1:])
}

// writeIDListBomb writes an id list of the ids 1…n.
func writeIDListBomb(w http.ResponseWriter, n int64) {
	bw, _, end := body(w, Faults{Gzip: true})
	defer end()
	bw.WriteString(`{"objectIdFieldName":"OBJECTID","objectIds":[`)
	var num []byte
	for i := int64(1); i <= n; i++ {
		if i > 1 {
			bw.WriteByte(',')
		}
		num = strconv.AppendInt(num[:0], i, 10)
		if _, err := bw.Write(num); err != nil {
			return
		}
	}
	bw.WriteString("]}")
}

// writeSpaced writes the id list of ids with n spaces between them, in
// all.
func writeSpaced(w http.ResponseWriter, ids []int64, n int64) {
	bw, _, end := body(w, Faults{Gzip: true})
	defer end()
	bw.WriteString(`{"objectIdFieldName":"OBJECTID","objectIds":[`)
	gap := n / int64(max(1, len(ids)-1))
	for i, id := range ids {
		if i > 0 {
			bw.WriteByte(',')
			if !repeat(bw, ' ', gap) {
				return
			}
		}
		bw.WriteString(strconv.FormatInt(id, 10))
	}
	bw.WriteString("]}")
}
