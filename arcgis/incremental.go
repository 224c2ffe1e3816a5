package arcgis

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// Incremental refresh by edit date. A layer whose description
// names an editDateField (editFieldsInfo) is read whole once; its
// validators then carry a watermark, the greatest edit date seen in the
// data of the applied snapshot (the server's time, never the poller's).
// The next poll of a changed layer reads the id list as always (the proof
// of completeness), then the ids of the features edited or added after the
// watermark less edit_skew (one more returnIdsOnly, with the edit date in
// the where clause), and fetches only those by objectIds, checked against
// the ids asked as in a full dump. FetchStats.Delta hands the store the
// whole id list: it composes the snapshot (the previous one's other
// features, less the ids no longer listed) and proves it has exactly the
// listed ids before it applies it; a mismatch makes the poll dump the
// layer whole (feeds). A full dump runs at least every full_every, and
// counts what the incremental path had missed (FetchStats.Reconcile).

// layerVersion is an arcgis layer's Validators.Version:
//
//	lastEditDate=<ms>;count=<n>;fields=<digest>[;edit=<field>@<ms>][;gen=<n>][;full=<ms>]
//
// base (up to the fields' digest) proves the layer unchanged when equal;
// edit names the edit date field and the watermark (the greatest edit
// date, Unix milliseconds, in the applied snapshot's data); gen is the
// layer's server generation when the applied snapshot was read (change
// tracking); full is when the last full dump was read (the poller's
// clock: it only schedules the next one). A version stored before
// incremental refresh has only its base.
type layerVersion struct {
	base      string
	editField string
	watermark int64
	serverGen int64
	fullAt    int64
}

func (v layerVersion) String() string {
	s := v.base
	if v.editField != "" && v.watermark > 0 {
		s += ";edit=" + v.editField + "@" + strconv.FormatInt(v.watermark, 10)
	}
	if v.serverGen > 0 {
		s += ";gen=" + strconv.FormatInt(v.serverGen, 10)
	}
	if s != v.base {
		s += ";full=" + strconv.FormatInt(v.fullAt, 10)
	}
	return s
}

// parseLayerVersion reads a stored version; what it cannot read is left
// zero (a full dump follows).
func parseLayerVersion(s string) layerVersion {
	var v layerVersion
	var base []string
	for _, part := range strings.Split(s, ";") {
		key, val, _ := strings.Cut(part, "=")
		switch key {
		case "edit":
			at := strings.LastIndexByte(val, '@')
			if wm, err := strconv.ParseInt(val[at+1:], 10, 64); at > 0 && err == nil {
				v.editField, v.watermark = val[:at], wm
			}
		case "gen":
			v.serverGen, _ = strconv.ParseInt(val, 10, 64)
		case "full":
			v.fullAt, _ = strconv.ParseInt(val, 10, 64)
		default:
			base = append(base, part)
		}
	}
	v.base = strings.Join(base, ";")
	return v
}

// fieldsPart is the fields' digest of a version's base.
func fieldsPart(base string) string {
	_, f, _ := strings.Cut(base, ";fields=")
	return f
}

// editDateField is the layer's edit date field as its fields spell it,
// when an incremental refresh can ask by it: the description names it, it
// is a date field, it is in the query's out fields (the watermark is read
// from the data), and the feature id is the object id (the id list's ids
// name the snapshot's features), and the feed does not say incremental:
// off. "" otherwise.
func (d *dump) editDateField() string {
	if settingsOf(d.layer).Incremental == IncrementalOff || d.info.EditFieldsInfo == nil || d.info.EditFieldsInfo.EditDateField == "" || !strings.EqualFold(d.idField, d.info.ObjectIDField) {
		return ""
	}
	want := d.info.EditFieldsInfo.EditDateField
	for _, f := range d.info.Fields {
		if strings.EqualFold(f.Name, want) && f.Type == "esriFieldTypeDate" {
			if of := d.outFields(); of != "*" && !containsFold(strings.Split(of, ","), f.Name) {
				return ""
			}
			return f.Name
		}
	}
	return ""
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(strings.TrimSpace(e), s) {
			return true
		}
	}
	return false
}

// How a fetch reads a changed layer.
type readMode int

const (
	readAll     readMode = iota // the whole layer
	readEdits                   // the features edited after the watermark
	readChanges                 // the change log since the server generation
)

// due says whether the full dump that reconciles an incremental state is
// due (full_every since the last one), and what its drift is counted
// against; a layer read whole last time (no watermark, no generation)
// owes none.
func (d *dump) due(prev layerVersion) (bool, *source.Reconcile) {
	if prev.watermark <= 0 && prev.serverGen <= 0 {
		return false, nil
	}
	s := settingsOf(d.layer)
	if age := d.c.now().UnixMilli() - prev.fullAt; age >= 0 && age < s.fullEvery().Milliseconds() {
		return false, nil
	}
	d.log.Info("full dump to reconcile the incremental state", "full_every", s.fullEvery().String(), "last_full", millis(prev.fullAt))
	if d.editField == "" || !strings.EqualFold(prev.editField, d.editField) || prev.watermark <= 0 {
		return true, nil
	}
	return true, &source.Reconcile{Field: d.editField, Cutoff: prev.watermark - s.editSkew().Milliseconds()}
}

// plan decides how this fetch reads the changed layer: by the change log
// when the service tracks changes and the log still holds the stored
// generation, else by edit date when the layer has an edit date field
// and a watermark, else whole. A reconciliation (due) or a change of the
// fields reads it whole.
func (d *dump) plan(prev layerVersion, due bool) readMode {
	s := settingsOf(d.layer)
	if prev.editField != "" && d.editField == "" {
		d.log.Info("the layer no longer offers an edit date field (editFieldsInfo) the query returns: dumping it whole", "was", prev.editField)
	}
	if s.Incremental == IncrementalOff || due || fieldsPart(prev.base) != d.info.fieldsDigest() || !strings.EqualFold(d.idField, d.info.ObjectIDField) {
		return readAll
	}
	if d.tracking != nil && prev.serverGen > 0 {
		if prev.serverGen >= d.tracking.MinServerGen {
			return readChanges
		}
		d.c.noteOnce(d.layer.URL, "pruned", func() {
			d.warn(fmt.Sprintf("the change log was pruned past the stored server generation %d (minServerGen %d): reading the layer another way", prev.serverGen, d.tracking.MinServerGen))
		})
	}
	if d.editField != "" && prev.watermark > 0 && strings.EqualFold(prev.editField, d.editField) {
		return readEdits
	}
	return readAll
}

// editWhere is the where clause of the features edited or added after
// cutoff (Unix ms): the feed's where, and the edit date after cutoff
// rounded down to the second (a standardized query's TIMESTAMP literal
// has no milliseconds; rounding down asks a little more, never less).
func (d *dump) editWhere(cutoff int64) string {
	where := settingsOf(d.layer).Where
	if where == "" {
		where = "1=1"
	}
	ts := time.UnixMilli(cutoff).UTC().Truncate(time.Second).Format("2006-01-02 15:04:05")
	return "(" + where + ") AND " + d.editField + " > TIMESTAMP '" + ts + "'"
}

// changes fetches the features edited or added after prev's watermark
// less the skew, of those in ids, and hands the store the whole id list
// (FetchStats.Delta).
func (d *dump) changes(ctx context.Context, ids *idList, prev layerVersion, handle source.PageFunc) error {
	cutoff := prev.watermark - settingsOf(d.layer).editSkew().Milliseconds()
	form := d.form()
	form.Set("where", d.editWhere(cutoff))
	changed, err := d.readIDs(ctx, form, "id list of the edits", ids.n)
	if err != nil {
		return err
	}
	// An id not in the id list was added after it was read: the layer
	// changed during the poll, which its lastEditDate check names.
	sel := &idList{}
	for i := range changed.n {
		if id := changed.at(i); ids.contains(id) {
			sel.add(id)
		}
	}
	d.log.Debug("incremental refresh", "since", millis(cutoff), "changed", sel.n, "ids", ids.n)
	if err := d.byIDs(ctx, sel, handle); err != nil {
		return err
	}
	d.stats.Mode = source.ModeEditDate
	d.stats.Delta = &source.Delta{IDs: source.IDs{Int: ids.slice(0, ids.n)}, Since: source.Watermark{Field: d.editField, Value: millis(cutoff)}}
	return nil
}

// seeEdit raises the watermark to f's edit date. The decoder renders a
// date as an ISO-8601 UTC string of whole milliseconds, which reads back
// exact; a feature without one (null) leaves it.
func (d *dump) seeEdit(f *feature.Feature) {
	if d.editField == "" || len(f.Properties) == 0 {
		return
	}
	if ms, ok := editDate(f.Properties, d.editField); ok && ms > d.maxEdit {
		d.maxEdit = ms
	}
}

// editDate finds the top-level member field of the JSON object props as
// an ISO-8601 timestamp. A quoted key followed by a colon is a member's
// name wherever it sits after '{' or ','; the same text inside a string
// value would have its quotes escaped.
func editDate(props []byte, field string) (int64, bool) {
	key := []byte(`"` + field + `":`)
	for from := 0; ; {
		i := bytes.Index(props[from:], key)
		if i < 0 {
			return 0, false
		}
		i += from
		from = i + len(key)
		j := i - 1
		for j >= 0 && (props[j] == ' ' || props[j] == '\n' || props[j] == '\t' || props[j] == '\r') {
			j--
		}
		if j < 0 || (props[j] != '{' && props[j] != ',') {
			continue
		}
		rest := bytes.TrimLeft(props[from:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '"' {
			return 0, false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return 0, false
		}
		t, err := time.Parse(time.RFC3339Nano, string(rest[1:1+end]))
		if err != nil {
			return 0, false
		}
		return t.UnixMilli(), true
	}
}

// nextVersion is the version this fetch stores: base, the watermark
// when the layer has an edit date field (the greatest edit date seen, and
// never below the previous one after an incremental read), and the server
// generation read before the features when the service tracks changes.
func (d *dump) nextVersion(base string, prev layerVersion, incremental bool) layerVersion {
	v := layerVersion{base: base, fullAt: d.c.now().UnixMilli()}
	if incremental {
		v.fullAt = prev.fullAt
	}
	if d.editField != "" {
		v.editField, v.watermark = d.editField, d.maxEdit
		if incremental && strings.EqualFold(prev.editField, d.editField) {
			v.watermark = max(d.maxEdit, prev.watermark)
		}
	}
	if d.tracking != nil {
		v.serverGen = d.tracking.ServerGen
	}
	return v
}
