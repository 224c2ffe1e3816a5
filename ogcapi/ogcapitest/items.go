package ogcapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	gj "github.com/twpayne/go-geom/encoding/geojson"
	"github.com/twpayne/go-geom/encoding/wkt"
)

// itemsPage is what one items response holds: features [start, end) of
// the collection, its links and the CRS of its coordinates.
type itemsPage struct {
	id            string
	c             *Collection
	start, end    int
	self, next    string
	crs, label    string // the coordinates' CRS ("" for CRS84), the Content-Crs
	numberMatched int
}

// serveItems serves one page of collection id.
func (s *Server) serveItems(w http.ResponseWriter, r *http.Request, base, id string, c *Collection) {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	gen, ok := s.itemsRequest(w, r, id, offset)
	if !ok {
		return
	}
	limit, ok := s.itemsLimit(w, q.Get("limit"), c)
	if !ok {
		return
	}
	crs := q.Get("crs")
	switch crs {
	case "", CRS84, EPSG4326, EPSG3857:
	default:
		s.fail(w, http.StatusBadRequest, "InvalidParameterValue", "unsupported crs "+crs)
		return
	}
	n := c.Layer.Len()
	if c.Hits && strings.EqualFold(q.Get("resulttype"), "hits") {
		w.Header().Set("Content-Type", "application/geo+json")
		fmt.Fprintf(w, `{"type":"FeatureCollection","features":[],"numberMatched":%d,"numberReturned":0}`, n)
		return
	}
	p := itemsPage{id: id, c: c, crs: crs, numberMatched: n}
	serve := pageSpan(&p, offset, limit)
	if s.Mode == TiPg && q.Get("f") == "json" {
		writeRows(w, &p)
		return
	}
	page := func(o int) string { return s.pageURL(base, r, limit, gen, o) }
	p.self = page(offset)
	switch {
	case c.Pitfall == ZeroLimitSelf:
		p.next = p.self
	case c.Pitfall == NextLoop && offset == 2*limit:
		p.next = page(limit)
	case c.Pitfall == OffsetIgnored:
		if offset+limit < n {
			p.next = page(offset + limit)
		}
	case (c.Pitfall == NoNextOnFullPage || c.Pitfall == NoNextNoNumberMatched) && offset == limit && p.end < n:
	case offset+serve < n:
		p.next = page(offset + serve)
	case s.Mode == PyGeoAPI && p.end-p.start == limit && limit > 0:
		// pygeoapi: a full page links on, even the last one.
		p.next = page(offset + limit)
	}
	if c.Pitfall == Exception200 && offset > 0 {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "NoApplicableCode", "description": "database connection lost"})
		return
	}
	p.label = crs
	if p.label == "" {
		p.label = CRS84
	}
	if c.Pitfall == WrongContentCRS {
		if crs == "" || crs == CRS84 {
			p.label = EPSG3857
		}
		p.crs = "" // the coordinates stay CRS84
	}
	if s.answer304(w, r, id, c) {
		return
	}
	if s.Mode != TiPg {
		w.Header().Set("Content-Crs", "<"+p.label+">")
	}
	s.writePage(w, &p)
}

// itemsRequest counts an items request, calls the hook and refuses an
// expired cursor; it returns the cursors' generation.
func (s *Server) itemsRequest(w http.ResponseWriter, r *http.Request, id string, offset int) (int, bool) {
	s.mu.Lock()
	s.items[id+"?"+strconv.Itoa(offset)]++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.conditional[id]++
	}
	gen := s.generation
	hook := s.Hook
	s.mu.Unlock()
	if hook != nil {
		hook(id, offset)
	}
	if v := r.URL.Query().Get("cursor"); v != "" && v != strconv.Itoa(gen) {
		s.fail(w, http.StatusBadRequest, "InvalidParameterValue", "cursor "+v+" expired")
		return gen, false
	}
	return gen, true
}

// pageSpan sets the features the page at offset holds, by the
// collection's Pitfall, and returns how many a correct page would hold.
func pageSpan(p *itemsPage, offset, limit int) int {
	serve, start := limit, offset
	switch p.c.Pitfall {
	case ZeroLimitSelf:
		serve = 0
	case OffsetIgnored:
		start = 0
	case ShortPages:
		serve = max(1, limit/3)
	case Duplicates:
		if start > 0 {
			start--
		}
	case OverlapNoIDs:
		if start > 0 {
			start -= limit / 2
		}
	}
	n := p.c.Layer.Len()
	p.start, p.end = min(start, n), min(n, start+serve)
	return serve
}

// answer304 answers the collection's ETag, and 304 to a request that
// has it.
func (s *Server) answer304(w http.ResponseWriter, r *http.Request, id string, c *Collection) bool {
	if c.ETag == "" {
		return false
	}
	w.Header().Set("ETag", c.ETag)
	if r.Header.Get("If-None-Match") != c.ETag {
		return false
	}
	// As a static host or a caching proxy answers the validator.
	s.mu.Lock()
	s.notModified[id]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNotModified)
	return true
}

// writePage writes the page as a GeoJSON FeatureCollection.
func (s *Server) writePage(w http.ResponseWriter, p *itemsPage) {
	c := p.c
	w.Header().Set("Content-Type", "application/geo+json")
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, `{"type":"FeatureCollection","features":[`...)
	var tmp []byte
	for i := p.start; i < p.end; i++ {
		if i > p.start {
			buf = append(buf, ',')
		}
		switch {
		case c.Pitfall == DuplicateInPage && i == 5:
			tmp = c.Layer.AppendFeature(tmp[:0], 4)
		case c.Pitfall == OverlapNoIDs:
			tmp = topLevelID.ReplaceAll(c.Layer.AppendFeature(tmp[:0], i), []byte(`{"type":"Feature",`))
		default:
			tmp = c.Layer.AppendFeature(tmp[:0], i)
		}
		if p.crs != "" && p.crs != CRS84 {
			tmp = reproject(tmp, p.crs)
		}
		buf = append(buf, tmp...)
		if len(buf) > 256<<10 {
			_, _ = w.Write(buf)
			buf = buf[:0]
		}
	}
	buf = append(buf, `],"links":[`...)
	buf = appendLink(buf, p.self, "self")
	if p.next != "" {
		buf = append(buf, ',')
		buf = appendLink(buf, p.next, "next")
	}
	buf = append(buf, ']')
	switch c.Pitfall {
	case NoNumberMatched, OverlapNoIDs, NoNextNoNumberMatched:
	case NumberMatchedString:
		buf = fmt.Appendf(buf, `,"numberMatched":"%d"`, p.numberMatched)
	case NumberMatchedUnknown:
		buf = append(buf, `,"numberMatched":"unknown"`...)
	case ApproxNumberMatched:
		buf = fmt.Appendf(buf, `,"numberMatched":%d`, (p.numberMatched+99)/100*100)
	default:
		buf = fmt.Appendf(buf, `,"numberMatched":%d`, p.numberMatched)
	}
	buf = fmt.Appendf(buf, `,"numberReturned":%d}`+"\n", max(0, p.end-p.start))
	_, _ = w.Write(buf)
}

// writeRows answers tipg's f=json on items: a JSON array of flat rows,
// the geometry as EWKT (tipg/factory.py, output_type json).
func writeRows(w http.ResponseWriter, p *itemsPage) {
	rows := []map[string]any{}
	for i := p.start; i < p.end; i++ {
		var f gj.Feature
		if err := json.Unmarshal(p.c.Layer.AppendFeature(nil, i), &f); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		row := map[string]any{"collectionId": p.id, "itemId": f.ID}
		for k, v := range f.Properties {
			row[k] = v
		}
		if f.Geometry != nil {
			text, _ := wkt.Marshal(f.Geometry)
			row["geometry"] = "SRID=4326;" + text
		}
		rows = append(rows, row)
	}
	writeJSON(w, rows)
}

// topLevelID is a layertest feature's leading type and id members.
var topLevelID = regexp.MustCompile(`^\{"type":"Feature","id":"[^"]*",`)
