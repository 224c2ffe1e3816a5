package hostile

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The socrata cases: what a Socrata portal may answer that SODA does not
// promise, each with its documented outcome (docs/configuration.md,
// "Socrata feeds"). A case's dataset has sodaRows rows, read in pages of
// sodaPageSize; every case checks that the feed's app token (AppToken)
// reaches neither the output nor a table.

// Classes of the socrata cases.
const (
	sodaCounts   = "Socrata: lying count(*) and ids"
	sodaSchema   = "Socrata: columns between pages, lying metadata"
	sodaBodies   = "Socrata: bodies that are not rows, error answers"
	sodaTrunc    = "Socrata: truncated pages"
	sodaBombs    = "Socrata: bombs"
	sodaTokens   = "Socrata: echoed app token"
	sodaHTTP     = "Socrata: redirects, slowloris, 429"
	sodaGeometry = "Socrata: geometry column"
)

// sodaCase is a socrata case of class that must fail naming one of errs.
func sodaCase(name, class string, r Responder, errs ...string) Case {
	return Case{Name: name, Class: class, Kind: Socrata, Errors: errs, Respond: r, PageSize: sodaPageSize,
		Secrets: []string{AppToken}}
}

// sodaLoad is a socrata case of class that must load features.
func sodaLoad(name, class string, features int, r Responder) Case {
	c := sodaCase(name, class, r)
	c.Load, c.Features = true, features
	return c
}

// onContent puts c on the content origin: its failure must be the feed's,
// never charged to the portal.
func onContent(c Case) Case {
	c.Origin, c.Breaker = OriginContent, contentBreaker
	return c
}

// socrataCounts: count(*) above or below the rows served, not a count,
// pages that never end, an :id twice, an offset ignored. Each fails the
// proof, naming what did not add up.
func socrataCounts() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	count := func(n string) sodaHook { return on(isCount, reply(200, ctJSON, `[{"n":`+n+`}]`)) }
	add(
		sodaCase("socrata_count_more", sodaCounts, soda(sodaRows, count(`"40"`)), "read 30 rows of the 40 count(*) says"),
		sodaCase("socrata_count_fewer", sodaCounts, soda(sodaRows, count(`"20"`)), "read 30 rows, and count(*) says 20"),
		sodaCase("socrata_count_not_number", sodaCounts, soda(sodaRows, count(`"thirty"`)), "no count"),
		// Every page full, for ever: the read stops a page past the count.
		sodaCase("socrata_pages_never_end", sodaCounts, soda(sodaRows, on(pagesFrom(sodaRows), func(w http.ResponseWriter, r *Request) {
			writeRows(w, offsetOf(r), sodaPageSize)
		})), "does not end its pages"),
		sodaCase("socrata_duplicate_id", sodaCounts, soda(sodaRows, editRows(pageAt(10), func(i int, row map[string]any) {
			if i == 12 {
				row[":id"] = "row-0011"
			}
		})), `"row-0011" came twice on page 1`),
		sodaCase("socrata_offset_ignored", sodaCounts, soda(sodaRows, on(pagesFrom(1), func(w http.ResponseWriter, r *Request) {
			writeRows(w, 0, sodaPageSize)
		})), "came on page 0 and again on page 1"),
	)
	return cs
}

// writeRows writes n rows from row first (sodaRow's, every column), a
// page of a portal that makes rows up.
func writeRows(w http.ResponseWriter, first, n int) {
	var b strings.Builder
	b.WriteByte('[')
	for i := first; i < first+n; i++ {
		if i > first {
			b.WriteByte(',')
		}
		r := sodaRow(i)
		b.WriteString(`{":id":"` + r.ID + `",":created_at":"2026-11-01T08:00:00.000Z",":updated_at":"2026-11-01T08:00:00.000Z","name":"` +
			r.Values["name"].(string) + `","location":{"type":"Point","coordinates":[-87.6,41.8]}}`)
	}
	b.WriteByte(']')
	w.Header().Set("Content-Type", ctJSON)
	_, _ = w.Write([]byte(b.String()))
}

// socrataColumns: a column renamed, added or dropped between the pages of
// one read, a type that changes, metadata that lists other columns than
// the rows have. A snapshot that mixes two schemas is never applied; a
// column null for a whole page is just nulls (SODA leaves nulls out), and
// a value its column's type cannot hold stays in the properties.
func socrataColumns() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	rename := func(from, to string) func(int, map[string]any) {
		return func(_ int, row map[string]any) {
			if v, ok := row[from]; ok {
				row[to] = v
				delete(row, from)
			}
		}
	}
	add(
		onContent(sodaCase("socrata_column_renamed", sodaSchema, soda(sodaRows, editRows(pagesFrom(20), rename("name", "nom"))),
			`column "nom"`)),
		sodaCase("socrata_column_appears", sodaSchema, soda(sodaRows, editRows(pagesFrom(10), func(i int, row map[string]any) {
			row["zone"] = "R-" + strconv.Itoa(i)
		})), `column "zone"`),
		// The portal drops a column while the feed reads: the metadata
		// after the read lists other columns than before.
		sodaCase("socrata_column_dropped", sodaSchema, soda(sodaRows, laterMeta(dropColumn("kind")),
			editRows(pagesFrom(20), func(_ int, row map[string]any) { delete(row, "kind") })), "columns changed during the read"),
		sodaLoad("socrata_column_null_page", sodaSchema, sodaRows, soda(sodaRows, editRows(pageAt(10), func(_ int, row map[string]any) {
			delete(row, "kind")
		}))),
		sodaLoad("socrata_type_changes", sodaSchema, sodaRows, soda(sodaRows, editRows(pagesFrom(20), func(i int, row map[string]any) {
			row["amount"] = map[string]any{"value": i}
		}))),
		// A column the metadata does not list, from the first page on, is
		// one of the snapshot's columns, typed from its values.
		sodaLoad("socrata_metadata_fewer_columns", sodaSchema, sodaRows, soda(sodaRows, editMeta(dropColumn("kind")))),
		sodaLoad("socrata_metadata_more_columns", sodaSchema, sodaRows, soda(sodaRows, editMeta(func(v map[string]any) {
			cols := v["columns"].([]any)
			v["columns"] = append(cols, map[string]any{"fieldName": "zone", "name": "Zone", "dataTypeName": "text"})
		}))),
		sodaCase("socrata_metadata_no_columns", sodaSchema, soda(sodaRows, editMeta(func(v map[string]any) { delete(v, "columns") })),
			"lists no columns"),
		sodaCase("socrata_metadata_wrong_type", sodaSchema, soda(sodaRows, editMeta(func(v map[string]any) { v["rowsUpdatedAt"] = "yesterday" })),
			"rowsUpdatedAt is a string, want a number"),
		sodaCase("socrata_metadata_array", sodaSchema, soda(sodaRows, on(isMeta, reply(200, ctJSON, `[{"columns":[]}]`))),
			"the metadata is an array, want an object"),
	)
	return cs
}

// laterMeta edits the metadata after the hostile phase's first request
// of it: what the read asks at its end, to check that the dataset did not
// move.
func laterMeta(edit func(v map[string]any)) sodaHook {
	var asked atomic.Int32
	h := editMeta(edit)
	return sodaHook{match: func(r *Request) bool { return isMeta(r) && asked.Add(1) > 1 }, respond: h.respond}
}

// dropColumn removes column name from a metadata document.
func dropColumn(name string) func(v map[string]any) {
	return func(v map[string]any) {
		cols := v["columns"].([]any)
		out := cols[:0]
		for _, c := range cols {
			if c.(map[string]any)["fieldName"] != name {
				out = append(out, c)
			}
		}
		v["columns"] = out
	}
}

// socrataBodies: a page that is a JSON value but not an array of rows, a
// row that is not an object, invalid JSON, an error object with 200, 4xx
// and 5xx, an HTML page. A whole document that is not rows is the feed's
// error (content origin: its breaker stays closed); a 5xx and an HTML
// page are the portal's failure.
func socrataBodies() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	second := func(r Responder) Responder { return soda(sodaRows, on(pageAt(10), r)) }
	add(
		onContent(sodaCase("socrata_body_number", sodaBodies, second(reply(200, ctJSON, "42")), "JSON value 42")),
		onContent(sodaCase("socrata_body_null", sodaBodies, second(reply(200, ctJSON, "null")), "JSON value null")),
		onContent(sodaCase("socrata_body_string", sodaBodies, second(reply(200, ctJSON, `"text"`)), `JSON value "text"`)),
		sodaCase("socrata_body_empty_array", sodaBodies, soda(sodaRows, on(pageAt(0), reply(200, ctJSON, "[]"))), "read 0 rows of the 30"),
		onContent(sodaCase("socrata_body_object", sodaBodies, second(reply(200, ctJSON, `{"rows":[]}`)), "an object")),
		onContent(sodaCase("socrata_row_number", sodaBodies, soda(sodaRows, mapRows(pageAt(10), func(i int, row any) any {
			if i == 13 {
				return 42
			}
			return row
		})), "row 3", "not an object")),
		sodaCase("socrata_row_array", sodaBodies, soda(sodaRows, mapRows(pageAt(10), func(i int, row any) any {
			if i == 11 {
				return []any{"row-0011", "Site 11"}
			}
			return row
		})), "row 1", "not an object"),
		onContent(sodaCase("socrata_json_syntax", sodaBodies, second(reply(200, ctJSON, `[{":id":"row-0010","name":"x"},{":id":"row-0011",name:"y"}]`)),
			"row 1: the row is not valid JSON")),
		sodaCase("socrata_error_200", sodaBodies, second(reply(200, ctJSON, sodaError("query.execution.timeout", "Query took too long"))),
			"Query took too long"),
		sodaCase("socrata_error_400", sodaBodies, soda(sodaRows, on(isCount, reply(400, ctJSON, sodaError("query.compiler.malformed", "Could not parse SoQL query")))),
			"query.compiler.malformed"),
		sodaCase("socrata_error_500", sodaBodies, second(reply(500, ctJSON, sodaError("internal", "Internal error"))), "500"),
		sodaCase("socrata_html_200", sodaBodies, second(file(ctHTML, "html_200.html")), "HTML"),
	)
	return cs
}

// socrataTruncated: a page cut short, by a reset, a clean close of a
// chunked body, or a complete HTTP answer of half the rows.
func socrataTruncated() (cs []Case) {
	for _, t := range []struct {
		mode string
		n    int
	}{{cutReset, 300}, {cutChunked, 500}, {cutClean, -20}, {cutFIN, -1}} {
		name := "socrata_trunc_" + t.mode + "_" + strings.ReplaceAll(strconv.Itoa(t.n), "-", "end")
		cs = append(cs, sodaCase(name, sodaTrunc, soda(sodaRows, on(pageAt(10), cutAnswer(soda(sodaRows), t.n, t.mode))),
			"unexpected EOF", "connection reset", "ends inside"))
	}
	return cs
}

// socrataBombs: a 1 GB page (gzipped, generated as it is sent), a row
// nested a million deep, a value over limits.value_bytes, a page of rows
// for ever.
func socrataBombs() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	rowOpen := `[{":id":"row-0000",":created_at":"2026-11-01T08:00:00.000Z","name":`
	add(
		sodaCase("socrata_bomb_page_1gb", sodaBombs, soda(sodaRows, on(pageAt(0), stream(ctJSON, true,
			text(rowOpen+`"`), repeatBytes('a', gib), text(`"}]`)))), "limits.value_bytes", "limits.feature_bytes"),
		sodaCase("socrata_bomb_deep", sodaBombs, soda(sodaRows, on(pageAt(0), stream(ctJSON, false, text(rowOpen),
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, '[') }},
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, ']') }},
			text(`}]`)))), "nested"),
		withLimits(sodaCase("socrata_bomb_value", sodaBombs, soda(sodaRows, on(pageAt(0), stream(ctJSON, false,
			text(rowOpen+`"`), repeatBytes('v', 2*mib), text(`"}]`)))), "limits.value_bytes"), "value_bytes", mib),
		withLimits(sodaCase("socrata_bomb_rows_forever", sodaBombs, soda(sodaRows, on(pageAt(0), stream(ctJSON, false,
			text(`[`), generator{sep: ",", n: -1, item: func(b []byte, i int64) []byte {
				b = append(b, `{":id":"row-`...)
				b = strconv.AppendInt(b, i, 10)
				return append(b, `","name":"a site name long enough to matter"}`...)
			}}))), "limits.poll_features", "limits.body_bytes"), "poll_features", 20000, "body_bytes", 16*mib),
	)
	return cs
}

// socrataTokens: a portal that echoes the app token (sent in X-App-Token)
// in a row's value, in an :id, in a column's name and in an error message.
// The token is scrubbed from every stored text, feature data included:
// the rows load with the token REDACTED, the error names no token.
func socrataTokens() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	add(
		sodaLoad("socrata_token_in_value", sodaTokens, sodaRows, soda(sodaRows, editRows(isPage, func(i int, row map[string]any) {
			if i%10 == 3 {
				row["name"] = "requested with token " + AppToken
			}
		}))),
		sodaLoad("socrata_token_in_id", sodaTokens, sodaRows, soda(sodaRows, editRows(isPage, func(i int, row map[string]any) {
			if i == 7 {
				row[":id"] = "row-0007-" + AppToken
			}
		}))),
		sodaCase("socrata_token_in_column", sodaTokens, soda(sodaRows, editRows(pageAt(10), func(_ int, row map[string]any) {
			row["x_"+AppToken] = "1"
		})), "REDACTED"),
		sodaCase("socrata_token_in_error", sodaTokens, soda(sodaRows, on(isCount, func(w http.ResponseWriter, r *Request) {
			reply(403, ctJSON, sodaError("", "Invalid app_token specified: "+r.Header.Get("X-App-Token")))(w, r)
		})), "403"),
	)
	return cs
}

// socrataHTTP: redirects to the peer origin (refused; followed under
// redirects: follow, without the app token, which is for the feed's own
// origin), a page that trickles, a 429 whose Retry-After is honoured and
// one whose Retry-After is absurd (parked at once).
func socrataHTTP() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	follow := sodaLoad("socrata_redirect_follow", sodaHTTP, sodaRows, soda(sodaRows,
		on(func(r *Request) bool { return fromPeer(r) && r.Header.Get("X-App-Token") != "" },
			reply(403, ctJSON, sodaError("", "this origin was sent the feed's app token"))),
		sodaHook{match: func(r *Request) bool { return !fromPeer(r) }, respond: func(w http.ResponseWriter, r *Request, _ http.Handler) {
			redirect(302, "{peer}"+r.URL.RequestURI())(w, r)
		}}))
	follow.Redirects = "follow"
	slowPage := sodaCase("socrata_slowloris", sodaHTTP, soda(sodaRows, on(pageAt(0), func(w http.ResponseWriter, r *Request) {
		// White space without end: the body never starts its array.
		drip(w, r, ctJSON, 100*time.Millisecond, func(int) []byte { return []byte(" ") })
	})), "timed out", "timeout")
	slowPage.RequestTimeout, slowPage.Within = 2*time.Second, 15*time.Second
	add(
		sodaCase("socrata_redirect_cross_origin", sodaHTTP, soda(sodaRows, on(pageAt(10), func(w http.ResponseWriter, r *Request) {
			redirect(302, "{peer}"+r.URL.RequestURI())(w, r)
		})), "redirect"),
		follow,
		slowPage,
		// A 429 whose Retry-After is a second: the page is asked again
		// after it, and the dataset loads.
		func() Case {
			var once atomic.Bool
			c := sodaLoad("socrata_429_retry_after", sodaHTTP, sodaRows, soda(sodaRows, on(func(r *Request) bool {
				return pageAt(10)(r) && once.CompareAndSwap(false, true)
			}, reply(429, ctJSON, sodaError("", "Too many requests"), "Retry-After", "1"))))
			c.Origin, c.Timeout = "socrata429ok", 40*time.Second
			c.Breaker = "{max_attempts: 3, backoff_base: 100ms, backoff_max: 1s}"
			return c
		}(),
		func() Case {
			c := sodaCase("socrata_429_absurd", sodaHTTP, soda(sodaRows, on(pageAt(10),
				reply(429, ctJSON, sodaError("", "Too many requests"), "Retry-After", "999999999"))), "429")
			c.Origin, c.Within, c.Timeout = "socrata429", 10*time.Second, 40*time.Second
			c.Breaker = "{max_attempts: 3, backoff_base: 100ms, backoff_max: 1s}"
			return c
		}(),
	)
	return cs
}

// socrataGeometry: a geometry column whose value is WKT or broken
// GeoJSON (the row's content error, named), coordinates out of range
// (counted invalid, loaded), and every geometry null.
func socrataGeometry() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	geomAt := func(at int, v any) Responder {
		return soda(sodaRows, editRows(isPage, func(i int, row map[string]any) {
			if i == at {
				row["location"] = v
			}
		}))
	}
	outOfRange := sodaLoad("socrata_geometry_out_of_range", sodaGeometry, sodaRows, geomAt(5, map[string]any{"type": "Point", "coordinates": []any{500, 100}}))
	outOfRange.InvalidGeometries = 1
	allNull := sodaCase("socrata_geometry_all_null", sodaGeometry, soda(sodaRows, editRows(isPage, func(_ int, row map[string]any) {
		delete(row, "location")
	})), "held", "geometr")
	add(
		sodaCase("socrata_geometry_wkt", sodaGeometry, geomAt(12, "POINT (-87.6 41.8)"), `column "location"`),
		sodaCase("socrata_geometry_bad_geojson", sodaGeometry, geomAt(12, map[string]any{"type": "Point", "coordinates": "here"}), `column "location"`),
		outOfRange,
		allNull,
	)
	return cs
}
