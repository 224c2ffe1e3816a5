package arcgistest

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/encoding/esrijson"
)

// Edit tracking: a layer with an edit date field on every
// feature, a where clause on it, and the edits, deletes and adds a test
// makes between polls.

// EditDateField is the edit date field of the layers Tracked makes.
const EditDateField = "EditDate"

// Tracked gives l edit tracking: an EditDate field (esriFieldTypeDate)
// named by editFieldsInfo; the features were edited a minute apart, the
// last at l's lastEditDate.
func Tracked(l *Layer) *Layer {
	if l.LastEditDate == 0 {
		l.LastEditDate = 1700000000000
	}
	l.EditDateField = EditDateField
	l.Fields = append(l.Fields, esrijson.Field{Name: EditDateField, Type: esrijson.FieldDate})
	for i := range l.Features {
		if l.Features[i].Attributes == nil {
			l.Features[i].Attributes = map[string]any{}
		}
		l.Features[i].Attributes[EditDateField] = l.LastEditDate - int64(len(l.Features)-1-i)*60_000
	}
	return l
}

var editWhereRE = regexp.MustCompile(`(\w+) > TIMESTAMP '(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)'`)

// editedAfter reads a where clause on the layer's edit date field: the
// time (Unix ms) after which it selects features.
func (l *Layer) editedAfter(where string) (int64, bool) {
	m := editWhereRE.FindStringSubmatch(where)
	if m == nil || l.EditDateField == "" || !strings.EqualFold(m[1], l.EditDateField) {
		return 0, false
	}
	t, err := time.Parse("2006-01-02 15:04:05", m[2])
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// editDateColumn is the edit dates of Features, in their order, built
// again when the layer changed (Edit builds it after each edit).
func (l *Layer) editDateColumn() []int64 {
	if l.editDates == nil || len(l.editDates) != len(l.Features) {
		l.editDates = make([]int64, len(l.Features))
		for i, ft := range l.Features {
			l.editDates[i], _ = ft.Attributes[l.EditDateField].(int64)
		}
	}
	return l.editDates
}

// editedSince selects the features of feats edited after (Unix ms). On the
// whole layer it reads the edit date column, as a database reads a column:
// a map lookup per feature, in 100,000 maps across the heap, was most of
// the fixture's CPU in its answer to an incremental poll.
func (l *Layer) editedSince(feats []Feature, after int64) []Feature {
	if len(feats) != len(l.Features) || len(feats) == 0 || &feats[0] != &l.Features[0] {
		return selected(feats, func(ft Feature) bool {
			ms, _ := ft.Attributes[l.EditDateField].(int64)
			return ms > after
		})
	}
	var sel []Feature
	for i, ms := range l.editDateColumn() {
		if ms > after {
			sel = append(sel, feats[i])
		}
	}
	return sel
}

// Churn is one round of a tracked layer's edits, stamped at (Unix ms, the
// server's clock): edits features renamed, deletes removed, adds new ones
// (copies of a feature's geometry with new object ids). It moves the
// layer's lastEditDate to at. Which features is drawn from rng.
type Churn struct {
	Edits, Deletes, Adds int
	At                   int64
	// Silent leaves the edits' EditDate as it was, and out of the change
	// log (an edit neither shows: a trigger that failed, a bulk load).
	Silent bool
	// Spread stamps each edit and add at a time drawn from (At-Spread, At]
	// (ms), as editors spread over the time between two polls; 0 stamps
	// them all at At.
	Spread int64
}

// stamp is an edit's time.
func (c Churn) stamp(rng *rand.Rand) int64 {
	if c.Spread <= 0 {
		return c.At
	}
	return c.At - rng.Int64N(c.Spread)
}

// Apply makes the round's changes to l (under Server.Edit).
func (c Churn) Apply(l *Layer, rng *rand.Rand) {
	for range c.Edits {
		f := &l.Features[rng.IntN(len(l.Features))]
		attrs := make(map[string]any, len(f.Attributes))
		for k, v := range f.Attributes {
			attrs[k] = v
		}
		attrs["NAME"] = "edited " + strconv.FormatInt(c.At, 10) + " " + strconv.Itoa(rng.IntN(1_000_000))
		if !c.Silent {
			attrs[l.EditDateField] = c.stamp(rng)
			l.record(f.OID, "updates")
		}
		f.Attributes = attrs
	}
	for range min(c.Deletes, len(l.Features)-1) {
		i := rng.IntN(len(l.Features))
		l.record(l.Features[i].OID, "deletes")
		l.Features = append(l.Features[:i], l.Features[i+1:]...)
	}
	var next int64
	for _, f := range l.Features {
		next = max(next, f.OID)
	}
	for k := range c.Adds {
		src := l.Features[rng.IntN(len(l.Features))]
		attrs := map[string]any{"NAME": "added " + strconv.Itoa(k), l.EditDateField: c.stamp(rng)}
		if u, ok := src.Attributes["UPDATED"]; ok {
			attrs["UPDATED"] = u
		}
		l.Features = append(l.Features, Feature{OID: next + int64(k) + 1, Attributes: attrs, Geometry: src.Geometry})
		l.record(next+int64(k)+1, "adds")
	}
	if l.ChangeTracking {
		l.Tracking.ServerGen++
	}
	l.LastEditDate = c.At
	l.idx, l.editDates = nil, nil
}

// Parcels is a tracked polygon layer of n parcel-like features in Web
// Mercator (wkid 3857), ids 1..n, shaped as county parcel layers are: a
// dozen attributes and a nine-vertex ring whose coordinates are written
// with the full precision servers write them in. Feature i is the same on
// every call.
func Parcels(n int) *Layer {
	l := &Layer{GeometryType: esrijson.TypePolygon, WKID: 3857, MaxRecordCount: 2000,
		Fields: []esrijson.Field{{Name: "OBJECTID", Type: esrijson.FieldOID},
			{Name: "PIN", Type: "esriFieldTypeString"}, {Name: "OWNER", Type: "esriFieldTypeString"},
			{Name: "SITE_ADDRESS", Type: "esriFieldTypeString"}, {Name: "ZONING", Type: "esriFieldTypeString"},
			{Name: "NAME", Type: "esriFieldTypeString"}, {Name: "ACRES", Type: "esriFieldTypeDouble"},
			{Name: "ASSESSED_VALUE", Type: "esriFieldTypeInteger"}, {Name: "YEAR_BUILT", Type: "esriFieldTypeSmallInteger"},
			{Name: "DEED_DATE", Type: esrijson.FieldDate}, {Name: "TOWNSHIP", Type: "esriFieldTypeString"}}}
	zonings := []string{"R-4", "R-6", "R-10", "RX-3", "OX-4", "CX-5", "IX-3", "DX-12", "NX-3", "AP"}
	l.Features = make([]Feature, n)
	for i := range n {
		// A cell of 50 m on a grid 1000 wide, its corners and edge
		// midpoints off the grid by a few centimetres.
		x0, y0 := -8783000.0+float64(i%1000)*50, 4247000.0+float64(i/1000)*50
		ring := make([][]float64, 0, 9)
		for k, c := range [][2]float64{{0, 0}, {0, 20}, {0, 40}, {20, 40}, {40, 40}, {40, 20}, {40, 0}, {20, 0}} {
			j := float64((i*31+k*17)%97) / 1013
			ring = append(ring, []float64{x0 + c[0] + j, y0 + c[1] + j/3})
		}
		ring = append(ring, ring[0])
		l.Features[i] = Feature{OID: int64(i + 1), Geometry: map[string]any{"rings": [][][]float64{ring}},
			Attributes: map[string]any{
				"PIN": fmt.Sprintf("%010d", i), "OWNER": "OWNER " + strconv.Itoa(i%5000),
				"SITE_ADDRESS": strconv.Itoa(100+i%9000) + " MAIN ST", "ZONING": zonings[i%len(zonings)],
				"NAME": "parcel " + strconv.Itoa(i+1), "ACRES": 0.1 + float64(i%400)/100,
				"ASSESSED_VALUE": 100000 + (i*7919)%900000, "YEAR_BUILT": 1900 + i%125,
				"DEED_DATE": int64(946684800000) + int64(i%9000)*86400000, "TOWNSHIP": "T" + strconv.Itoa(i%20),
			}}
	}
	return Tracked(l)
}
