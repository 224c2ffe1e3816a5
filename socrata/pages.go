package socrata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// pageResult is what one successful attempt at a page learned.
type pageResult struct {
	ids        []string
	bytes      int64
	handlerErr error
}

// pages reads the rows page by page until a short page, and returns how
// many it read. Every :id is remembered with its page: one read twice
// (on two pages: rows moved under $offset; or on one) fails the read,
// naming it.
func (r *read) pages(ctx context.Context, handle source.PageFunc) (int, error) {
	total := 0
	for index := 0; ; index++ {
		res, err := r.page(ctx, index, index*r.pageSize, handle)
		if err != nil {
			return total, err
		}
		r.stats.Pages++
		r.stats.Features += len(res.ids)
		r.stats.Bytes += res.bytes
		if err := r.remember(index, res.ids); err != nil {
			return total, err
		}
		total += len(res.ids)
		if len(res.ids) < r.pageSize {
			return total, nil
		}
		if total > r.count+r.pageSize {
			// A portal that never sends a short page must not be read for ever.
			return total, &source.IncompleteError{URL: r.ds.redacted, Expected: -1, Reason: fmt.Sprintf("read %d rows in full pages, and count(*) says %d: the portal does not end its pages", total, r.count)}
		}
	}
}

// remember records the ids of page index, failing at one read before.
func (r *read) remember(index int, ids []string) error {
	for _, id := range ids {
		h := maphash.String(r.seed, id)
		if prev, dup := r.seen[h]; dup {
			where := fmt.Sprintf("on page %d and again on page %d", prev, index)
			if int(prev) == index {
				where = fmt.Sprintf("twice on page %d", index)
			}
			return &source.IncompleteError{URL: r.ds.redacted, Expected: -1, Reason: fmt.Sprintf(":id %s came %s: rows moved under $offset paging, or the portal's ids are not unique",
				feature.Snippet(id), where)}
		}
		r.seen[h] = int32(index)
	}
	return nil
}

// page reads the page at offset into handle.
func (r *read) page(ctx context.Context, index, offset int, handle source.PageFunc) (pageResult, error) {
	u := *r.ds.resource
	u.RawQuery = pageQuery(r.pageSize, offset).Encode()
	p := source.Page{Index: index, URL: redact.URL(u.String()), StartIndex: offset}
	ref := pageRef{index: index, offset: offset, url: p.URL}
	var res pageResult
	err := r.c.base.Calls.Call(ctx, r.request(&u), func(a *httpcall.Attempt) breaker.Result {
		res = pageResult{}
		return r.attempt(a, p, ref, handle, &res)
	})
	switch {
	case err == nil:
		return res, nil
	case res.handlerErr != nil && err == res.handlerErr:
		return res, err
	}
	var le *feature.LimitError
	var ce *ContentError
	switch {
	case errors.As(err, &ce) && ce.What == ref.String():
		// It names the page, the row and the column already.
		return res, ce
	case errors.As(err, &le):
		// The limit is the whole story; where the decoder was is noise.
		err = le
	}
	var be *httpcall.BodyError
	if errors.As(err, &be) {
		be.Page = index // one numbering in every message of the read
	}
	return res, fmt.Errorf("%s: %w", ref, err)
}

// attempt is one attempt at a page: GET, classify, stream into handle. A
// retry starts over, and so does handle (see source.PageFunc).
func (r *read) attempt(a *httpcall.Attempt, p source.Page, ref pageRef, handle source.PageFunc, res *pageResult) breaker.Result {
	br, ok, v := r.c.open(a, "page "+strconv.Itoa(p.Index), ref.String(), "an array of rows")
	if !ok {
		return v
	}
	if head, _ := br.Peek(1); len(head) == 1 && head[0] == '{' {
		// An object where the rows should be: an error body sent with 200.
		body, _ := io.ReadAll(io.LimitReader(br, maxErrorBodyBytes))
		if code, msg, ok := parseServerError(body); ok {
			return a.Verdict(httpcall.ErrorVerdict(&ServerError{Status: a.Resp.StatusCode, Code: code, Message: msg}, false))
		}
		return a.Verdict(httpcall.ErrorVerdict(newContentError(ref.String(), -1, "", "a page is an array of rows; the portal sent an object, "+
			jsonText(body)), false))
	}
	rr := newRowReader(br, a, r.limits, r.geomCol, ref, r.cols)
	if herr := handle(a.CallCtx, p, rr); herr != nil {
		if httpcall.IsBodyError(herr) {
			return a.StreamFailed(herr)
		}
		res.handlerErr = herr
		return breaker.Result{Outcome: breaker.Ignored, Err: herr}
	}
	// The handler may have stopped early or swallowed an error; the page
	// counts only if the body really ended where it does.
	if f, err := rr.Next(); err != io.EOF {
		if err == nil {
			res.handlerErr = fmt.Errorf("%s: handler returned before reading row %d (id %q)", ref, rr.n-1, f.ID)
			return breaker.Result{Outcome: breaker.Ignored, Err: res.handlerErr}
		}
		return a.StreamFailed(err)
	}
	res.ids, res.bytes = rr.ids, a.BodyBytes()
	return breaker.Result{Outcome: breaker.Success}
}

// prove checks the rows read against count(*): more is a dataset that
// grew or a count that lies; fewer has its missing ids asked for and
// named.
func (r *read) prove(ctx context.Context, total int) error {
	switch {
	case total == r.count:
		return nil
	case total > r.count:
		return &source.IncompleteError{URL: r.ds.redacted, Expected: -1, Reason: fmt.Sprintf("read %d rows, and count(*) says %d", total, r.count)}
	}
	reason := fmt.Sprintf("read %d rows of the %d count(*) says", total, r.count)
	missing, more, err := r.missing(ctx)
	switch {
	case err != nil:
		reason += fmt.Sprintf(" (listing the ids to name the missing failed: %v)", err)
	case len(missing) > 0:
		reason += "; not read: :id " + strings.Join(missing, ", ")
		if more > 0 {
			reason += fmt.Sprintf(" and %d more", more)
		}
	}
	return &source.IncompleteError{URL: r.ds.redacted, Expected: -1, Reason: reason}
}

// missing lists the dataset's ids ($select=:id, by :id) and returns the
// first namedIDs of those not read (quoted), and how many more there are.
func (r *read) missing(ctx context.Context) (named []string, more int, err error) {
	for offset := 0; offset <= r.count+idListPage; offset += idListPage {
		u := *r.ds.resource
		u.RawQuery = url.Values{"$select": {":id"}, "$order": {":id"}, "$limit": {strconv.Itoa(idListPage)},
			"$offset": {strconv.Itoa(offset)}}.Encode()
		var rows []map[string]json.RawMessage
		if err := r.callJSON(ctx, "id list", &u, r.limits.BodyBytes, &rows); err != nil {
			return named, more, err
		}
		for _, row := range rows {
			id, err := rowID(row[idField])
			if err != nil {
				continue
			}
			if _, ok := r.seen[maphash.String(r.seed, id)]; ok {
				continue
			}
			if len(named) < namedIDs {
				named = append(named, feature.Snippet(id))
			} else {
				more++
			}
		}
		if len(rows) < idListPage {
			break
		}
	}
	return named, more, nil
}
