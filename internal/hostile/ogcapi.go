package hostile

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The OGC API – Features documents of a case: the case's URL is the
// landing page, its collection "points" (the feed's url), whose items the
// good phase serves as one page of the good layer and a hostile phase as
// its responder says. Discovery (landing page, conformance, collection)
// answers well in both phases unless a case serves its own.

// serveOGCAPI answers path (below the case) of an OGC API: the discovery
// documents, and items by items.
func serveOGCAPI(w http.ResponseWriter, r *http.Request, path string, items func(w http.ResponseWriter)) {
	base := "http://" + r.Host + strings.TrimSuffix(r.URL.Path, path)
	switch strings.TrimSuffix(path, "/") {
	case "":
		writeDoc(w, `{"title":"hostile","links":[{"href":"`+base+`/conformance?f=json","rel":"conformance","type":"application/json"},`+
			`{"href":"`+base+`/collections?f=json","rel":"data","type":"application/json"}]}`)
	case "/conformance":
		writeDoc(w, `{"conformsTo":["http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core","http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson"]}`)
	case "/collections/points":
		writeDoc(w, `{"id":"points","itemType":"feature","links":[{"href":"`+base+`/collections/points/items?f=json","rel":"items","type":"application/geo+json"}]}`)
	case "/collections/points/items":
		items(w)
	default:
		w.Header().Set("Content-Type", ctJSON)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"NotFound","description":"no such resource"}`))
	}
}

func writeDoc(w http.ResponseWriter, doc string) {
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	_, _ = w.Write([]byte(doc))
}

// ogcPage is one items page: numberMatched and numberReturned (< 0:
// left out; matchedText, when set, is written as it is instead), the
// ids of its features (appendPoint's) and its next link ("" none).
type ogcPage struct {
	matched, returned int
	matchedText       string
	ids               []int
	next              string
}

// writeOGCPage writes p as a GeoJSON FeatureCollection.
func writeOGCPage(w http.ResponseWriter, p ogcPage) {
	buf := []byte(`{"type":"FeatureCollection",`)
	switch {
	case p.matchedText != "":
		buf = append(buf, `"numberMatched":`+p.matchedText+`,`...)
	case p.matched >= 0:
		buf = append(buf, `"numberMatched":`...)
		buf = strconv.AppendInt(buf, int64(p.matched), 10)
		buf = append(buf, ',')
	}
	if p.returned >= 0 {
		buf = append(buf, `"numberReturned":`...)
		buf = strconv.AppendInt(buf, int64(p.returned), 10)
		buf = append(buf, ',')
	}
	buf = append(buf, `"features":[`...)
	for k, id := range p.ids {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = appendPoint(buf, int64(id))
	}
	buf = append(buf, `],"links":[`...)
	if p.next != "" {
		buf = append(buf, `{"href":"`+p.next+`","rel":"next","type":"application/geo+json"}`...)
	}
	buf = append(buf, "]}"...)
	w.Header().Set("Content-Type", "application/geo+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	_, _ = w.Write(buf)
}

// ogcItems serves the discovery documents well, and the items by items.
func ogcItems(items Responder) Responder {
	return func(w http.ResponseWriter, r *Request) {
		serveOGCAPI(w, r.Request, r.Path, func(w http.ResponseWriter) { items(w, r) })
	}
}

// ogcOn answers the document at path (below the case) with r, and the
// rest as ogcItems(items) does (items nil: the good layer).
func ogcOn(path string, r, items Responder) Responder {
	if items == nil {
		items = func(w http.ResponseWriter, _ *Request) {
			writeOGCPage(w, ogcPage{matched: GoodFeatures, returned: GoodFeatures, ids: []int{0, 1}})
		}
	}
	rest := ogcItems(items)
	return func(w http.ResponseWriter, req *Request) {
		if strings.TrimSuffix(req.Path, "/") == path {
			r(w, req)
			return
		}
		rest(w, req)
	}
}

// ogcPaged serves items page by page: page(r, n) is page n (the first
// has no page parameter; pageURL links the others).
func ogcPaged(page func(r *Request, n int) ogcPage) Responder {
	return ogcItems(func(w http.ResponseWriter, r *Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("page"))
		if err != nil {
			n = 0 // the first page has no page parameter
		}
		writeOGCPage(w, page(r, n))
	})
}

// pageURL is the URL of items page n of r's case, with r's limit: page 0
// is the URL the client starts at.
func pageURL(r *Request, n int) string {
	q := url.Values{"f": {"json"}, "limit": {r.URL.Query().Get("limit")}}
	if n > 0 {
		q.Set("page", strconv.Itoa(n))
	}
	return "http://" + r.Host + r.URL.Path + "?" + q.Encode()
}

// ogcapiLinks are lying next links: loops, other origins, other schemes,
// endless pages, pages the server repeats, and the last page's edge cases
// (a next link on a full last page loads; a full page without one, when
// numberMatched promised more, fails).
func ogcapiLinks() (cs []Case) {
	const class = "OGC API: next links"
	fail := func(name string, r Responder, errs ...string) Case {
		return failCase(name, class, OGCAPI, r, errs...)
	}
	two := func(n int) []int { return []int{2 * n, 2*n + 1} }
	cs = append(cs,
		fail("ogcapi_next_loop", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 10, returned: 2, ids: two(n), next: pageURL(r, 1-n)} // A→B→A
		}), "a link loop"),
		fail("ogcapi_next_self", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 10, returned: 2, ids: two(0), next: pageURL(r, 0)}
		}), "a link loop"),
		fail("ogcapi_next_cross_origin", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 4, returned: 2, ids: two(0), next: r.PeerURL() + "/collections/points/items?page=1"}
		}), "another origin"),
		fail("ogcapi_next_file_scheme", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 4, returned: 2, ids: two(0), next: "file:///etc/passwd"}
		}), "not http(s)"),
		fail("ogcapi_empty_pages_forever", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 0, returned: 0, next: pageURL(r, n+1)}
		}), "empty pages in a row"),
		fail("ogcapi_offset_ignored", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 10, returned: 2, ids: two(0), next: pageURL(r, n+1)}
		}), "repeats page"),
		withPageSize(fail("ogcapi_no_next_on_full_page", ogcPaged(func(r *Request, n int) ogcPage {
			p := ogcPage{matched: 6, returned: 2, ids: two(n), next: pageURL(r, n+1)}
			if n == 1 {
				p.next = "" // pygeoapi#1594
			}
			return p
		}), "numberMatched promised more"), 2),
		withTimeout(withPageSize(withLimits(fail("ogcapi_pages_forever", ogcPaged(func(r *Request, n int) ogcPage {
			return ogcPage{matched: 1_000_000_000, returned: 100, ids: seq(100*n, 100), next: pageURL(r, n+1)}
		}), "limits.poll_features"), "poll_features", 2000), 100), 20*time.Second),
		withPageSize(Case{Name: "ogcapi_next_on_full_last_page", Class: class, Kind: OGCAPI, Load: true, Features: 4,
			Respond: ogcPaged(func(r *Request, n int) ogcPage {
				if n == 2 {
					return ogcPage{matched: 4, returned: 0} // the page after the full last one: empty, no next
				}
				return ogcPage{matched: 4, returned: 2, ids: two(n), next: pageURL(r, n+1)}
			})}, 2),
	)
	return cs
}

// ogcapiCounts are lying counts: numberMatched above or below what the
// pages hold, changing between pages or not a number, numberReturned
// lies, one feature twice. Each fails naming the lie.
func ogcapiCounts() (cs []Case) {
	const class = "OGC API: numberMatched lies"
	page := func(name string, p ogcPage, errs ...string) {
		cs = append(cs, failCase(name, class, OGCAPI, ogcPaged(func(*Request, int) ogcPage { return p }), errs...))
	}
	page("ogcapi_matched_more", ogcPage{matched: 10, returned: -1, ids: []int{0, 1, 2}}, "numberMatched promised more")
	page("ogcapi_matched_less", ogcPage{matched: 1, returned: -1, ids: []int{0, 1, 2}}, "more features than numberMatched")
	page("ogcapi_matched_unknown", ogcPage{matchedText: `"unknown"`, returned: -1, ids: []int{0, 1, 2}}, "not a count")
	page("ogcapi_matched_object", ogcPage{matchedText: `{"n":3}`, returned: -1, ids: []int{0, 1, 2}}, "numberMatched")
	page("ogcapi_returned_lies", ogcPage{matched: 3, returned: 5, ids: []int{0, 1, 2}}, "numberReturned says 5")
	page("ogcapi_duplicate_id", ogcPage{matched: 3, returned: 3, ids: []int{0, 1, 1}}, "twice")
	cs = append(cs, withPageSize(failCase("ogcapi_matched_changes", class, OGCAPI, ogcPaged(func(r *Request, n int) ogcPage {
		p := ogcPage{matched: 4 + n, returned: 2, ids: []int{2 * n, 2*n + 1}, next: pageURL(r, n+1)}
		if n == 1 {
			p.next = ""
		}
		return p
	}), "numberMatched changed"), 2))
	return cs
}

// ogcapiErrors are error answers: an exception document with status 200
// or 500, an HTML page with 200, a collection that is not there.
func ogcapiErrors() (cs []Case) {
	const class = "OGC API: error answers"
	const exception = `{"code":"InvalidParameterValue","description":"Invalid parameter value: limit"}`
	fail := func(name string, r Responder, errs ...string) {
		cs = append(cs, failCase(name, class, OGCAPI, r, errs...))
	}
	fail("ogcapi_exception_200", ogcItems(reply(http.StatusOK, ctJSON, exception)), "InvalidParameterValue")
	fail("ogcapi_exception_500", ogcItems(reply(http.StatusInternalServerError, ctJSON, `{"code":"ServerError","description":"boom"}`)), "500")
	fail("ogcapi_exception_second_page", withNext(reply(http.StatusOK, ctJSON, exception)), "InvalidParameterValue")
	fail("ogcapi_html_200", ogcItems(file(ctHTML, "html_200.html")), "HTML")
	fail("ogcapi_collection_404", ogcOn("/collections/points", reply(http.StatusNotFound, ctJSON, `{"code":"NotFound","description":"no collection points"}`), nil), "404")
	// A lone Feature, as the first page or as the one a next link leads
	// to: the poll fails naming the page, and is not parked.
	const lone = `{"type":"Feature","id":"x","numberMatched":1,"geometry":null,"properties":{}}`
	first := failCase("ogcapi_feature_not_collection", class, OGCAPI, ogcItems(reply(http.StatusOK, "application/geo+json", lone)), "page 0 is a single Feature")
	second := failCase("ogcapi_feature_second_page", class, OGCAPI, withNext(reply(http.StatusOK, "application/geo+json", lone)), "page 1 is a single Feature")
	first.FeedsFault, second.FeedsFault = true, true
	cs = append(cs, first, second)
	return cs
}

// withNext serves a first page of two features whose next link answers
// with second.
func withNext(second Responder) Responder {
	return ogcItems(func(w http.ResponseWriter, r *Request) {
		if r.URL.Query().Get("page") != "" {
			second(w, r)
			return
		}
		writeOGCPage(w, ogcPage{matched: 4, returned: 2, ids: []int{0, 1}, next: pageURL(r, 1)})
	})
}

// ogcapiTruncated are items pages cut short, the first or a later one.
func ogcapiTruncated() (cs []Case) {
	const class = "OGC API: truncated pages"
	full := ogcPaged(func(r *Request, n int) ogcPage {
		p := ogcPage{matched: 4, returned: 2, ids: []int{2 * n, 2*n + 1}, next: pageURL(r, n+1)}
		if n == 1 {
			p.next = ""
		}
		return p
	})
	for _, t := range []struct {
		mode string
		n    int
		late bool
	}{{cutReset, 100, false}, {cutFIN, -1, false}, {cutChunked, 250, false}, {cutClean, -2, false}, {cutReset, 150, true}, {cutClean, 40, true}} {
		name := "ogcapi_trunc_" + t.mode + "_" + strconv.Itoa(t.n)
		r := cutAnswer(full, t.n, t.mode)
		if t.late {
			name = "ogcapi_trunc_second_" + t.mode
			r = withNext(r)
		}
		cs = append(cs, failCase(name, class, OGCAPI, ogcItems(r), "unexpected EOF", "connection reset", "unexpected end"))
	}
	return cs
}

// ogcapiBombs are bombs in the items and in the discovery documents.
func ogcapiBombs() (cs []Case) {
	const class = "OGC API: bombs"
	fail := func(name string, r Responder, errs ...string) {
		cs = append(cs, failCase(name, class, OGCAPI, r, errs...))
	}
	fail("ogcapi_bomb_string_gzip", ogcItems(stream(ctGeo, true, text(`{"type":"FeatureCollection","numberMatched":1,"features":[{"type":"Feature","id":"big","geometry":null,"properties":{"big":"`),
		repeatBytes('a', 2*gib), text(`"}}]}`))), "limits.value_bytes")
	fail("ogcapi_bomb_deep", ogcItems(stream(ctGeo, false, text(`{"type":"FeatureCollection","numberMatched":1,"features":[{"type":"Feature","id":"d","geometry":null,"properties":{"deep":`),
		generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, '[') }},
		generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, ']') }},
		text(`}}]}`))), "nested")
	fail("ogcapi_bomb_links", ogcItems(stream(ctGeo, true, text(`{"type":"FeatureCollection","numberMatched":0,"features":[],"links":[`),
		generator{sep: ",", n: 200_000_000, item: func(b []byte, _ int64) []byte { return append(b, `{"rel":"x","href":"http://x/"}`...) }},
		text(`]}`))), "limits.feature_bytes", "limits.body_bytes")
	fail("ogcapi_bomb_collection_doc", ogcOn("/collections/points", stream(ctJSON, true, text(`{"id":"points","links":[`),
		generator{sep: ",", n: 200_000_000, item: func(b []byte, _ int64) []byte { return append(b, `{}`...) }},
		text(`]}`)), nil), "collection document")
	return cs
}
