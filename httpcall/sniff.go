package httpcall

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
)

// BodyKind is what the first bytes of a body say it is, before any protocol's
// rules: those (an OGC exception report, an error object) are judged by the
// protocol from a Sniffed's Head and Root.
type BodyKind int

// Kinds of body.
const (
	KindUnknown   BodyKind = iota
	KindEmpty              // nothing but whitespace
	KindJSON               // '{' or '['
	KindJSONValue          // a whole JSON document that is a scalar: null, true, a number, a string
	KindHTML               // <!DOCTYPE html, <html, or an XHTML root
	KindXML                // any other XML root
)

// Sniffed is Sniff's verdict on a body.
type Sniffed struct {
	Kind BodyKind
	// Head is the body's first bytes (at most SniffLen) past a UTF-8 BOM
	// and whitespace; it is valid until the body is read on.
	Head []byte
	// Root is the root element of KindXML.
	Root xml.Name
}

// Sniff tells what a body is from its first bytes, skipping a UTF-8 BOM and
// whitespace. It reads nothing: br still yields the whole body.
//
// err is the read error that stopped the peek short of SniffLen bytes (nil
// when the body ended there, or went on): the kind is then a guess from
// the bytes that did arrive, and a verdict of KindEmpty or KindUnknown is
// never given for them (KindUnknown and the error instead), so that a
// caller reports what happened (a reset, a corrupt gzip stream, a
// malformed chunked encoding) rather than "empty" or "unrecognized".
func Sniff(br *bufio.Reader) (Sniffed, error) {
	p, err := br.Peek(SniffLen)
	switch err {
	case nil, bufio.ErrBufferFull:
		return sniffBytes(p, false), nil
	case io.EOF:
		return sniffBytes(p, true), nil
	}
	return sniffBytes(p, false), err
}

// sniffBytes is Sniff's verdict on p, the first bytes of a body; whole
// says that p is the entire body.
func sniffBytes(p []byte, whole bool) Sniffed {
	p = bytes.TrimPrefix(p, utf8BOM)
	p = bytes.TrimLeft(p, " \t\r\n")
	s := Sniffed{Head: p}
	if len(p) == 0 {
		if whole {
			s.Kind = KindEmpty
		}
		return s
	}
	switch c := p[0]; {
	case c == '{', c == '[':
		s.Kind = KindJSON
		return s
	case c == '<':
	case whole && jsonScalarStart(c) && json.Valid(p):
		// A well-formed JSON document, all of it, that is not an object
		// or an array: the feed's content. Only a body seen whole counts,
		// so that a text page that starts like a number ("503 Service
		// Unavailable") or a truncated "nul" stays unrecognized.
		s.Kind = KindJSONValue
		return s
	default:
		return s
	}
	head := bytes.ToLower(p[:min(len(p), 64)])
	if bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) {
		s.Kind = KindHTML
		return s
	}
	// The root element decides; the xml decoder skips the prolog, comments
	// and doctype for us. Strict off: a truncated peek or HTML-ish markup
	// must not stop us from seeing the root's name.
	d := xml.NewDecoder(bytes.NewReader(p))
	d.Strict = false
	for {
		tok, err := d.RawToken()
		if err != nil {
			return s
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if strings.EqualFold(se.Name.Local, "html") {
			s.Kind = KindHTML
			return s
		}
		s.Kind, s.Root = KindXML, se.Name
		return s
	}
}

// jsonScalarStart reports whether c can begin a JSON document that is not
// an object or an array.
func jsonScalarStart(c byte) bool {
	return c == 'n' || c == 't' || c == 'f' || c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// LeadingKeys returns the names of the first members (at most max) of the
// JSON object at the start of head, as far as head holds them whole: it
// stops at the object's end, at a value cut short and at anything that is
// not JSON. A protocol recognises its error document by them (an ArcGIS
// error object, an OGC API exception, GeoServer's JSON exception report)
// within the sniffed bytes, without reading the body on. Nil when head
// does not start with an object.
func LeadingKeys(head []byte, max int) []string {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for range max {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, ok := tok.(string)
		if !ok { // the object's end
			break
		}
		keys = append(keys, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	return keys
}
