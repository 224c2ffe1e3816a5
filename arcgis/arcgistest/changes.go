package arcgistest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
)

// Change tracking, as Esri's REST reference describes it: a
// layer with ChangeTracking has a change log of generations; its service
// (…/FeatureServer) answers changeTrackingInfo.layerServerGens and
// extractChanges (POST, returnIdsOnly) with the ids added, updated and
// deleted since a generation, or an error when the log was pruned past it
// (minServerGen).

// Tracking is a layer's change log.
type Tracking struct {
	// ServerGen is the layer's generation now; MinServerGen the oldest the
	// log still answers from (raise it to prune).
	ServerGen, MinServerGen int64
	// Log holds the changes, in order.
	Log []Change
	// Async answers extractChanges with a job's statusUrl; Error with an
	// error object. (Churn's Silent edits are left out of the log.)
	Async, Error bool
}

// Change is one entry of a change log.
type Change struct {
	Gen  int64
	OID  int64
	Kind string // "adds", "updates" or "deletes"
}

// record logs a change at the layer's next generation (Churn calls it).
func (l *Layer) record(oid int64, kind string) {
	if !l.ChangeTracking {
		return
	}
	l.Tracking.Log = append(l.Tracking.Log, Change{Gen: l.Tracking.ServerGen + 1, OID: oid, Kind: kind})
}

var serviceRE = regexp.MustCompile(`^/arcgis/rest/services/([^/]+)/FeatureServer(/extractChanges)?/?$`)

// service answers a layer's service: its description and extractChanges.
// It reports false for another path.
func (s *Server) service(w http.ResponseWriter, r *http.Request) bool {
	m := serviceRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return false
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.layers[m[1]]
	if !ok {
		writeJSON(w, map[string]any{"error": map[string]any{"code": 404, "message": "Service not found"}})
		return true
	}
	if m[2] == "" {
		s.note(m[1], "service")
		doc := map[string]any{"currentVersion": 11.1, "layers": []any{map[string]any{"id": 0, "name": "fixture"}}}
		if l.ChangeTracking {
			doc["capabilities"] = "Query,ChangeTracking"
			doc["extractChangesCapabilities"] = map[string]any{"supportsReturnIdsOnly": true}
			doc["changeTrackingInfo"] = map[string]any{"layerServerGens": []any{map[string]any{
				"id": 0, "minServerGen": l.Tracking.MinServerGen, "serverGen": l.Tracking.ServerGen}}}
		}
		writeJSON(w, doc)
		return true
	}
	s.note(m[1], "extractChanges")
	s.extractChanges(w, r, l)
	return true
}

func (s *Server) extractChanges(w http.ResponseWriter, r *http.Request, l *Layer) {
	var gens []struct {
		ID        int   `json:"id"`
		ServerGen int64 `json:"serverGen"`
	}
	t := &l.Tracking
	switch {
	case r.Method != http.MethodPost:
		writeJSON(w, map[string]any{"error": map[string]any{"code": 405, "message": "This operation is only supported via POST"}})
		return
	case !l.ChangeTracking || t.Error:
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Unable to extract changes."}})
		return
	case t.Async:
		writeJSON(w, map[string]any{"statusUrl": "https://example.invalid/jobs/1"})
		return
	case json.Unmarshal([]byte(r.Form.Get("layerServerGens")), &gens) != nil || len(gens) != 1:
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid layerServerGens"}})
		return
	case gens[0].ServerGen < t.MinServerGen:
		writeJSON(w, map[string]any{"error": map[string]any{"code": 400, "message": "The serverGen " + strconv.FormatInt(gens[0].ServerGen, 10) + " is below minServerGen"}})
		return
	}
	ids := map[string][]int64{"adds": {}, "updates": {}, "deletes": {}}
	for _, c := range t.Log {
		if c.Gen > gens[0].ServerGen {
			ids[c.Kind] = append(ids[c.Kind], c.OID)
		}
	}
	writeJSON(w, map[string]any{
		"layerServerGens": []any{map[string]any{"id": 0, "serverGen": t.ServerGen}},
		"edits":           []any{map[string]any{"id": 0, "objectIds": ids}},
	})
}

// WithChangeTracking gives l a change log, empty at generation 1.
func WithChangeTracking(l *Layer) *Layer {
	l.ChangeTracking = true
	l.Tracking = Tracking{ServerGen: 1, MinServerGen: 1}
	return l
}
