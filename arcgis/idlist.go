package arcgis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/idsort"
	"github.com/ingestd/ingestd/source"
)

// idChunk is how many ids one chunk of an id list holds (512 KiB).
const idChunk = 1 << 16

// idList is a layer's id list, in chunks: reading 20 million ids costs
// their 8 bytes each, never a copy of what was read (growing one slice
// holds the old and the new array at once, 1.8 times the list at the last
// growth).
type idList struct {
	chunks [][]int64
	n      int
}

func (l *idList) add(id int64) {
	if len(l.chunks) == 0 || len(l.chunks[len(l.chunks)-1]) == idChunk {
		size := idChunk
		if len(l.chunks) == 0 {
			size = 1024 // a small layer's list stays small
		}
		l.chunks = append(l.chunks, make([]int64, 0, size))
	}
	last := len(l.chunks) - 1
	l.chunks[last] = append(l.chunks[last], id)
	l.n++
}

// at is the i-th id: every chunk but the last is full.
func (l *idList) at(i int) int64 { return l.chunks[i/idChunk][i%idChunk] }

// Len, Less and Swap sort the list in place (sort.Interface).
func (l *idList) Len() int           { return l.n }
func (l *idList) Less(i, j int) bool { return l.at(i) < l.at(j) }
func (l *idList) Swap(i, j int) {
	a, b := &l.chunks[i/idChunk][i%idChunk], &l.chunks[j/idChunk][j%idChunk]
	*a, *b = *b, *a
}

func (l *idList) sort() {
	if l.sorted() {
		// Servers list ids in object id order: a pass, not a sort
		// (BenchmarkIDListSort measures the sort it saves).
		return
	}
	if len(l.chunks) == 1 {
		idsort.Int64s(l.chunks[0])
		return
	}
	if l.n <= flatSortMax {
		// A copy sorted as one slice, and copied back: a radix sort up
		// to idsort.RadixMax ids (an order of magnitude faster than
		// sort.Sort through the interface, BenchmarkIDListSort; it holds
		// a scratch copy too, at most 8 MiB), slices.Sort above it, for
		// a copy of at most 32 MiB held meanwhile.
		flat := l.slice(0, l.n)
		idsort.Int64s(flat)
		for i, c := range l.chunks {
			copy(c, flat[i*idChunk:])
		}
		return
	}
	sort.Sort(l)
}

// flatSortMax is the longest list sort copies into one slice (32 MiB).
const flatSortMax = 1 << 22

// sorted reports whether the list is in ascending order.
func (l *idList) sorted() bool {
	prev := int64(math.MinInt64)
	for _, c := range l.chunks {
		if !slices.IsSorted(c) || (len(c) > 0 && c[0] < prev) {
			return false
		}
		if len(c) > 0 {
			prev = c[len(c)-1]
		}
	}
	return true
}

// slice copies the ids [start, end).
func (l *idList) slice(start, end int) []int64 {
	out := make([]int64, 0, end-start)
	for i := start; i < end; {
		c := l.chunks[i/idChunk]
		j := min(i%idChunk+end-i, len(c))
		out = append(out, c[i%idChunk:j]...)
		i += j - i%idChunk
	}
	return out
}

// errTooManyIDs ends reading an id list at the first id past the count.
var errTooManyIDs = errors.New("more ids than the count")

// idList fetches the object ids the where clause selects as they stream,
// no more than count of them and no more bytes than the count allows (see
// IDListBaseBytes), sorts them and checks them against the count. An error
// object in the list, wherever it sits, is the server's error, judged by
// its code: a failure on the server's side leads Fetch to its fallback.
func (d *dump) idList(ctx context.Context, count int) (*idList, error) {
	ids, err := d.readIDs(ctx, d.form(), "id list", count)
	if err != nil {
		return nil, err
	}
	if ids.n != count {
		return nil, &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the count is %d but the id list holds %d ids (the layer changed between them, or the server caps the id list)", count, ids.n)}
	}
	return ids, nil
}

// readIDs reads the object ids form selects (returnIdsOnly) as they
// stream, at most count of them within the bound count sets, sorted and
// checked for repeats; name names the document.
func (d *dump) readIDs(ctx context.Context, form url.Values, name string, count int) (*idList, error) {
	form.Set("returnIdsOnly", "true")
	doc := document{name: name, max: IDListBaseBytes + IDListBytesPerID*int64(count),
		bound: fmt.Sprintf("%d bytes and %d for each of the %d features counted", IDListBaseBytes, IDListBytesPerID, count)}
	req := d.request(d.query, form)
	req.BodyLimit, _ = d.bodyLimit(doc)
	var ids *idList
	err := d.c.calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		ids = &idList{}
		br, _, err := a.OpenBody(doc.name)
		if err != nil {
			return a.Verdict(renamed(httpcall.ReadFailure(a.Resp, err, a.Redacted), doc.name, a.Redacted))
		}
		if cls := Classify(a.Resp, br, a.Redacted, doc.name, d.c.now()); cls != nil {
			return a.Verdict(cls)
		}
		_, err = esrijson.ReadObjectIDs(br, func(id int64) error {
			if ids.n == count {
				return errTooManyIDs
			}
			ids.add(id)
			return nil
		})
		var se *esrijson.ServerError
		switch {
		case err == nil:
			return breaker.Result{Outcome: breaker.Success}
		case errors.Is(err, errTooManyIDs):
			return breaker.Result{Outcome: breaker.Success, Err: &source.IncompleteError{URL: d.redacted, Expected: -1,
				Reason: fmt.Sprintf("the count is %d but the id list holds more ids (reading stopped at id number %d: the list is bounded by the count; the layer changed between them, or the server lies)", count, count+1)}}
		case errors.As(err, &se) && a.BodyErr() == nil:
			return a.Verdict(judge(a.Resp.StatusCode, a.Redacted, doc.name, *se))
		}
		return a.StreamFailed(&BodyError{Op: doc.name, URL: a.Redacted, Err: err})
	})
	if err != nil {
		var ie *source.IncompleteError
		if errors.As(err, &ie) {
			return nil, ie
		}
		if le := d.limitError(doc, err); le != err {
			return nil, le
		}
		return nil, fmt.Errorf("%s of %s: %w", doc.name, d.redacted, err)
	}
	ids.sort()
	for i := 1; i < ids.n; i++ {
		if ids.at(i) == ids.at(i-1) {
			return nil, &source.IncompleteError{URL: d.redacted, Expected: -1, Reason: fmt.Sprintf("the %s holds object id %d twice", name, ids.at(i))}
		}
	}
	return ids, nil
}

// contains reports whether the sorted list holds id.
func (l *idList) contains(id int64) bool {
	i := sort.Search(l.n, func(i int) bool { return l.at(i) >= id })
	return i < l.n && l.at(i) == id
}
