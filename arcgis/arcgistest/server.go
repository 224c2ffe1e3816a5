// Package arcgistest is a fixture ArcGIS REST server (FeatureServer layers
// answering f=json) with the misbehaviours real servers show in the field
// and Koop does not produce: error objects with status 200, 498/499 token
// errors, no pagination, a cap below the advertised maxRecordCount,
// exceededTransferLimit lies (or true for ever), an id list that fails,
// repeats an id or lists ids no feature has, a lastEditDate that
// moves during a dump, curves, rings in both orientations, multipatch; and
// the hostile ones: gzip bombs in every document (served as they stream,
// so a 470 MB answer costs the server a feature at a time),
// error objects that are not the first member, resultOffset paging that
// never ends.
package arcgistest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/encoding/esrijson"
)

// Feature is one feature of a fixture layer.
type Feature struct {
	OID        int64
	Attributes map[string]any
	// Geometry is written as it is (an Esri JSON geometry), nil for null.
	Geometry any
}

// Faults are a layer's misbehaviours.
type Faults struct {
	// Token, when set, is required: none answers 499, another 498.
	Token string
	// ErrorEvery makes every Nth feature query answer an error object
	// {"error":{"code":500}} with status 200.
	ErrorEvery int
	// BrokenOID makes every feature query that includes it answer an error
	// object with code 500 (a feature the server cannot serialize).
	BrokenOID int64
	// IDsFail makes returnIdsOnly answer an error object with code 500
	// (ArcGIS's answer when the id list times out on a huge layer).
	IDsFail bool
	// IDsDelay holds every returnIdsOnly answer this long (a server whose
	// id list times out behind a proxy).
	IDsDelay time.Duration
	// Cap is the most features one answer holds, below the advertised
	// maxRecordCount; 0 means maxRecordCount.
	Cap int
	// LieExceeded sends exceededTransferLimit false when an answer is capped.
	LieExceeded bool
	// EditAfter moves lastEditDate (and deletes the last feature) after
	// this many feature queries; 0 never.
	EditAfter int
	// DropOID leaves this feature out of every answer by objectIds (the
	// id list still has it).
	DropOID int64
	// HTMLEvery makes every Nth feature query answer a proxy's HTML page
	// with status 200.
	HTMLEvery int
	// BadQuery makes every query answer {"error":{"code":400}}.
	BadQuery bool

	// Gzip serves every answer gzipped (Content-Encoding: gzip), as the
	// bombs below always are.
	Gzip bool
	// DescriptionBomb gives the layer's description a name of this many
	// bytes (a 400 MiB name is about a 400 KB gzip on the wire).
	DescriptionBomb int64
	// CountBomb and StatisticsBomb add a member of this many bytes to
	// those answers.
	CountBomb, StatisticsBomb int64
	// IDListBomb makes the id list the ids 1…IDListBomb, whatever the
	// layer holds (50 million ids make about a 100 KB gzip).
	IDListBomb int64
	// Count, when positive, is what the count answers, whatever the
	// layer holds.
	Count int64
	// IDListPadding writes this many spaces between the ids of the id
	// list, in all.
	IDListPadding int64
	// Padding adds this many bytes to every feature of an objectIds
	// answer, in attributes PAD0, PAD1, … of at most PadValueBytes each
	// (within the default limits.value_bytes).
	Padding int
	// IDsErrorSecond makes the id list answer an error object with code
	// 500 after its objectIdFieldName.
	IDsErrorSecond bool
	// ErrorSecondEvery makes every Nth feature query answer an error
	// object with code 500 after its objectIdFieldName.
	ErrorSecondEvery int
	// ErrorAfterFeaturesEvery makes every Nth feature query send its
	// features, then an error object with code 500.
	ErrorAfterFeaturesEvery int
	// EndlessOffsets makes every resultOffset answer a full page of
	// features with new object ids (past the layer's) and
	// exceededTransferLimit true, however far the offset.
	EndlessOffsets bool
	// Hold, when set, holds every objectIds answer after its first
	// feature until it is closed.
	Hold chan struct{}

	// IDsDuplicate, when set, is an object id the id list holds twice.
	IDsDuplicate int64
	// IDsExtra adds this many ids to the id list that no feature has.
	IDsExtra int
	// ExceededAlways says exceededTransferLimit true in every answer for
	// features, whatever it holds.
	ExceededAlways bool
}

// PadValueBytes is the most bytes one padding attribute holds.
const PadValueBytes = 4_000_000

// gzip reports whether f's answers are gzipped: with Gzip, and with any
// bomb.
func (f Faults) gzip() bool {
	return f.Gzip || f.DescriptionBomb > 0 || f.IDListPadding > 0 || f.CountBomb > 0 || f.StatisticsBomb > 0 || f.IDListBomb > 0 || f.Padding > 0
}

// Layer is a fixture layer.
type Layer struct {
	GeometryType   string
	HasZ, HasM     bool
	WKID           int // 0: 102100 with latestWkid 3857
	MaxRecordCount int
	NoPagination   bool
	NoStatistics   bool
	LastEditDate   int64
	Fields         []esrijson.Field
	Features       []Feature
	Faults         Faults
	// EditDateField, when set, is the layer's editFieldsInfo.editDateField
	// (a date field of Fields every feature carries, see Tracked), and a
	// where clause "<field> > TIMESTAMP 'YYYY-MM-DD HH:MM:SS'" selects by it.
	EditDateField string
	// ChangeTracking makes the layer's capabilities name ChangeTracking
	// and its service answer changeTrackingInfo and extractChanges from
	// the layer's change log (changes.go).
	ChangeTracking bool
	Tracking       Tracking

	idx map[int64]int
	// editDates is the edit date field's column, Features' order (see
	// editedSince).
	editDates []int64
}

// index maps object ids to positions in Features. Edit builds it again
// after the change, as a database keeps its index on write: the first
// query after an edit does not pay for the whole layer's index.
func (l *Layer) index() map[int64]int {
	if l.idx == nil || len(l.idx) != len(l.Features) {
		l.idx = make(map[int64]int, len(l.Features))
		for i, f := range l.Features {
			l.idx[f.OID] = i
		}
	}
	return l.idx
}

// Server serves layers at /arcgis/rest/services/<name>/FeatureServer/0.
type Server struct {
	mu       sync.Mutex
	layers   map[string]*Layer
	queries  map[string]int // feature queries per layer
	requests map[string][]string
}

// New returns an empty server.
func New() *Server {
	return &Server{layers: map[string]*Layer{}, queries: map[string]int{}, requests: map[string][]string{}}
}

// URL is the layer's URL on a server at base.
func URL(base, name string) string {
	return base + "/arcgis/rest/services/" + name + "/FeatureServer/0"
}

// AddLayer adds (or replaces) a layer.
func (s *Server) AddLayer(name string, l *Layer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.MaxRecordCount == 0 {
		l.MaxRecordCount = 1000
	}
	if l.LastEditDate == 0 {
		l.LastEditDate = 1700000000000
	}
	l.idx, l.editDates = nil, nil
	s.layers[name] = l
	s.queries[name] = 0
	s.requests[name] = nil
}

// Edit changes a layer under the lock (a test's edit between polls). A
// layer served is changed through Edit only: it keeps the object-id index
// and the edit date column in step.
func (s *Server) Edit(name string, fn func(*Layer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.layers[name]
	fn(l)
	l.idx, l.editDates = nil, nil
	l.index()
	l.editDateColumn()
}

// Requests lists the requests a layer got: "probe", "count", "ids",
// "stats", "objectIds:N", "window", "offset:N".
func (s *Server) Requests(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests[name])
}

// ResetRequests forgets the requests the layer got so far.
func (s *Server) ResetRequests(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[name] = nil
}

var pathRE = regexp.MustCompile(`^/arcgis/rest/services/([^/]+)/(?:FeatureServer|MapServer)/0(/query)?/?$`)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := pathRE.FindStringSubmatch(r.URL.Path)
	if m == nil && s.service(w, r) {
		return
	}
	if m == nil {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid URL", "details": []string{"Invalid URL"}}})
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.layers[m[1]]
	if !ok {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 404, "message": "Service not found"}})
		return
	}
	if tok := l.Faults.Token; tok != "" {
		got := strings.TrimPrefix(r.Header.Get("X-Esri-Authorization"), "Bearer ")
		switch {
		case got == "":
			writeJSON(w, map[string]any{"error": map[string]any{"code": 499, "message": "Token Required"}})
			return
		case got != tok:
			writeJSON(w, map[string]any{"error": map[string]any{"code": 498, "message": "Invalid Token"}})
			return
		}
	}
	if m[2] == "" {
		s.note(m[1], "probe")
		s.probe(w, r, l)
		return
	}
	s.query(w, r, m[1], l)
}

func (s *Server) note(name, what string) { s.requests[name] = append(s.requests[name], what) }

func (s *Server) probe(w http.ResponseWriter, r *http.Request, l *Layer) {
	sr := map[string]any{"wkid": 102100, "latestWkid": 3857}
	if l.WKID != 0 {
		sr = map[string]any{"wkid": l.WKID}
	}
	oid := "OBJECTID"
	if l.GeometryType == esrijson.TypeMultiPatch {
		oid = "OBJECTID"
	}
	doc := map[string]any{
		"currentVersion": 11.1, "id": 0, "name": "fixture", "type": "Feature Layer",
		"geometryType": l.GeometryType, "hasZ": l.HasZ, "hasM": l.HasM,
		"objectIdField": oid, "maxRecordCount": l.MaxRecordCount,
		"supportsStatistics": !l.NoStatistics,
		"advancedQueryCapabilities": map[string]any{
			"supportsPagination": !l.NoPagination, "supportsStatistics": !l.NoStatistics, "supportsOrderBy": true,
		},
		"extent":      map[string]any{"xmin": 0, "ymin": 0, "xmax": 1, "ymax": 1, "spatialReference": sr},
		"fields":      l.Fields,
		"editingInfo": map[string]any{"lastEditDate": l.LastEditDate},
	}
	if l.EditDateField != "" {
		doc["editFieldsInfo"] = map[string]any{"editDateField": l.EditDateField}
	}
	if l.ChangeTracking {
		doc["capabilities"] = "Query,ChangeTracking"
	}
	if n := l.Faults.DescriptionBomb; n > 0 {
		delete(doc, "name")
		s.unlocked(func() { writeBomb(w, doc, "name", n) })
		return
	}
	writeDoc(w, l.Faults, doc)
}

// unlocked runs fn without the server's lock (ServeHTTP holds it): a long
// answer does not hold up the others.
func (s *Server) unlocked(fn func()) {
	s.mu.Unlock()
	defer s.mu.Lock()
	fn()
}

var windowRE = regexp.MustCompile(`OBJECTID > (-?\d+) AND OBJECTID <= (-?\d+)`)

func (s *Server) query(w http.ResponseWriter, r *http.Request, name string, l *Layer) {
	f := r.Form
	if l.Faults.BadQuery {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Unable to complete operation.", "details": []string{"'where' parameter is invalid"}}})
		return
	}
	feats := l.Features
	if mm := windowRE.FindStringSubmatch(f.Get("where")); mm != nil {
		a, _ := strconv.ParseInt(mm[1], 10, 64)
		b, _ := strconv.ParseInt(mm[2], 10, 64)
		feats = selected(feats, func(ft Feature) bool { return ft.OID > a && ft.OID <= b })
	}
	if after, ok := l.editedAfter(f.Get("where")); ok {
		feats = l.editedSince(feats, after)
	}
	switch {
	case f.Get("returnCountOnly") == "true":
		s.note(name, "count")
		s.count(w, l, feats)
	case f.Get("returnIdsOnly") == "true":
		s.note(name, "ids")
		s.ids(w, r, l, feats)
	case f.Get("outStatistics") != "":
		s.note(name, "stats")
		s.statistics(w, l, feats)
	default:
		s.features(w, r, name, l, feats)
	}
}

// selected is the features keep accepts, in their order: a where clause
// filtered without copying the layer (a copy of 100,000 features per query
// was most of the fixture's answer to an edit-date query).
func selected(feats []Feature, keep func(Feature) bool) []Feature {
	var sel []Feature
	for _, ft := range feats {
		if keep(ft) {
			sel = append(sel, ft)
		}
	}
	return sel
}

// count answers returnCountOnly.
func (s *Server) count(w http.ResponseWriter, l *Layer, feats []Feature) {
	doc := map[string]any{"count": int64(len(feats))}
	if n := l.Faults.Count; n > 0 {
		doc["count"] = n
	}
	if n := l.Faults.CountBomb; n > 0 {
		s.unlocked(func() { writeBomb(w, doc, "padding", n) })
		return
	}
	writeDoc(w, l.Faults, doc)
}

// ids answers returnIdsOnly, in no promised order, as real servers do.
func (s *Server) ids(w http.ResponseWriter, r *http.Request, l *Layer, feats []Feature) {
	if d := l.Faults.IDsDelay; d > 0 {
		s.unlocked(func() {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			}
		})
	}
	switch {
	case l.Faults.IDsFail:
		writeJSON(w, map[string]any{"error": map[string]any{"code": 500, "message": "Error performing query operation", "details": []string{"The operation timed out"}}})
		return
	case l.Faults.IDsErrorSecond:
		writeRaw(w, l.Faults, `{"objectIdFieldName":"OBJECTID","error":{"code":500,"message":"Error performing query operation","details":["The operation timed out"]}}`)
		return
	case l.Faults.IDListBomb > 0:
		s.unlocked(func() { writeIDListBomb(w, l.Faults.IDListBomb) })
		return
	}
	ids := make([]int64, len(feats))
	for i, ft := range feats {
		ids[i] = ft.OID
	}
	if id := l.Faults.IDsDuplicate; id != 0 {
		ids = append(ids, id)
	}
	for i := range l.Faults.IDsExtra {
		ids = append(ids, int64(2_000_000+i))
	}
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if n := l.Faults.IDListPadding; n > 0 {
		s.unlocked(func() { writeSpaced(w, ids, n) })
		return
	}
	doc, _ := json.Marshal(map[string]any{"objectIdFieldName": "OBJECTID", "objectIds": ids})
	writeRaw(w, l.Faults, string(doc))
}

// statistics answers outStatistics: the least and greatest object id.
func (s *Server) statistics(w http.ResponseWriter, l *Layer, feats []Feature) {
	if l.NoStatistics {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Statistics not supported"}})
		return
	}
	attrs := map[string]any{"oid_min": nil, "oid_max": nil}
	if len(feats) > 0 {
		lo, hi := feats[0].OID, feats[0].OID
		for _, ft := range feats {
			lo, hi = min(lo, ft.OID), max(hi, ft.OID)
		}
		attrs = map[string]any{"OID_MIN": lo, "OID_MAX": hi}
	}
	doc := map[string]any{"features": []any{map[string]any{"attributes": attrs}}}
	if n := l.Faults.StatisticsBomb; n > 0 {
		s.unlocked(func() { writeBomb(w, doc, "padding", n) })
		return
	}
	writeDoc(w, l.Faults, doc)
}

// features answers a query for features: by objectIds, by resultOffset,
// or a window of object ids (feats, already), after the faults that
// replace or spoil the answer.
func (s *Server) features(w http.ResponseWriter, r *http.Request, name string, l *Layer, feats []Feature) {
	errorAfter, answered := s.featureFaults(w, name, l)
	if answered {
		return
	}
	f := r.Form
	capN := l.MaxRecordCount
	if l.Faults.Cap > 0 {
		capN = l.Faults.Cap
	}
	switch {
	case f.Get("objectIds") != "":
		var ok bool
		if feats, ok = s.byObjectIDs(w, f.Get("objectIds"), name, l, feats); !ok {
			return
		}
	case f.Get("resultOffset") != "":
		var done bool
		if feats, capN, done = s.byOffset(w, r, name, l, feats, capN); done {
			return
		}
	default:
		s.note(name, "window")
	}
	exceeded := l.Faults.ExceededAlways
	if len(feats) > capN {
		feats = feats[:capN]
		exceeded = !l.Faults.LieExceeded
	}
	// Encode without the lock: requests in parallel are served in
	// parallel, as a real server's are.
	a := answerOf(l, feats, exceeded, errorAfter)
	s.unlocked(func() { a.write(w, r) })
}

// featureFaults counts a feature query and answers it when a fault
// replaces the answer (answered); errorAfter says an error object is to
// follow the features.
func (s *Server) featureFaults(w http.ResponseWriter, name string, l *Layer) (errorAfter, answered bool) {
	s.queries[name]++
	n := s.queries[name]
	every := func(e int) bool { return e > 0 && n%e == 0 }
	if e := l.Faults.EditAfter; e > 0 && n == e+1 {
		l.LastEditDate += 1000
		l.Features = l.Features[:len(l.Features)-1]
	}
	switch {
	case every(l.Faults.ErrorEvery):
		s.note(name, "error")
		writeJSON(w, map[string]any{"error": map[string]any{"code": 500, "message": "Error performing query operation"}})
		return false, true
	case every(l.Faults.ErrorSecondEvery):
		s.note(name, "error")
		writeRaw(w, l.Faults, `{"objectIdFieldName":"OBJECTID","error":{"code":500,"message":"Error performing query operation"}}`)
		return false, true
	case every(l.Faults.ErrorAfterFeaturesEvery):
		s.note(name, "error")
		errorAfter = true
	}
	if every(l.Faults.HTMLEvery) {
		s.note(name, "html")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head><title>502 Bad Gateway</title></head><body>bad gateway</body></html>")
		return false, true
	}
	return errorAfter, false
}

// byObjectIDs selects the features of the objectIds list, in the layer's
// order, or answers the request itself (an invalid list, a broken
// feature) and reports false.
func (s *Server) byObjectIDs(w http.ResponseWriter, list, name string, l *Layer, feats []Feature) ([]Feature, bool) {
	want := map[int64]bool{}
	for _, p := range strings.Split(list, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid objectIds"}})
			return nil, false
		}
		want[id] = true
	}
	s.note(name, "objectIds:"+strconv.Itoa(len(want)))
	if want[l.Faults.BrokenOID] && l.Faults.BrokenOID != 0 {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 500, "message": "Error performing query operation"}})
		return nil, false
	}
	// By the index, in the layer's order: a benchmark measures the
	// client, not a scan of the layer per request.
	idx := l.index()
	var pos []int
	for id := range want {
		if i, ok := idx[id]; ok && i < len(feats) && id != l.Faults.DropOID {
			pos = append(pos, i)
		}
	}
	slices.Sort(pos)
	sel := make([]Feature, len(pos))
	for k, i := range pos {
		sel[k] = feats[i]
	}
	return sel, true
}

// byOffset selects a resultOffset page ordered by object id, capped at
// resultRecordCount; done says the request is answered already (paging
// refused, or the endless pages of EndlessOffsets).
func (s *Server) byOffset(w http.ResponseWriter, r *http.Request, name string, l *Layer, feats []Feature, capN int) ([]Feature, int, bool) {
	f := r.Form
	if l.NoPagination {
		s.note(name, "offset refused")
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Pagination is not supported."}})
		return nil, 0, true
	}
	off, _ := strconv.Atoi(f.Get("resultOffset"))
	cnt, _ := strconv.Atoi(f.Get("resultRecordCount"))
	s.note(name, "offset:"+strconv.Itoa(off))
	if l.Faults.EndlessOffsets {
		// A full page of features no one has seen, and more to come.
		page := make([]Feature, min(cnt, capN))
		for i := range page {
			page[i] = Feature{OID: int64(1_000_000 + off + i)}
			if len(l.Features) > 0 {
				page[i].Geometry = l.Features[0].Geometry
			}
		}
		a := answerOf(l, page, true, false)
		s.unlocked(func() { a.write(w, r) })
		return nil, 0, true
	}
	byOID := func(a, b Feature) int { return int(a.OID - b.OID) }
	if !slices.IsSortedFunc(feats, byOID) {
		feats = slices.Clone(feats)
		slices.SortFunc(feats, byOID)
	}
	feats = feats[min(off, len(feats)):]
	if cnt > 0 && cnt < capN {
		capN = cnt
	}
	return feats, capN, false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Squares is a polygon layer of n unit squares (clockwise, exterior only)
// on a grid, every fifth with a counter-clockwise hole, every seventh
// written with both rings the other way round; ids 1..n.
func Squares(n int) *Layer {
	l := &Layer{GeometryType: esrijson.TypePolygon, WKID: 2264,
		Fields: []esrijson.Field{{Name: "OBJECTID", Type: esrijson.FieldOID}, {Name: "NAME", Type: "esriFieldTypeString"}, {Name: "UPDATED", Type: esrijson.FieldDate}}}
	for i := range n {
		x, y := float64(i%100)*10, float64(i/100)*10
		outer := [][]float64{{x, y}, {x, y + 8}, {x + 8, y + 8}, {x + 8, y}, {x, y}}
		rings := [][][]float64{outer}
		if i%5 == 0 {
			rings = append(rings, [][]float64{{x + 2, y + 2}, {x + 4, y + 2}, {x + 4, y + 4}, {x + 2, y + 4}, {x + 2, y + 2}})
		}
		if i%7 == 0 {
			for _, r := range rings {
				slices.Reverse(r)
			}
		}
		l.Features = append(l.Features, Feature{OID: int64(i + 1),
			Attributes: map[string]any{"NAME": "parcel " + strconv.Itoa(i+1), "UPDATED": 1700000000000 + int64(i)*86400000},
			Geometry:   map[string]any{"rings": rings}})
	}
	return l
}
