package gml

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
)

// xmlTokenizer is what Reader needs of an XML tokenizer: encoding/xml's
// RawToken semantics (no namespace translation; a self-closing element is a
// start and an end) without comments, processing instructions and
// directives, and the line for error messages. next fills a token the
// caller reuses instead of returning an xml.Token: boxing every element,
// end and text into an interface cost several allocations per GML element.
type xmlTokenizer interface {
	next(tok *xmlToken) error
	InputPos() (line, column int)
	// offset is the number of input bytes consumed so far.
	offset() int64
}

// tokenKind is what an xmlToken holds.
type tokenKind uint8

const (
	startToken tokenKind = iota + 1
	endToken
	textToken
)

// xmlToken is a start element (Name, Attr), an end element (Name) or
// character data (Text). Attr and Text are valid until the next call of
// next; names are interned and stay valid.
type xmlToken struct {
	Kind tokenKind
	Name xml.Name
	Attr []xml.Attr
	Text []byte
}

// start is the token as an xml.StartElement (sharing Attr).
func (t *xmlToken) start() xml.StartElement { return xml.StartElement{Name: t.Name, Attr: t.Attr} }

// stdXML adapts encoding/xml's decoder (documents in other encodings).
type stdXML struct{ *xml.Decoder }

func (d stdXML) offset() int64 { return d.InputOffset() }

func (d stdXML) next(tok *xmlToken) error {
	for {
		raw, err := d.RawToken()
		if err != nil {
			return err
		}
		switch t := raw.(type) {
		case xml.StartElement:
			*tok = xmlToken{Kind: startToken, Name: t.Name, Attr: append(tok.Attr[:0], t.Attr...), Text: tok.Text}
			return nil
		case xml.EndElement:
			tok.Kind, tok.Name = endToken, t.Name
			return nil
		case xml.CharData:
			tok.Kind, tok.Text = textToken, append(tok.Text[:0], t...)
			return nil
		}
	}
}

// newXMLTokenizer returns the fast tokenizer for a UTF-8 or ISO-8859-1
// document (no XML declaration, or one that declares one of them; Latin-1
// is converted to UTF-8 first), and encoding/xml's decoder with
// charsetReader for a document that declares another encoding or version,
// which refuses it. All real documents thus go through fastXML, whose
// bounds (xmlLimits) keep memory small whatever the document holds.
func newXMLTokenizer(r io.Reader) xmlTokenizer {
	head := make([]byte, 512)
	n := 0
	var err error
	for n < len(head) && err == nil {
		var m int
		m, err = r.Read(head[n:])
		n += m
	}
	head = head[:n]
	var rest io.Reader = r
	if err != nil {
		// The input ended (or failed) within the head: hand on exactly
		// that, the error included.
		rest = errReader{err}
	}
	src := io.MultiReader(bytes.NewReader(head), rest)
	if latin1Declared(head) {
		src = &latin1Reader{r: src}
	} else if needsStdDecoder(head) {
		dec := xml.NewDecoder(src)
		dec.CharsetReader = charsetReader
		return stdXML{dec}
	}
	return &fastXML{r: src, buf: make([]byte, 0, 64<<10), line: 1, names: make(map[string]cachedName)}
}

// latin1Declared reports whether the document's XML declaration (version
// 1.0) names ISO-8859-1 or one of its aliases (see charsetReader).
func latin1Declared(head []byte) bool {
	if !bytes.HasPrefix(head, []byte("<?xml")) || len(head) < 6 || !isXMLSpace(head[5]) {
		return false
	}
	end := bytes.Index(head, []byte("?>"))
	if end < 0 {
		return false
	}
	decl := string(head[5:end])
	if v := procInstParam("version", decl); v != "" && v != "1.0" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(procInstParam("encoding", decl))) {
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "iso_8859-1", "us-ascii", "ascii":
		return true
	}
	return false
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// needsStdDecoder reports whether the document starting with head declares
// an encoding other than UTF-8 or a version other than 1.0: encoding/xml
// handles those (or refuses them) as it always did.
func needsStdDecoder(head []byte) bool {
	if !bytes.HasPrefix(head, []byte("<?xml")) || len(head) < 6 || !isXMLSpace(head[5]) {
		return false
	}
	end := bytes.Index(head, []byte("?>"))
	if end < 0 {
		return true // an unusually long declaration: let encoding/xml read it
	}
	decl := string(head[5:end])
	if v := procInstParam("version", decl); v != "" && v != "1.0" {
		return true
	}
	enc := procInstParam("encoding", decl)
	return enc != "" && !strings.EqualFold(enc, "utf-8") && !strings.EqualFold(enc, "utf8")
}

// procInstParam returns the value of param in the XML declaration's content
// s (as encoding/xml's procInst does), "" if absent.
func procInstParam(param, s string) string {
	idx := strings.Index(s, param)
	if idx < 0 {
		return ""
	}
	v := strings.TrimLeft(s[idx+len(param):], " \t\r\n")
	if !strings.HasPrefix(v, "=") {
		return ""
	}
	v = strings.TrimLeft(v[1:], " \t\r\n")
	if v == "" || (v[0] != '\'' && v[0] != '"') {
		return ""
	}
	q := v[0]
	v = v[1:]
	if i := strings.IndexByte(v, q); i >= 0 {
		return v[:i]
	}
	return ""
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fastXML is a strict, allocation-light XML 1.0 tokenizer for UTF-8 input
// with encoding/xml's RawToken semantics where Reader relies on them:
// names split at their one colon into Space (the prefix, untranslated) and
// Local; the five predefined entities and character references decoded in
// text and attribute values (an unknown entity is an error, as in strict
// mode); CDATA sections returned as character data; "\r\n" and "\r" read
// as "\n"; comments, processing instructions and directives checked, then
// skipped (Reader has no use for them); invalid UTF-8, control
// characters, an unquoted or missing attribute value, "<" in an attribute
// value and "]]>" in text are errors. A token's text and attributes are
// valid until the next call.
//
// It does not read a DOCTYPE's internal subset as entity definitions (nor
// does encoding/xml), and element names are interned: a layer uses a few
// dozen.
type fastXML struct {
	r    io.Reader
	buf  []byte // input window; buf[pos:] is unread
	pos  int
	base int64 // input bytes before buf[0]
	eof  bool
	rerr error

	// maxValue bounds an attribute value and a CDATA section (0: none);
	// maxTag bounds a start tag with its attributes (0: none).
	maxValue int
	maxTag   int64
	// repaired counts the texts (values, attributes, references) that held
	// bad characters and were repaired to U+FFFD.
	repaired int

	line int // newlines in input before buf[0], plus one

	pendingEnd bool // a self-closing element's end is due
	endName    xml.Name

	text  []byte                // CharData of the last token
	scr   []byte                // scratch for names and attribute values
	names map[string]cachedName // names read so far, split
	// nameCache holds names by a cheap hash of their bytes: a hit spares
	// the map's hashing, which was a tenth of a GML layer's decoding.
	nameCache [256]cachedName
	err       error
}

const maxInternedNames = 4096

// maxNameBytes bounds an element or attribute name. GML and application
// schema names are a few dozen bytes; the bound keeps the element stack
// and the interned names small whatever a document holds.
const maxNameBytes = 1024

// textChunk is the size at which character data is handed out in pieces
// (consecutive text tokens), so that a 2 GB text node never sits in
// memory whole: the reader bounds what it keeps of it.
const textChunk = 64 << 10

func (t *fastXML) offset() int64 { return t.base + int64(t.pos) }

func (t *fastXML) InputPos() (int, int) {
	return t.line + bytes.Count(t.buf[:t.pos], []byte{'\n'}), 0
}

func (t *fastXML) syntaxError(format string, args ...any) error {
	line, _ := t.InputPos()
	t.err = &xml.SyntaxError{Msg: fmt.Sprintf(format, args...), Line: line}
	return t.err
}

// fill reads more input, discarding what was consumed. It reports false at
// the end of the input (or on a read error, kept in rerr).
func (t *fastXML) fill() bool {
	if t.eof {
		return false
	}
	if t.pos > 0 {
		t.line += bytes.Count(t.buf[:t.pos], []byte{'\n'})
		t.base += int64(t.pos)
		n := copy(t.buf, t.buf[t.pos:])
		t.buf = t.buf[:n]
		t.pos = 0
	}
	if len(t.buf) == cap(t.buf) {
		t.buf = append(t.buf, 0)[:len(t.buf)]
	}
	for {
		n, err := t.r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if err != nil {
			t.eof = true
			if err != io.EOF {
				t.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// getc returns the next byte; ok is false at the end of the input.
func (t *fastXML) getc() (byte, bool) {
	if t.pos < len(t.buf) {
		c := t.buf[t.pos]
		t.pos++
		return c, true
	}
	if !t.fill() {
		return 0, false
	}
	c := t.buf[t.pos]
	t.pos++
	return c, true
}

// eofError is the error for an input that ended inside markup.
func (t *fastXML) eofError() error {
	if t.rerr != nil {
		t.err = t.rerr
		return t.err
	}
	return t.syntaxError("unexpected EOF")
}

func (t *fastXML) mustgetc() (byte, error) {
	c, ok := t.getc()
	if !ok {
		return 0, t.eofError()
	}
	return c, nil
}

// hasPrefix reports whether the unread input starts with s, reading more
// if needed.
func (t *fastXML) hasPrefix(s string) bool {
	for len(t.buf)-t.pos < len(s) {
		if !t.fill() {
			break
		}
	}
	return bytes.HasPrefix(t.buf[t.pos:], []byte(s))
}

// next reads the next start element, end element or character data into
// tok, skipping (but checking) comments, processing instructions and
// directives.
func (t *fastXML) next(tok *xmlToken) error {
	for {
		if t.err != nil {
			return t.err
		}
		if t.pendingEnd {
			t.pendingEnd = false
			tok.Kind, tok.Name = endToken, t.endName
			return nil
		}
		if t.pos >= len(t.buf) && !t.fill() {
			if t.rerr != nil {
				t.err = t.rerr
				return t.err
			}
			t.err = io.EOF
			return io.EOF
		}
		if t.buf[t.pos] != '<' {
			if err := t.readText(); err != nil {
				return err
			}
			tok.Kind, tok.Text = textToken, t.text
			return nil
		}
		t.pos++
		c, err := t.mustgetc()
		if err != nil {
			return err
		}
		switch c {
		case '/':
			name, err := t.readName()
			if err != nil {
				return err
			}
			t.skipSpace()
			if c, err := t.mustgetc(); err != nil {
				return err
			} else if c != '>' {
				return t.syntaxError("invalid characters between </%s and >", qname(name))
			}
			tok.Kind, tok.Name = endToken, name
			return nil
		case '?':
			if _, err := t.procInst(); err != nil {
				return err
			}
			continue
		case '!':
			raw, err := t.bang()
			if err != nil {
				return err
			}
			if cd, ok := raw.(xml.CharData); ok { // a CDATA section
				tok.Kind, tok.Text = textToken, cd
				return nil
			}
			continue
		}
		t.pos--
		return t.startElement(tok)
	}
}

func (t *fastXML) skipSpace() {
	for {
		for t.pos < len(t.buf) {
			if !isXMLSpace(t.buf[t.pos]) {
				return
			}
			t.pos++
		}
		if !t.fill() {
			return
		}
	}
}

func isNameStartByte(c byte) bool { return nameBytes[c]&nameStart != 0 }

func isNameByte(c byte) bool { return nameBytes[c] != 0 }

// nameBytes classifies bytes for names: a table lookup is a fifth of
// readName's time less than the chain of comparisons.
var nameBytes = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= utf8.RuneSelf:
			t[c] = nameStart | nameRest
		case c >= '0' && c <= '9' || c == '-' || c == '.':
			t[c] = nameRest
		}
	}
	return t
}()

const (
	nameStart = 1 << iota // may start a name
	nameRest              // may continue one
)

// readName reads a (prefixed) name and splits it as encoding/xml does.
// Names repeat (a layer uses a few dozen), so a name seen before is one map
// lookup on the input bytes, read in place when they are in the buffer.
func (t *fastXML) readName() (xml.Name, error) {
	i, ascii := t.pos, true
	for i < len(t.buf) && isNameByte(t.buf[i]) {
		ascii = ascii && t.buf[i] < utf8.RuneSelf
		i++
	}
	if i < len(t.buf) {
		b := t.buf[t.pos:i]
		t.pos = i
		return t.name(b, ascii)
	}
	// The name reaches the end of the buffer: gather it across refills.
	t.scr = append(t.scr[:0], t.buf[t.pos:]...)
	t.pos = len(t.buf)
	for {
		if len(t.scr) > maxNameBytes {
			return xml.Name{}, t.syntaxError("XML name longer than %d bytes: %s", maxNameBytes, feature.Snippet(t.scr))
		}
		if !t.fill() {
			return xml.Name{}, t.eofError()
		}
		for t.pos < len(t.buf) {
			c := t.buf[t.pos]
			if !isNameByte(c) {
				return t.name(t.scr, false)
			}
			t.scr = append(t.scr, c)
			t.pos++
		}
	}
}

// name checks and splits the name b (ascii: b has no byte above 0x7F),
// remembering it.
func (t *fastXML) name(b []byte, ascii bool) (xml.Name, error) {
	var slot *cachedName
	if len(b) > 0 {
		slot = &t.nameCache[nameSlot(b)]
		if slot.raw == string(b) {
			return slot.name, nil
		}
	}
	if c, ok := t.names[string(b)]; ok {
		if slot != nil {
			*slot = c
		}
		return c.name, nil
	}
	if len(b) > maxNameBytes {
		return xml.Name{}, t.syntaxError("XML name longer than %d bytes: %s", maxNameBytes, feature.Snippet(b))
	}
	if len(b) == 0 || !isNameStartByte(b[0]) {
		return xml.Name{}, t.syntaxError("invalid XML name: %s", feature.Snippet(b))
	}
	if !ascii && !utf8.Valid(b) {
		return xml.Name{}, t.syntaxError("invalid UTF-8")
	}
	s := string(b)
	if strings.Count(s, ":") > 1 {
		return xml.Name{}, t.syntaxError("invalid XML name: %s", feature.Snippet(s))
	}
	n := xml.Name{Local: s}
	if space, local, ok := strings.Cut(s, ":"); ok && space != "" && local != "" {
		n = xml.Name{Space: space, Local: local}
	}
	if len(t.names) < maxInternedNames && len(s) <= 256 {
		c := cachedName{raw: s, name: n}
		t.names[s], *slot = c, c
	}
	return n, nil
}

// cachedName is a slot of fastXML.nameCache: a name as read and split.
type cachedName struct {
	raw  string
	name xml.Name
}

// nameSlot picks b's slot in the name cache: a few dozen names in a layer
// rarely collide on their length, middle and last bytes.
func nameSlot(b []byte) uint8 {
	return uint8(len(b)*37) ^ b[len(b)-1] ^ b[len(b)/2]<<3
}

func (t *fastXML) startElement(tok *xmlToken) error {
	tagStart := t.offset()
	name, err := t.readName()
	if err != nil {
		return err
	}
	tok.Kind, tok.Name, tok.Attr = startToken, name, tok.Attr[:0]
	for {
		if t.maxTag > 0 && t.offset()-tagStart > t.maxTag {
			t.err = &feature.LimitError{Name: "feature_bytes", Max: t.maxTag, Where: "start tag <" + qname(name) + ">"}
			return t.err
		}
		t.skipSpace()
		c, err := t.mustgetc()
		if err != nil {
			return err
		}
		switch c {
		case '>':
			return nil
		case '/':
			if c, err := t.mustgetc(); err != nil {
				return err
			} else if c != '>' {
				return t.syntaxError("expected /> in element")
			}
			t.pendingEnd, t.endName = true, name
			return nil
		}
		t.pos--
		an, err := t.readName()
		if err != nil {
			return err
		}
		t.skipSpace()
		if c, err := t.mustgetc(); err != nil {
			return err
		} else if c != '=' {
			return t.syntaxError("attribute name without = in element")
		}
		t.skipSpace()
		q, err := t.mustgetc()
		if err != nil {
			return err
		}
		if q != '"' && q != '\'' {
			return t.syntaxError("unquoted or missing attribute value in element")
		}
		v, err := t.attrValue(q)
		if err != nil {
			return err
		}
		tok.Attr = append(tok.Attr, xml.Attr{Name: an, Value: v})
	}
}

// valueLimit is the error for an attribute value or CDATA section longer
// than maxValue.
func (t *fastXML) valueLimit(what string) error {
	line, _ := t.InputPos()
	t.err = &feature.LimitError{Name: "value_bytes", Max: int64(t.maxValue), Where: fmt.Sprintf("%s (line %d)", what, line)}
	return t.err
}

// attrValue reads an attribute value up to the quote q. Invalid UTF-8 and
// control characters are repaired (U+FFFD), not errors: see text.go.
func (t *fastXML) attrValue(q byte) (string, error) {
	// Most values are plain text within the buffer: one scan, one copy.
	ascii := true
	for i := t.pos; i < len(t.buf); i++ {
		c := t.buf[i]
		if c == q {
			v := t.buf[t.pos:i]
			if !ascii && !utf8.Valid(v) {
				break // let the slow path repair it
			}
			if t.maxValue > 0 && len(v) > t.maxValue {
				return "", t.valueLimit("an attribute value")
			}
			t.pos = i + 1
			return string(v), nil
		}
		if c == '<' || c == '&' || c < 0x20 {
			break // entities, line ends and errors: the slow path
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	t.scr = t.scr[:0]
	for {
		if t.maxValue > 0 && len(t.scr) > t.maxValue {
			return "", t.valueLimit("an attribute value")
		}
		c, err := t.mustgetc()
		if err != nil {
			return "", err
		}
		switch {
		case c == q:
			return string(t.repair(t.scr)), nil
		case c == '<':
			return "", t.syntaxError("unescaped < inside quoted string")
		case c == '&':
			if t.scr, err = t.entity(t.scr); err != nil {
				return "", err
			}
		case c == '\r':
			t.scr = append(t.scr, '\n')
			if t.pos < len(t.buf) || t.fill() {
				if t.buf[t.pos] == '\n' {
					t.pos++
				}
			}
		case c < 0x20 && c != '\t' && c != '\n':
			t.repaired++
			t.scr = utf8.AppendRune(t.scr, utf8.RuneError)
		default:
			t.scr = append(t.scr, c)
		}
	}
}

// entity decodes the reference whose '&' was just read, appending it to b.
func (t *fastXML) entity(b []byte) ([]byte, error) {
	var name [16]byte
	n := 0
	for {
		c, err := t.mustgetc()
		if err != nil {
			return b, err
		}
		if c == ';' {
			break
		}
		if n == len(name) {
			return b, t.syntaxError("invalid character entity &%s...", name[:n])
		}
		name[n] = c
		n++
	}
	s := name[:n]
	switch string(s) {
	case "lt":
		return append(b, '<'), nil
	case "gt":
		return append(b, '>'), nil
	case "amp":
		return append(b, '&'), nil
	case "apos":
		return append(b, '\''), nil
	case "quot":
		return append(b, '"'), nil
	}
	if len(s) >= 2 && s[0] == '#' {
		var r uint64
		digits, base := s[1:], uint64(10)
		if digits[0] == 'x' {
			digits, base = digits[1:], 16
		}
		ok := len(digits) > 0
		for _, c := range digits {
			var d uint64
			switch {
			case c >= '0' && c <= '9':
				d = uint64(c - '0')
			case base == 16 && c >= 'a' && c <= 'f':
				d = uint64(c-'a') + 10
			case base == 16 && c >= 'A' && c <= 'F':
				d = uint64(c-'A') + 10
			default:
				ok = false
			}
			r = r*base + d
			if r > utf8.MaxRune {
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && r >= 0xD800 && r <= 0xDFFF {
			// encoding/xml reads a surrogate's reference as U+FFFD.
			t.repaired++
			return utf8.AppendRune(b, utf8.RuneError), nil
		}
		if ok && isXMLChar(rune(r)) {
			return utf8.AppendRune(b, rune(r)), nil
		}
		if ok {
			// A reference to a character XML does not allow (&#0;,
			// &#1;…): bad text like a raw control character, repaired
			// the same way.
			t.repaired++
			return utf8.AppendRune(b, utf8.RuneError), nil
		}
	}
	return b, t.syntaxError("invalid character entity &%s;", s)
}

// isXMLChar is XML 1.0's Char production.
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// readText reads character data up to the next '<' into t.text, or a
// piece of it of about textChunk bytes (the rest comes as the next text
// tokens). Invalid UTF-8 and characters XML does not allow are repaired
// (U+FFFD), not errors: see text.go.
func (t *fastXML) readText() error {
	t.text = t.text[:0]
	ascii := true
	for {
		i := t.pos
		for i < len(t.buf) {
			c := t.buf[i]
			if c >= 0x20 && c != '<' && c != '&' && c != ']' && c < utf8.RuneSelf {
				i++
				continue
			}
			if c >= utf8.RuneSelf {
				ascii = false
				i++
				continue
			}
			if c == '\t' || c == '\n' {
				i++
				continue
			}
			break
		}
		n := i - t.pos
		t.text = append(t.text, t.buf[t.pos:i]...)
		t.pos = i
		if i == len(t.buf) {
			// Hand out a piece once it is big enough; a rune cut at the
			// buffer's end goes with the next piece (when its bytes are
			// still in the buffer; else the piece grows a little more).
			if k := incompleteTail(t.text); len(t.text) >= textChunk && k <= n {
				t.text = t.text[:len(t.text)-k]
				t.pos -= k
				goto done
			}
			if !t.fill() {
				if t.rerr != nil {
					t.err = t.rerr
					return t.err
				}
				break // text at the end of the input; io.EOF comes next
			}
			continue
		}
		c := t.buf[i]
		switch {
		case c == '<':
			goto done
		case c == '&':
			t.pos++
			var err error
			if t.text, err = t.entity(t.text); err != nil {
				return err
			}
			ascii = false // a character reference may be any rune
		case c == ']':
			if t.hasPrefix("]]>") {
				return t.syntaxError("unescaped ]]> not in CDATA section")
			}
			t.text = append(t.text, ']')
			t.pos++
		case c == '\r':
			t.pos++
			t.text = append(t.text, '\n')
			if (t.pos < len(t.buf) || t.fill()) && t.buf[t.pos] == '\n' {
				t.pos++
			}
		default:
			t.repaired++
			t.text = utf8.AppendRune(t.text, utf8.RuneError)
			t.pos++
			ascii = false
		}
	}
done:
	if !ascii {
		t.text = t.repair(t.text)
	}
	return nil
}

// incompleteTail is the number of bytes at the end of b that begin a UTF-8
// sequence without completing it.
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax && k <= len(b); k++ {
		if utf8.RuneStart(b[len(b)-k]) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// repair is repairXMLText, counting in t.repaired the texts it changed, so
// that the GML reader can tell which features were repaired (Feature.Repairs).
func (t *fastXML) repair(b []byte) []byte {
	if validXMLText(b) {
		return b
	}
	t.repaired++
	return repairXMLText(b)
}

// repairXMLText replaces, in place when it can, invalid UTF-8 bytes and
// characters XML does not allow with U+FFFD (three bytes for each byte or
// character replaced: it works on a copy when it must grow).
func repairXMLText(b []byte) []byte {
	if validXMLText(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || !isXMLChar(r) {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// validXMLText reports whether b is UTF-8 of XML characters only.
func validXMLText(b []byte) bool {
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || !isXMLChar(r) {
			return false
		}
		i += size
	}
	return true
}

// skipUntil consumes input up to and including end.
func (t *fastXML) skipUntil(end string) error {
	for {
		if t.hasPrefix(end) {
			t.pos += len(end)
			return nil
		}
		if _, err := t.mustgetc(); err != nil {
			return err
		}
	}
}

// procInst reads a processing instruction whose "<?" was just read.
func (t *fastXML) procInst() (xml.Token, error) {
	name, err := t.readName()
	if err != nil {
		return nil, err
	}
	target := qname(name)
	if err := t.skipUntil("?>"); err != nil {
		return nil, err
	}
	return xml.ProcInst{Target: target}, nil
}

// bang reads a comment, a CDATA section or a directive whose "<!" was just
// read.
func (t *fastXML) bang() (xml.Token, error) {
	switch {
	case t.hasPrefix("--"):
		t.pos += 2
		if err := t.skipUntil("--"); err != nil {
			return nil, err
		}
		if c, err := t.mustgetc(); err != nil {
			return nil, err
		} else if c != '>' {
			return nil, t.syntaxError(`invalid sequence "--" not allowed in comments`)
		}
		return xml.Comment(nil), nil
	case t.hasPrefix("[CDATA["):
		t.pos += len("[CDATA[")
		t.text = t.text[:0]
		for {
			if t.hasPrefix("]]>") {
				t.pos += 3
				break
			}
			if t.maxValue > 0 && len(t.text) > t.maxValue {
				return nil, t.valueLimit("a CDATA section")
			}
			c, err := t.mustgetc()
			if err != nil {
				return nil, err
			}
			switch {
			case c == '\r':
				t.text = append(t.text, '\n')
				if (t.pos < len(t.buf) || t.fill()) && t.buf[t.pos] == '\n' {
					t.pos++
				}
			case c < 0x20 && c != '\t' && c != '\n':
				t.repaired++
				t.text = utf8.AppendRune(t.text, utf8.RuneError)
			default:
				t.text = append(t.text, c)
			}
		}
		t.text = t.repair(t.text)
		return xml.CharData(t.text), nil
	}
	// A directive (DOCTYPE): up to the matching '>', minding quotes and
	// nested markup declarations.
	depth, quote := 0, byte(0)
	for {
		c, err := t.mustgetc()
		if err != nil {
			return nil, err
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '<':
			depth++
		case c == '>':
			if depth == 0 {
				return xml.Directive(nil), nil
			}
			depth--
		}
	}
}
