package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ingestd/ingestd/source"
)

// withoutIDs reads the layer when its id list failed: in object-id windows
// from outStatistics when the layer claims statistics, else by
// resultOffset ordered by the object id. The proof is the count: every
// feature's object id distinct, and as many as the count. Both stop once
// they read more distinct features than the count and a page: a server
// that invents features (exceededTransferLimit forever, with new ids)
// would otherwise be read until the poll's deadline.
func (d *dump) withoutIDs(ctx context.Context, count int, handle source.PageFunc) error {
	d.seen = make(map[int64]struct{}, min(count, 1<<20))
	d.readMax = count + d.pageSize
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
		// Offsets start again from page 0, which replaces a page staged
		// by the windows but would leave those past its own last page:
		// only before any page was handed over.
		if err != nil && fallback(err) && d.stats.Pages == 0 {
			d.warn(fmt.Sprintf("object-id windows failed (%v); reading by resultOffset", err))
			d.seen = make(map[int64]struct{}, min(count, 1<<20))
			d.read = 0
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
		return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the count is %d but %d distinct object ids were read", count, len(d.seen))}
	}
	return nil
}

var errNoStatistics = errors.New("no statistics")

// maxExactOID is the largest object id a statistics answer (a JSON
// number, read as a float64) gives exactly.
const maxExactOID = 1 << 53

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
	doc := document{name: "statistics", max: MaxStatisticsBytes, bound: "the bound of a statistics answer"}
	if err := d.callJSON(ctx, doc, d.query, form, &res); err != nil {
		return 0, 0, false, err
	}
	if len(res.Features) != 1 {
		return 0, 0, false, fmt.Errorf("object id range of %s: %d statistics rows, want 1", d.redacted, len(res.Features))
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
	for _, v := range []float64{*min, *max} {
		if v != math.Trunc(v) || math.Abs(v) > maxExactOID {
			return 0, 0, false, fmt.Errorf("object id range of %s: %v is not an object id (an integer of at most 2^53)", d.redacted, v)
		}
	}
	if *min > *max {
		return 0, 0, false, fmt.Errorf("object id range of %s: the smallest object id %v is above the largest %v", d.redacted, *min, *max)
	}
	return int64(*min), int64(*max), false, nil
}

// windows reads object ids in (lo-1, hi] by windows of the page size, a
// page each, splitting a window whose answer hits the cap and widening one
// that comes back sparse. An empty window is no page.
func (d *dump) windows(ctx context.Context, lo, hi int64, handle source.PageFunc) error {
	width := int64(d.pageSize)
	page := 0
	for a := lo - 1; a < hi; {
		b := min(a+width, hi)
		name := fmt.Sprintf("object-id window (%d, %d]", a, b)
		p := source.Page{Index: page, URL: d.redacted + " (" + d.info.ObjectIDField + " in (" + strconv.FormatInt(a, 10) + ", " + strconv.FormatInt(b, 10) + "])", StartIndex: d.stats.Features}
		st := d.newPage(name, true)
		n, bytes, err := d.handPage(ctx, p, handle, func(s *pageStream) error {
			st.s = s
			return d.window(ctx, a, b, st)
		})
		if err != nil {
			return err
		}
		if n > 0 {
			st.commit()
			page++
			d.stats.Pages++
			d.stats.Features += n
			d.stats.Bytes += bytes
		}
		// Sparse ids: widen the next window (object ids are at most 2^53:
		// no overflow).
		if n < d.pageSize/4 {
			width = min(width*2, 1<<60)
		}
		a = b
	}
	return nil
}

// window reads the features with a < OID <= b into the page.
func (d *dump) window(ctx context.Context, a, b int64, p *pageState) error {
	form := d.featureForm()
	oid := d.info.ObjectIDField
	form.Set("where", "("+form.Get("where")+") AND "+oid+" > "+strconv.FormatInt(a, 10)+" AND "+oid+" <= "+strconv.FormatInt(b, 10))
	name := fmt.Sprintf("object-id window (%d, %d]", a, b)
	ans, err := d.features(ctx, name, form, p, func(id int64) error {
		if id <= a || id > b {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the %s answered object id %d, outside it", name, id)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ans.exceeded || ans.n >= d.batch {
		if b-a <= 1 {
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the window of object id %d alone is said to exceed the transfer limit", b)}
		}
		// What this answer brought is handed over already; the halves
		// bring it again, and it is not handed over twice.
		mid := a + (b-a)/2
		if err := d.window(ctx, a, mid, p); err != nil {
			return err
		}
		return d.window(ctx, mid, b, p)
	}
	return nil
}

// offsets reads the layer by resultOffset, ordered by the object id, for
// as long as the server says exceededTransferLimit (a short page alone
// never ends it, and the count proves the end), and no further than the
// count and a page (see pageState.take).
func (d *dump) offsets(ctx context.Context, handle source.PageFunc) error {
	offset, page := 0, 0
	for requests := 1; ; requests++ {
		form := d.featureForm()
		form.Set("orderByFields", d.info.ObjectIDField+" ASC")
		form.Set("resultOffset", strconv.Itoa(offset))
		form.Set("resultRecordCount", strconv.Itoa(d.pageSize))
		name := "resultOffset " + strconv.Itoa(offset)
		p := source.Page{Index: page, URL: d.redacted + " (" + name + ")", StartIndex: offset}
		st := d.newPage(name, true)
		var ans answer
		n, bytes, err := d.handPage(ctx, p, handle, func(s *pageStream) error {
			st.s = s
			var err error
			ans, err = d.features(ctx, name, form, st, func(int64) error { return nil })
			return err
		})
		if err != nil {
			return err
		}
		if n > 0 {
			st.commit()
			page++
			d.stats.Pages++
			d.stats.Features += n
			d.stats.Bytes += bytes
		}
		offset += ans.n
		switch {
		case !ans.exceeded && len(d.seen) < d.stats.NumberMatched && ans.n > 0:
			// A short page without exceededTransferLimit: the count says
			// there is more, and a server may cap below what it says.
			continue
		case !ans.exceeded:
			return nil
		case ans.n == 0:
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("resultOffset %d: no features, yet exceededTransferLimit says there are more", offset)}
		case offset > d.readMax:
			// Every feature of each answer was a repeat (p.take stops
			// new ones): the offsets run past the count.
			return &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("resultOffset paging went past the count %d and a page (%d) after %d requests, and exceededTransferLimit still says there are more: stopped", d.stats.NumberMatched, d.pageSize, requests)}
		}
	}
}
