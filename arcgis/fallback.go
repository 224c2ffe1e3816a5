package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ingestd/ingestd/source"
)

// maxOffsetPages stops an offset loop that never ends (a server that says
// exceededTransferLimit forever).
const maxOffsetPages = 1_000_000

// withoutIDs reads the layer when its id list failed: in object-id windows
// from outStatistics when the layer claims statistics, else by
// resultOffset ordered by the object id. The proof is the count: every
// feature's object id distinct, and as many as the count.
func (d *dump) withoutIDs(ctx context.Context, count int, handle source.PageFunc) error {
	d.seen = make(map[int64]struct{}, count)
	err := errNoStatistics
	if d.info.Statistics() {
		var lo, hi int64
		var empty bool
		lo, hi, empty, err = d.oidRange(ctx)
		switch {
		case err == nil && empty:
			err = nil
		case err == nil:
			err = d.windows(ctx, lo, hi, handle)
		}
		if err != nil && fallback(err) {
			d.warn(fmt.Sprintf("object-id windows failed (%v); reading by resultOffset", err))
			d.seen = make(map[int64]struct{}, count)
			d.stats.Pages, d.stats.Features, d.stats.Bytes = 0, 0, 0
			err = errNoStatistics
		}
	}
	if errors.Is(err, errNoStatistics) {
		err = d.offsets(ctx, handle)
	}
	if err != nil {
		return err
	}
	if len(d.seen) != count {
		return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the count is %d but %d distinct object ids were read", count, len(d.seen))}
	}
	return nil
}

var errNoStatistics = errors.New("arcgis: no statistics")

// oidRange asks outStatistics for the smallest and largest object id.
func (d *dump) oidRange(ctx context.Context) (lo, hi int64, empty bool, err error) {
	form := d.form()
	stats, _ := json.Marshal([]map[string]string{
		{"statisticType": "min", "onStatisticField": d.info.ObjectIDField, "outStatisticFieldName": "oid_min"},
		{"statisticType": "max", "onStatisticField": d.info.ObjectIDField, "outStatisticFieldName": "oid_max"},
	})
	form.Set("outStatistics", string(stats))
	var res struct {
		Features []struct {
			Attributes map[string]*float64 `json:"attributes"`
		} `json:"features"`
	}
	if err := d.callJSON(ctx, "object id range (outStatistics)", d.query, form, &res); err != nil {
		return 0, 0, false, err
	}
	if len(res.Features) != 1 {
		return 0, 0, false, fmt.Errorf("arcgis: object id range of %s: %d statistics rows, want 1", d.redacted, len(res.Features))
	}
	// Servers differ in the case of the names they give back.
	var min, max *float64
	for k, v := range res.Features[0].Attributes {
		switch k {
		case "oid_min", "OID_MIN":
			min = v
		case "oid_max", "OID_MAX":
			max = v
		}
	}
	if min == nil || max == nil {
		return 0, 0, true, nil
	}
	return int64(*min), int64(*max), false, nil
}

// windows reads object ids in (lo-1, hi] by windows of the page size,
// splitting a window whose answer hits the cap and widening one that comes
// back sparse.
func (d *dump) windows(ctx context.Context, lo, hi int64, handle source.PageFunc) error {
	width := int64(d.pageSize)
	page := 0
	for a := lo - 1; a < hi; {
		b := min(a+width, hi)
		pr := &pageReader{}
		if err := d.window(ctx, a, b, pr); err != nil {
			return err
		}
		if len(pr.feats) > 0 {
			p := source.Page{Index: page, URL: d.redacted + " (" + d.info.ObjectIDField + " in (" + strconv.FormatInt(a, 10) + ", " + strconv.FormatInt(b, 10) + "])", StartIndex: d.stats.Features}
			if err := handle(ctx, p, pr); err != nil {
				return err
			}
			page++
			d.stats.Pages++
			d.stats.Features += len(pr.feats)
			d.stats.Bytes += pr.bytes
		}
		// Sparse ids: widen the next window.
		if len(pr.feats) < d.pageSize/4 {
			width *= 2
		}
		a = b
	}
	return nil
}

// window reads the features with a < OID <= b into pr.
func (d *dump) window(ctx context.Context, a, b int64, pr *pageReader) error {
	form := d.featureForm()
	oid := d.info.ObjectIDField
	form.Set("where", "("+form.Get("where")+") AND "+oid+" > "+strconv.FormatInt(a, 10)+" AND "+oid+" <= "+strconv.FormatInt(b, 10))
	res, err := d.features(ctx, "features by object-id window", form)
	if err != nil {
		return err
	}
	if res.exceeded || len(res.feats) >= d.batch {
		if b-a <= 1 {
			return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("the window of object id %d alone is said to exceed the transfer limit", b)}
		}
		mid := a + (b-a)/2
		if err := d.window(ctx, a, mid, pr); err != nil {
			return err
		}
		return d.window(ctx, mid, b, pr)
	}
	return d.keep(res, pr)
}

// keep adds an answer's features to pr, refusing an object id seen before.
func (d *dump) keep(res batchResult, pr *pageReader) error {
	for i, oid := range res.oids {
		if _, dup := d.seen[oid]; dup {
			return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("object id %d was read twice (the server's order is not stable)", oid)}
		}
		d.seen[oid] = struct{}{}
		pr.feats = append(pr.feats, res.feats[i])
	}
	pr.bytes += res.bytes
	return nil
}

// offsets reads the layer by resultOffset, ordered by the object id, for
// as long as the server says exceededTransferLimit: a short page alone
// never ends it, and the count proves the end.
func (d *dump) offsets(ctx context.Context, handle source.PageFunc) error {
	offset := 0
	for page := 0; ; page++ {
		if page >= maxOffsetPages {
			return fmt.Errorf("arcgis: %s: stopped after %d offset pages", d.redacted, page)
		}
		form := d.featureForm()
		form.Set("orderByFields", d.info.ObjectIDField+" ASC")
		form.Set("resultOffset", strconv.Itoa(offset))
		form.Set("resultRecordCount", strconv.Itoa(d.pageSize))
		res, err := d.features(ctx, "features by resultOffset", form)
		if err != nil {
			return err
		}
		pr := &pageReader{}
		if err := d.keep(res, pr); err != nil {
			return err
		}
		if len(pr.feats) > 0 {
			p := source.Page{Index: page, URL: d.redacted + " (resultOffset " + strconv.Itoa(offset) + ")", StartIndex: offset}
			if err := handle(ctx, p, pr); err != nil {
				return err
			}
			d.stats.Pages++
			d.stats.Features += len(pr.feats)
			d.stats.Bytes += pr.bytes
		}
		offset += len(res.feats)
		switch {
		case !res.exceeded && len(d.seen) < d.stats.NumberMatched && len(res.feats) > 0:
			// A short page without exceededTransferLimit: the count says
			// there is more, and a server may cap below what it says.
			continue
		case !res.exceeded:
			return nil
		case len(res.feats) == 0:
			return &IncompleteError{URL: d.redacted, Reason: fmt.Sprintf("resultOffset %d: no features, yet exceededTransferLimit says there are more", offset)}
		}
	}
}
