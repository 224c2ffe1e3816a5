package ogcapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/source"
)

// document is a kind of document around the items, with its bound on the
// decoded (decompressed) body. Each is streamed by a token decoder that
// keeps only the members Prepare needs, so that what a document costs is
// its bound plus what is kept, never a tree of its values, which a small
// gzip document can make many times larger than its decoded bytes.
// The bounds are far above what real servers send (pygeoapi's OpenAPI
// document for 40 collections is 0.5 MB; a GeoServer collection listing
// every EPSG code in crs, 0.4 MB).
type document struct {
	name   string // as errors name it
	bound  int64
	accept string // the Accept header, when not docAccept
}

// docAccept is the Accept header of the documents around the items.
const docAccept = "application/json, application/vnd.oai.openapi+json;q=0.9, */*;q=0.1"

var (
	landingDoc     = document{name: "landing page", bound: 1 << 20}
	conformanceDoc = document{name: "conformance document", bound: 1 << 20}
	collectionDoc  = document{name: "collection document", bound: 4 << 20}
	collectionsDoc = document{name: "collections document", bound: 16 << 20}
	openAPIDoc     = document{name: "OpenAPI document", bound: 16 << 20}
	// tipg serves its queryables only as application/schema+json (or
	// HTML): f=json is a 422, and so is an Accept it does not list
	// without */*.
	schemaDoc = document{name: "schema document", bound: 4 << 20, accept: "application/schema+json, application/json;q=0.9, */*;q=0.1"}
	hitsDoc   = document{name: "resulttype=hits answer", bound: 1 << 20}
)

// Bounds on what a document may make Prepare keep.
const (
	maxCRSs        = 100_000 // a collection's crs list
	maxConformance = 10_000  // conformance classes
	maxKeptLinks   = 1_000   // links of the relations Prepare reads
	maxDepth       = 128     // nesting a scan follows
)

// DocumentError is a document around the items (landing page, conformance,
// collection, OpenAPI, schema) that is larger than its bound, or holds more
// of something than ingestd keeps: not a document of an OGC API server.
// The server answered, so the breaker counts a success.
type DocumentError struct {
	Doc    string // "OpenAPI document", …
	URL    string // redacted
	Reason string
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("the %s at %s %s", e.Doc, e.URL, e.Reason)
}

// getDoc GETs u as one logical call and hands its JSON to read, as a token
// stream bounded by doc's bound (or the feed's body_bytes, when smaller).
// read must consume one JSON value from dec.
func (c *Client) getDoc(ctx context.Context, layer source.Layer, u *url.URL, doc document, read func(dec *json.Decoder) error) error {
	accept := doc.accept
	if accept == "" {
		accept = docAccept
	}
	req := request(layer, u, accept)
	if req.BodyLimit <= 0 || req.BodyLimit > doc.bound {
		req.BodyLimit = doc.bound
	}
	return c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		br, _, err := a.OpenBody(doc.name)
		if err != nil {
			return a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted))
		}
		if r := classify(a.Resp, br, a.Redacted, c.base.Now()); r != nil {
			return a.Verdict(r)
		}
		dec := json.NewDecoder(br)
		dec.UseNumber()
		if err := read(dec); err != nil {
			return c.docFailed(a, doc, req.BodyLimit, err)
		}
		return breaker.Result{Outcome: breaker.Success}
	})
}

// docFailed judges an error met while scanning a document: a bound of
// this package's is a *DocumentError, the feed's body_bytes a limit error,
// a body cut short the origin's failure, anything else the document's
// content, which the server sent whole (a success, and the feed's error).
func (c *Client) docFailed(a *httpcall.Attempt, doc document, limit int64, err error) breaker.Result {
	var le *feature.LimitError
	var de *DocumentError
	switch {
	case errors.As(err, &le) && le.Name == "body_bytes" && limit == doc.bound:
		return breaker.Result{Outcome: breaker.Success, Err: &DocumentError{Doc: doc.name, URL: a.Redacted,
			Reason: fmt.Sprintf("is larger than %d MiB decoded, its bound: not a document an OGC API server sends", doc.bound>>20)}}
	case errors.As(err, &de):
		de.Doc, de.URL = doc.name, a.Redacted
		return breaker.Result{Outcome: breaker.Success, Err: de}
	case errors.As(err, &le):
		return a.StreamFailed(&httpcall.BodyError{URL: a.Redacted, Err: err})
	case a.BodyErr() != nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return a.OriginFailure(&httpcall.BodyError{URL: a.Redacted, Err: err})
	}
	return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted,
		Err: &feature.DecodeError{Index: -1, Msg: "not the expected JSON document (" + doc.name + ")", Err: feature.Bound(err)}}}
}

// tooMany is the error of a document holding more than max of what.
func tooMany(what string, max int) error {
	return &DocumentError{Reason: fmt.Sprintf("holds more than %d %s: not a document an OGC API server sends", max, what)}
}

// scanObject reads a JSON object from dec, calling member with each key;
// member must consume the key's value (decode it, or skipValue). A value
// that is not an object is an error naming what.
func scanObject(dec *json.Decoder, what string, member func(key string) error) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%s is %s, not an object", what, tokenKind(t))
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	_, err = dec.Token() // '}'
	return err
}

// scanArray reads a JSON array from dec, calling elem for each element,
// which elem must consume. null is an empty array.
func scanArray(dec *json.Decoder, what string, elem func() error) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%s is %s, not an array", what, tokenKind(t))
	}
	for dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = dec.Token() // ']'
	return err
}

// stringList reads an array of strings (what: the member, for errors), at
// most max of them (noun: what they are).
func stringList(dec *json.Decoder, what, noun string, max int) ([]string, error) {
	var out []string
	err := scanArray(dec, what, func() error {
		if len(out) == max {
			return tooMany(noun+" in "+what, max)
		}
		t, err := dec.Token()
		if err != nil {
			return err
		}
		s, ok := t.(string)
		if !ok {
			return fmt.Errorf("%s holds %s, not a string", what, tokenKind(t))
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// linkList reads a "links" array, keeping the links keep accepts (at most
// maxKeptLinks of them); each link is decoded alone, so a long array costs
// one link at a time.
func linkList(dec *json.Decoder, keep func(link) bool) ([]link, error) {
	var out []link
	err := scanArray(dec, `member "links"`, func() error {
		var l link
		if err := dec.Decode(&l); err != nil {
			return fmt.Errorf(`member "links" holds something that is not a link: %w`, err)
		}
		if !keep(l) {
			return nil
		}
		if len(out) == maxKeptLinks {
			return tooMany("links of the relations ingestd reads", maxKeptLinks)
		}
		out = append(out, l)
		return nil
	})
	return out, err
}

// stringValue reads a string, or null as "".
func stringValue(dec *json.Decoder, what string) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch v := t.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	}
	if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
		if err := skipRest(dec, 1); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s is %s, not a string", what, tokenKind(t))
}

// skipValue consumes one JSON value, keeping nothing but its nesting depth.
func skipValue(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
		return skipRest(dec, 1)
	}
	return nil
}

// skipRest consumes tokens until depth open arrays and objects are closed.
// Nesting deeper than maxDepth is refused: the decoder keeps a word per
// open level, and a document of nothing but '[' would cost eight times its
// size.
func skipRest(dec *json.Decoder, depth int) error {
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth > maxDepth {
			return tooDeep()
		}
	}
	return nil
}

// tooDeep is the error of a document nested deeper than maxDepth.
func tooDeep() error {
	return &DocumentError{Reason: fmt.Sprintf("is nested deeper than %d levels: not a document an OGC API server sends", maxDepth)}
}

// tokenKind names what a token starts, for errors.
func tokenKind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

// limitMaximum scans an OpenAPI document for the query parameter "limit"
// (an object with "name": "limit", "in": "query" or no "in", wherever it
// is: components/parameters, or inline in a path's parameters) and returns
// the "maximum" its "schema" declares for the collection whose items are
// at itemsPath (the items link's path): the one of the path that is that
// collection's items (pygeoapi and MapServer declare one per collection),
// else of a templated path matching it (/collections/{collectionId}/items:
// tipg), else the smallest declared outside paths (components: the
// server-wide one), else the smallest anywhere; 0 when none is declared.
// It keeps one small frame per open level and four numbers, nothing else
// of the document.
func limitMaximum(dec *json.Decoder, itemsPath string) (int, error) {
	sc := &limitScan{itemsPath: segments(itemsPath)}
	for {
		t, err := dec.Token()
		if err == io.EOF && len(sc.stack) == 0 {
			return sc.result(), nil
		}
		if err != nil {
			return 0, err
		}
		done, err := sc.token(t)
		if err != nil || done {
			return sc.result(), err
		}
	}
}

// limitFrame is one open object or array of limitMaximum's scan.
type limitFrame struct {
	object    bool
	expectKey bool   // an object awaiting its next key
	key       string // an object's current key
	parentKey string // the key this value is under in its parent
	name, in  string
	hasIn     bool
	max       float64 // this object's own "maximum"
	schemaMax float64 // the "maximum" of its "schema" member
}

// limitScan is the state of limitMaximum: the open levels and the
// smallest maximum found of each kind of place.
type limitScan struct {
	itemsPath                            []string
	stack                                []limitFrame
	own, templated, serverWide, anywhere int
}

func (sc *limitScan) result() int {
	for _, m := range []int{sc.own, sc.templated, sc.serverWide} {
		if m > 0 {
			return m
		}
	}
	return sc.anywhere
}

// token takes the next token; true when the document has ended.
func (sc *limitScan) token(t json.Token) (bool, error) {
	var top *limitFrame
	if n := len(sc.stack); n > 0 {
		top = &sc.stack[n-1]
	}
	if top != nil && top.object && top.expectKey {
		if t == json.Delim('}') {
			sc.closeObject()
			return len(sc.stack) == 0, nil
		}
		top.key, _ = t.(string)
		top.expectKey = false
		return false, nil
	}
	parentKey := ""
	if top != nil && top.object {
		parentKey = top.key
	}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{', '[':
			if len(sc.stack) == maxDepth {
				return false, tooDeep()
			}
			sc.stack = append(sc.stack, limitFrame{object: v == '{', expectKey: v == '{', parentKey: parentKey})
			return false, nil
		case ']':
			sc.stack = sc.stack[:len(sc.stack)-1]
			sc.closed()
			return len(sc.stack) == 0, nil
		}
	case string:
		if top != nil && top.object && top.key == "name" {
			top.name = v
		} else if top != nil && top.object && top.key == "in" {
			top.in, top.hasIn = v, true
		}
	case json.Number:
		if top != nil && top.object && top.key == "maximum" {
			top.max, _ = v.Float64()
		}
	}
	if top == nil {
		return true, nil // a scalar document
	}
	sc.closed()
	return false, nil
}

// closed ends the value at the top of the stack's parent: an object then
// awaits its next key.
func (sc *limitScan) closed() {
	if n := len(sc.stack); n > 0 && sc.stack[n-1].object {
		sc.stack[n-1].expectKey = true
	}
}

// closeObject ends the object at the top of the stack, keeping its
// maximum when it is the limit parameter, by the place it was declared:
// under paths/{path}, the path is the stack's third level.
func (sc *limitScan) closeObject() {
	f := sc.stack[len(sc.stack)-1]
	sc.stack = sc.stack[:len(sc.stack)-1]
	if f.name == "limit" && (!f.hasIn || f.in == "query") && f.schemaMax >= 1 && f.schemaMax < 1e9 {
		m := int(f.schemaMax)
		smallest := func(p *int) {
			if *p == 0 || m < *p {
				*p = m
			}
		}
		smallest(&sc.anywhere)
		if len(sc.stack) >= 3 && sc.stack[1].parentKey == "paths" {
			switch exact, ok := matchPath(sc.itemsPath, segments(sc.stack[2].parentKey)); {
			case ok && exact:
				smallest(&sc.own)
			case ok:
				smallest(&sc.templated)
			}
		} else {
			smallest(&sc.serverWide)
		}
	}
	if n := len(sc.stack); n > 0 && sc.stack[n-1].object && f.parentKey == "schema" {
		sc.stack[n-1].schemaMax = f.max
	}
	sc.closed()
}

// segments splits a URL path into its unescaped segments.
func segments(path string) []string {
	var out []string
	for _, s := range strings.Split(strings.Trim(path, "/"), "/") {
		if u, err := url.PathUnescape(s); err == nil {
			s = u
		}
		out = append(out, s)
	}
	return out
}

// matchPath reports whether the OpenAPI path key (relative to the API's
// root, which the items link's path ends with) is the items path: ok when
// it matches the end of items, exact when no template segment ({…}) was
// needed.
func matchPath(items, key []string) (exact, ok bool) {
	if len(key) == 0 || len(key) > len(items) {
		return false, false
	}
	exact = true
	tail := items[len(items)-len(key):]
	for i, k := range key {
		switch {
		case strings.HasPrefix(k, "{") && strings.HasSuffix(k, "}"):
			exact = false
		case k != tail[i]:
			return false, false
		}
	}
	return exact, true
}
