package gml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
	"github.com/twpayne/go-geom/encoding/wkt"
)

// xmlTokSamples exercise what fastXML must read as encoding/xml does.
var xmlTokSamples = []string{
	`<a/>`,
	`<?xml version="1.0" encoding="UTF-8"?>` + "\n<!-- c -- c --><!DOCTYPE a [<!ENTITY x 'y'>]><a x='1' y = \"2\">t&lt;&gt;&amp;&apos;&quot;&#65;&#x42;&#x1F600;</a>",
	"<p:a xmlns:p=\"u\" p:b=\"&#x20;v\r\nw\">x\r\ny\rz<![CDATA[<&>]] ]]>]</p:a>",
	`<a>é ü 日本 <b c="é"/></a>`,
	`<a:b:c/>`,
	`<a b></a>`,
	`<a b=c></a>`,
	`<a b="<"></a>`,
	`<a>]]></a>`,
	`<a>&unknown;</a>`,
	`<a>&#xD800;</a>`,
	`<a><b></a>`,
	`<a`,
	`<a>text`,
	`<a><!-- unterminated`,
	`<1a/>`,
	`<:a/><a:/>`,
	`<a></ a>`,
	`<a></a  >`,
	"<?xml version=\"1.0\"?>\n<?pi stuff?>\n\n<a>\n\n</b>",
	`<a>` + strings.Repeat(`<b c="d">x &amp; y</b>`, 4000) + `</a>`,
	`<a>` + strings.Repeat("text é 日本 &amp; \r\n", 40000) + `</a>`,
}

// xmlRepairedSamples are the documents fastXML reads where encoding/xml
// fails: bad text is repaired with U+FFFD (see text.go), so that one bad
// record does not fail every poll of its layer.
var xmlRepairedSamples = map[string][]string{
	"<a>&#0;&#x1;&#xFFFE;</a>":        {"text \"\uFFFD\uFFFD\uFFFD\""},
	"<a>\x01</a>":                     {"text \"\uFFFD\""},
	"<a>x\xffy\xc3</a>":               {"text \"x\uFFFDy\uFFFD\""},
	"<a><![CDATA[\xed\xa0\x80]]></a>": {"text \"\uFFFD\uFFFD\uFFFD\""},
	"<a>\xef\xbf\xbe</a>":             {"text \"\uFFFD\""},
	"<a b=\"\xff\x02\"></a>":          {"start xml.Name{Space:\"\", Local:\"a\"} xml.Name{Space:\"\", Local:\"b\"}=\"\uFFFD\uFFFD\""},
}

func TestFastXMLRepairsText(t *testing.T) {
	t.Parallel()
	for doc, want := range xmlRepairedSamples {
		if std := stdTokens(t, strings.NewReader(doc)); std[len(std)-1] != "syntax error" {
			t.Errorf("%q: encoding/xml reads it (%q); not a repair", doc, std)
		}
		a := `start xml.Name{Space:"", Local:"a"}`
		if strings.HasPrefix(want[0], "start") {
			want = append(want, `end xml.Name{Space:"", Local:"a"}`, "EOF")
		} else {
			want = append([]string{a}, append(want, `end xml.Name{Space:"", Local:"a"}`, "EOF")...)
		}
		for _, r := range []io.Reader{strings.NewReader(doc), iotest.OneByteReader(strings.NewReader(doc))} {
			if got := rawTokens(t, newXMLTokenizer(r)); !reflect.DeepEqual(got, want) {
				t.Errorf("%q:\n got %q\nwant %q", doc, got, want)
			}
		}
	}
}

// rawTokens lists the tokens dec gives, up to the first error, with the
// error's kind (not its wording). Consecutive text tokens are merged: long
// text comes in pieces.
func rawTokens(t *testing.T, dec xmlTokenizer) []string {
	t.Helper()
	var out []string
	var tok xmlToken
	var text []byte
	inText := false
	for range 100_000 {
		err := dec.next(&tok)
		if inText && (err != nil || tok.Kind != textToken) {
			out = append(out, fmt.Sprintf("text %q", text))
			inText = false
		}
		if end, ok := tokenEnd(out, err); ok {
			return end
		}
		switch tok.Kind {
		case startToken:
			out = append(out, formatStart(tok.start()))
		case endToken:
			out = append(out, fmt.Sprintf("end %#v", tok.Name))
		case textToken:
			if !inText {
				text = text[:0]
			}
			text, inText = append(text, tok.Text...), true
		}
	}
	t.Fatal("no end")
	return nil
}

// stdTokens lists the tokens of encoding/xml's RawToken as rawTokens does,
// comments, directives and processing instructions left out.
func stdTokens(t *testing.T, r io.Reader) []string {
	t.Helper()
	dec := xml.NewDecoder(r)
	dec.CharsetReader = charsetReader
	var out []string
	var text []byte
	inText := false
	for range 100_000 {
		tok, err := dec.RawToken()
		if inText && (err != nil || flushesText(tok)) {
			out = append(out, fmt.Sprintf("text %q", text))
			inText = false
		}
		if end, ok := tokenEnd(out, err); ok {
			return end
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			out = append(out, formatStart(tk))
		case xml.EndElement:
			out = append(out, fmt.Sprintf("end %#v", tk.Name))
		case xml.CharData:
			if !inText {
				text = text[:0]
			}
			text, inText = append(text, tk...), true
		}
	}
	t.Fatal("no end")
	return nil
}

// flushesText reports whether tok ends a run of text: elements do;
// comments, processing instructions and directives, which fastXML skips,
// do not.
func flushesText(tok xml.Token) bool {
	switch tok.(type) {
	case xml.StartElement, xml.EndElement:
		return true
	}
	return false
}

func tokenEnd(out []string, err error) ([]string, bool) {
	if err == io.EOF {
		return append(out, "EOF"), true
	}
	if err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return append(out, "syntax error"), true
		}
		return append(out, "error "+err.Error()), true
	}
	return out, false
}

func formatStart(se xml.StartElement) string {
	attrs := ""
	for _, a := range se.Attr {
		attrs += fmt.Sprintf(" %#v=%q", a.Name, a.Value)
	}
	return fmt.Sprintf("start %#v%s", se.Name, attrs)
}

func stdTokenizer(r io.Reader) xmlTokenizer {
	dec := xml.NewDecoder(r)
	dec.CharsetReader = charsetReader
	return stdXML{dec}
}

// TestFastXMLMatchesEncodingXML: on every recorded body and on the samples,
// fastXML gives encoding/xml's tokens (comments, directives and
// processing instructions aside, which the reader skips), and fails where
// it fails, whatever the read sizes.
func TestFastXMLMatchesEncodingXML(t *testing.T) {
	t.Parallel()
	docs := append([]string(nil), xmlTokSamples...)
	entries, err := os.ReadDir(featuretest.TestdataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".xml") {
			docs = append(docs, string(featuretest.ReadTestdata(t, e.Name())))
		}
	}
	for i, doc := range docs {
		want := stdTokens(t, strings.NewReader(doc))
		if adapted := rawTokens(t, stdTokenizer(strings.NewReader(doc))); !reflect.DeepEqual(adapted, want) {
			t.Errorf("doc %d: the encoding/xml adapter gives %q, want %q", i, adapted, want)
		}
		for _, mk := range []func(string) io.Reader{
			func(s string) io.Reader { return strings.NewReader(s) },
			func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		} {
			got := rawTokens(t, newXMLTokenizer(mk(doc)))
			if !reflect.DeepEqual(got, want) {
				k := 0
				for k < len(got) && k < len(want) && got[k] == want[k] {
					k++
				}
				t.Errorf("doc %d %q: token %d:\n got %q\nwant %q", i, featuretest.Truncate(doc, 80), k, got[k:min(k+3, len(got))], want[k:min(k+3, len(want))])
			}
		}
	}
}

// TestFastXMLReadError: an error of the input (a body cut short) is the
// tokenizer's error, not an end of document.
func TestFastXMLReadError(t *testing.T) {
	t.Parallel()
	doc := featuretest.GMLDoc("3.2", strings.Repeat(`<app:name>x</app:name>`, 100))
	for _, cut := range []int{100, 600, len(doc) - 10} {
		r := io.MultiReader(strings.NewReader(doc[:cut]), iotest.ErrReader(io.ErrUnexpectedEOF))
		dec := newXMLTokenizer(r)
		var tok xmlToken
		var err error
		for err == nil {
			err = dec.next(&tok)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

// readAllFeatures reads every feature of doc with r, as comparable text.
func readAllFeatures(r *Reader) ([]string, error) {
	var out []string
	for range 100_000 {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		g := "<nil>"
		if f.Geometry != nil {
			// Text, not %#v: a collection holds pointers to its members.
			w, err := wkt.Marshal(f.Geometry)
			g = fmt.Sprintf("%s %v %d %v", w, f.Geometry.Layout(), f.Geometry.SRID(), err)
		}
		out = append(out, fmt.Sprintf("%q %s %s %q", f.ID, g, f.Properties, f.Refused))
	}
	return out, errors.New("no end")
}

// gmlReadersAgree checks that the GML reader on fastXML reads doc as it
// does on encoding/xml whenever encoding/xml reads it without error.
func gmlReadersAgree(t *testing.T, doc []byte, idProp string) {
	t.Helper()
	std := NewReader(bytes.NewReader(doc), feature.WithIDProperty(idProp))
	std.dec = stdTokenizer(bytes.NewReader(doc))
	want, werr := readAllFeatures(std)
	if werr != nil {
		return
	}
	got, gerr := readAllFeatures(NewReader(bytes.NewReader(doc), feature.WithIDProperty(idProp)))
	if gerr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("fastXML reads %q as\n%q (error %v)\nencoding/xml as\n%q", featuretest.Truncate(string(doc), 200), got, gerr, want)
	}
}

func TestGMLReaderSameOnBothTokenizers(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(featuretest.TestdataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".xml") {
			gmlReadersAgree(t, featuretest.ReadTestdata(t, e.Name()), "")
		}
	}
	for _, s := range gmlTokSeeds {
		gmlReadersAgree(t, []byte(s), "")
	}
}

// gmlTokSeeds are GML documents with the XML features fastXML handles by
// hand: entities, character references, CDATA, comments, CRLF, self-closing
// and prefixed elements, namespaces declared on the way.
var gmlTokSeeds = []string{
	featuretest.GMLDoc("3.2", `<app:name>A &amp; B &lt;C&gt; &#233;&#x20AC;</app:name><app:note><![CDATA[<b>bold</b> & "q"]]></app:note><!-- c --><app:empty/><app:nil xsi:nil="true" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"/>`+
		"<app:crlf>a\r\nb\rc</app:crlf><app:geom><gml:Point srsName=\"urn:ogc:def:crs:EPSG::4326\"><gml:pos>\r\n 1 2 </gml:pos></gml:Point></app:geom>"),
	featuretest.GMLDoc("3.1.1", `<x:g xmlns:x="http://www.opengis.net/gml"><x:Point><x:pos>1 2</x:pos></x:Point></x:g><app:v>é</app:v>`),
	featuretest.GMLDoc("2", `<app:a>1</app:a><app:a>2</app:a><app:g><gml:Point><gml:coordinates>1,2</gml:coordinates></gml:Point></app:g>`),
	`<?xml version="1.0" encoding="ISO-8859-1"?><wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml" xmlns:app="http://app"><gml:featureMember><app:f fid="f.1"><app:n>` + "caf\xe9" + `</app:n></app:f></gml:featureMember></wfs:FeatureCollection>`,
}
