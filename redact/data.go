package redact

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Feature data (ids and properties) is scrubbed on a poll's hot path, every
// feature of a feed that has secrets, so Data first asks whether a text
// may hold a secret at all: the text lower-cased into a pooled buffer, then
// one bytes.Index per distinct 8-byte prefix of the forms (most tokens have
// one: their spellings agree on letters and digits). Only a hit pays for
// find's scan. BenchmarkData measures both paths.

// lowerPool holds the buffers texts are lower-cased into.
var lowerPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// mayHold reports whether p, in ASCII lower case, holds one of set's
// forms' prefixes: false means it holds no secret. p is a string or bytes,
// so that an id is asked without a copy of its own.
func mayHold[T string | []byte](set *secretSet, p T) bool {
	if len(set.forms) == 0 || len(p) < MinSecretLen {
		return false
	}
	bp := lowerPool.Get().(*[]byte)
	lower := append((*bp)[:0], p...)
	lowerInPlace(lower)
	hit := false
	for _, n := range set.needles {
		if bytes.Contains(lower, n) {
			hit = true
			break
		}
	}
	if cap(lower) <= 1<<20 {
		*bp = lower
		lowerPool.Put(bp)
	}
	return hit
}

// Data returns the feature data p (an id, or a feature's properties as
// JSON) with every secret, in any of its forms, replaced by Marker, and
// whether it changed; p itself when it holds none. JSON stays JSON: where
// replacing the bytes would break the document (a secret of digits echoed
// as a number, one that spans its punctuation), each string and number in
// it, keys included, is scrubbed instead, a number becoming a string.
func (s *Secrets) Data(p []byte, isJSON bool) ([]byte, bool) {
	set := s.load()
	if set == nil || !mayHold(set, p) {
		return p, false
	}
	idx := set.find(p)
	if idx == nil {
		return p, false
	}
	out := set.replace(p, idx)
	if isJSON && !json.Valid(out) {
		out = scrubJSONStrings(set, p)
	}
	return out, true
}

// ID is Data for a feature id: id with every secret replaced by Marker,
// and whether it changed. An id without one costs no allocation.
func (s *Secrets) ID(id string) (string, bool) {
	set := s.load()
	if set == nil || !mayHold(set, id) {
		return id, false
	}
	out, changed := s.Data([]byte(id), false)
	return string(out), changed
}

// scrubJSONStrings scrubs every string of the JSON document p, keys
// included, and writes it again (numbers as written).
func scrubJSONStrings(set *secretSet, p []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return []byte(`{}`)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return set.scrub(x)
		case json.Number:
			// A secret of digits, echoed as a number: a string now.
			if sc := set.scrub(string(x)); sc != string(x) {
				return sc
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[set.scrub(k)] = walk(e)
			}
			return out
		}
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(walk(v))
	return bytes.TrimRight(b.Bytes(), "\n")
}
