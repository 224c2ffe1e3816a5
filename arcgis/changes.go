package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/source"
)

// Change tracking. A FeatureServer layer whose capabilities
// name ChangeTracking (ArcGIS Online "keep track of changes", Enterprise
// archive-enabled or branch-versioned layers) has its service's
// changeTrackingInfo read before its features: the layer's serverGen is
// stored with the applied snapshot. The next poll of the changed layer
// asks the service's extractChanges for the ids added, updated or deleted
// since that generation (returnIdsOnly: what the oldest servers'
// extractChangesCapabilities offer), fetches the added and updated ones
// by objectIds like any page, and hands the store the id list as a delta,
// proven as the edit-date path's is. A stored generation below the
// layer's minServerGen (the log was pruned), a job instead of an answer
// (async), an answer of another shape or an error: the poll reads the
// layer the next way (edit date, or whole), and says why once per feed.

// trackingInfo is a layer's entry of the service's
// changeTrackingInfo.layerServerGens.
type trackingInfo struct {
	ID           int   `json:"id"`
	MinServerGen int64 `json:"minServerGen"`
	ServerGen    int64 `json:"serverGen"`
}

// serviceURL is the FeatureServer of a layer URL (…/FeatureServer/3),
// and the layer's number; ok is false for a MapServer layer.
func serviceURL(layer *url.URL) (svc url.URL, id int, ok bool) {
	svc = *layer
	i := strings.LastIndex(svc.Path, "/")
	if i < 0 || !strings.HasSuffix(svc.Path[:i], "/FeatureServer") {
		return svc, 0, false
	}
	id, err := strconv.Atoi(svc.Path[i+1:])
	svc.Path = svc.Path[:i]
	svc.RawQuery = ""
	return svc, id, err == nil
}

// readTracking reads the layer's server generations from its service
// (changeTrackingInfo), when the layer says it tracks changes; a service
// that does not answer them leaves d.tracking nil (the layer is read
// another way, and the reason noted once).
func (d *dump) readTracking(ctx context.Context, base *url.URL) error {
	if settingsOf(d.layer).Incremental == IncrementalOff || !strings.Contains(","+strings.ToLower(d.info.Capabilities)+",", ",changetracking,") {
		return nil
	}
	svc, id, ok := serviceURL(base)
	if !ok {
		return nil
	}
	q := url.Values{"f": {"json"}}
	svc.RawQuery = q.Encode()
	var doc struct {
		ChangeTrackingInfo *struct {
			LayerServerGens []trackingInfo `json:"layerServerGens"`
		} `json:"changeTrackingInfo"`
	}
	if err := d.callJSON(ctx, document{name: "service description", max: MaxDescriptionBytes, bound: "the bound of a layer's description"}, &svc, nil, &doc); err != nil {
		return err
	}
	if doc.ChangeTrackingInfo != nil {
		for _, g := range doc.ChangeTrackingInfo.LayerServerGens {
			if g.ID == id && g.ServerGen > 0 {
				d.tracking = &g
				return nil
			}
		}
	}
	d.c.noteOnce(d.layer.URL, "no-gens", func() {
		d.warn("the layer names ChangeTracking but its service's changeTrackingInfo has no serverGen for it: reading it another way")
	})
	return nil
}

// errLogUnusable is an extractChanges answer ingestd cannot use: the poll
// reads the layer another way.
var errLogUnusable = errors.New("the change log cannot be used")

// changeLog is what extractChanges answered with returnIdsOnly.
type changeLog struct {
	StatusURL       string         `json:"statusUrl"`
	LayerServerGens []trackingInfo `json:"layerServerGens"`
	Edits           []struct {
		ID        int `json:"id"`
		ObjectIDs *struct {
			Adds    []int64 `json:"adds"`
			Updates []int64 `json:"updates"`
			Deletes []int64 `json:"deletes"`
		} `json:"objectIds"`
	} `json:"edits"`
}

// extractChanges asks the service for the ids changed since gen; an
// answer it cannot use is an error saying why (the caller reads the layer
// another way).
func (d *dump) extractChanges(ctx context.Context, base *url.URL, gen int64) (changed []int64, next int64, err error) {
	svc, id, _ := serviceURL(base)
	svc.Path += "/extractChanges"
	gens, _ := json.Marshal([]map[string]int64{{"id": int64(id), "serverGen": gen}})
	form := url.Values{"f": {"json"}, "layers": {"[" + strconv.Itoa(id) + "]"}, "layerServerGens": {string(gens)},
		"returnInserts": {"true"}, "returnUpdates": {"true"}, "returnDeletes": {"true"}, "returnIdsOnly": {"true"},
		"dataFormat": {"json"}}
	if w := settingsOf(d.layer).Where; w != "" {
		lq, _ := json.Marshal(map[string]any{strconv.Itoa(id): map[string]any{"where": w}})
		form.Set("layerQueries", string(lq))
	}
	var log changeLog
	doc := document{name: "change log", max: IDListBaseBytes + IDListBytesPerID*int64(d.stats.NumberMatched+1),
		bound: "the bound of an id list of the layer's count"}
	if err := d.callJSON(ctx, doc, &svc, form, &log); err != nil {
		return nil, 0, err
	}
	if log.StatusURL != "" {
		return nil, 0, fmt.Errorf("%w: extractChanges answered with a job (statusUrl), which ingestd does not wait for", errLogUnusable)
	}
	for _, g := range log.LayerServerGens {
		if g.ID == id {
			next = g.ServerGen
		}
	}
	if next <= 0 {
		return nil, 0, fmt.Errorf("%w: extractChanges answered no serverGen for layer %d", errLogUnusable, id)
	}
	for _, e := range log.Edits {
		if e.ID != id {
			continue
		}
		if e.ObjectIDs == nil {
			return nil, 0, fmt.Errorf("%w: extractChanges answered edits without objectIds for layer %d", errLogUnusable, id)
		}
		changed = append(append(changed, e.ObjectIDs.Adds...), e.ObjectIDs.Updates...)
	}
	return changed, next, nil
}

// fromLog fetches the features the change log says were added or updated
// since prev's generation, of those in ids, and hands the store the whole
// id list (FetchStats.Delta). An unusable log returns false: the caller
// reads the layer another way.
func (d *dump) fromLog(ctx context.Context, base *url.URL, ids *idList, prev layerVersion, handle source.PageFunc) (bool, error) {
	changed, next, err := d.extractChanges(ctx, base, prev.serverGen)
	if err != nil {
		var be *BodyError
		if !fallback(err) && !errors.As(err, &be) && !errors.Is(err, errLogUnusable) {
			return false, err
		}
		d.c.noteOnce(d.layer.URL, "extract", func() {
			d.warn(fmt.Sprintf("change tracking: %v; reading the layer another way", err))
		})
		return false, nil
	}
	sel := &idList{}
	for _, id := range changed {
		if ids.contains(id) {
			sel.add(id)
		}
	}
	sel.sort()
	dedup := &idList{}
	for i := range sel.n {
		if i == 0 || sel.at(i) != sel.at(i-1) {
			dedup.add(sel.at(i))
		}
	}
	if err := d.byIDs(ctx, dedup, handle); err != nil {
		return true, err
	}
	d.tracking.ServerGen = next
	d.stats.Mode = source.ModeChangeTracking
	d.stats.Delta = &source.Delta{IDs: source.IDs{Int: ids.slice(0, ids.n)}, Since: source.Watermark{Field: "serverGen", Value: strconv.FormatInt(prev.serverGen, 10)}}
	return true, nil
}

// noteOnce runs note the first time key is seen for layer (a warning
// about a layer's change tracking is said once per feed, not every poll).
func (c *Client) noteOnce(layer, key string, note func()) {
	if _, seen := c.noted.LoadOrStore(layer+"\x00"+key, true); !seen {
		note()
	}
}
