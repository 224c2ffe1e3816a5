package hostile

import (
	"net/http"
	"strconv"
	"strings"
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
