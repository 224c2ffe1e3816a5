package hostile

import (
	"net/http"
	"strings"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
)

// An ArcGIS case's layer is a FeatureServer layer below its URL, served by
// arcgistest: the good phase's layer of GoodFeatures points, then in the
// hostile phase arcgisLayer's, edited since (its lastEditDate moved, so
// that a poll does not call it unchanged), with arcgistest's faults or with
// one kind of request (arcgisOp) answered by a responder of the corpus.

// arcgisEdit is how many seconds a hostile layer's lastEditDate moved.
const arcgisEdit = 99

// arcgisLayer serves a layer of n points, changed by set (nil: none).
func arcgisLayer(n int, set func(*arcgistest.Layer)) Responder {
	srv := arcgistest.New()
	l := arcgisPoints(n, arcgisEdit)
	if set != nil {
		set(l)
	}
	srv.AddLayer("points", l)
	return func(w http.ResponseWriter, r *Request) { srv.ServeHTTP(w, below(r.Request, r.Path)) }
}

// arcgisFaults serves a layer of n points with faults.
func arcgisFaults(n int, faults arcgistest.Faults) Responder {
	return arcgisLayer(n, func(l *arcgistest.Layer) { l.Faults = faults })
}

// arcgisOp is what an ArcGIS request asks: "probe" (the layer's
// description), "count", "ids", "stats" or "features".
func arcgisOp(r *Request) string {
	if !strings.HasSuffix(strings.TrimSuffix(r.Path, "/"), "/query") {
		return "probe"
	}
	_ = r.ParseForm()
	switch {
	case r.Form.Get("returnCountOnly") == "true":
		return "count"
	case r.Form.Get("returnIdsOnly") == "true":
		return "ids"
	case r.Form.Get("outStatistics") != "":
		return "stats"
	}
	return "features"
}

// arcgisOn answers requests for op with r, and the others with rest (a
// layer of five points when nil).
func arcgisOn(op string, r, rest Responder) Responder {
	if rest == nil {
		rest = arcgisLayer(5, nil)
	}
	return func(w http.ResponseWriter, req *Request) {
		if arcgisOp(req) == op {
			r(w, req)
			return
		}
		rest(w, req)
	}
}

// arcgisJSON answers status 200 with an Esri JSON document.
func arcgisJSON(doc string) Responder { return reply(http.StatusOK, ctJSON, doc) }

// arcgisFeaturesHead opens an answer for features up to its first
// feature's attributes, after OBJECTID 1.
const arcgisFeaturesHead = `{"objectIdFieldName":"OBJECTID","geometryType":"esriGeometryPoint","fields":[{"name":"OBJECTID","type":"esriFieldTypeOID"},{"name":"name","type":"esriFieldTypeString"}],"features":[{"attributes":{"OBJECTID":1,`

// arcgisLies are an ArcGIS layer's lying id lists and counts: every one
// fails, naming the lie, before anything is applied.
func arcgisLies() (cs []Case) {
	const class = "ArcGIS: lying id lists and counts"
	fail := func(name string, r Responder, errs ...string) {
		cs = append(cs, failCase(name, class, ArcGIS, r, errs...))
	}
	fail("arcgis_ids_missing", arcgisOn("ids", arcgisJSON(`{"objectIdFieldName":"OBJECTID","objectIds":[1,2,3,4]}`), nil),
		"the count is 5 but the id list holds 4 ids")
	fail("arcgis_ids_duplicated", arcgisFaults(5, arcgistest.Faults{IDsDuplicate: 3, Count: 6}), "holds object id 3 twice")
	fail("arcgis_ids_more_than_count", arcgisFaults(5, arcgistest.Faults{IDsExtra: 3}), "the id list holds more ids")
	fail("arcgis_ids_no_feature", arcgisFaults(5, arcgistest.Faults{IDsExtra: 3, Count: 8}),
		"object id 2000000 is in the id list but the server does not return it")
	fail("arcgis_ids_not_returned", arcgisFaults(5, arcgistest.Faults{DropOID: 4}),
		"object id 4 is in the id list but the server does not return it")
	fail("arcgis_ids_not_numbers", arcgisOn("ids", arcgisJSON(`{"objectIdFieldName":"OBJECTID","objectIds":["1","2"]}`), nil), "id list")
	fail("arcgis_count_more", arcgisFaults(5, arcgistest.Faults{Count: 9}), "the count is 9 but the id list holds 5 ids")
	fail("arcgis_count_less", arcgisOn("count", arcgisJSON(`{"count":3}`), nil), "the id list holds more ids")
	fail("arcgis_count_missing", arcgisOn("count", arcgisJSON(`{"objectIdFieldName":"OBJECTID"}`), nil), "the answer has no count")
	fail("arcgis_count_negative", arcgisOn("count", arcgisJSON(`{"count":-5}`), nil), "the answer has no count")
	fail("arcgis_count_string", arcgisOn("count", arcgisJSON(`{"count":"5"}`), nil), "does not decode")
	fail("arcgis_count_huge", arcgisOn("count", arcgisJSON(`{"count":1000000000000}`), nil), "limits.poll_features")
	return cs
}

// arcgisExceeded are answers that say exceededTransferLimit for ever: a
// flag alone is no lie when every id asked came (the layer loads, asking
// fewer ids at a time when the answers are capped); an answer that never
// brings an id, or offsets that never end, fail.
func arcgisExceeded() (cs []Case) {
	const class = "ArcGIS: exceededTransferLimit for ever"
	load := func(name string, r Responder) {
		cs = append(cs, Case{Name: name, Class: class, Kind: ArcGIS, Load: true, Features: 5, Respond: r})
	}
	load("arcgis_exceeded_forever", arcgisFaults(5, arcgistest.Faults{ExceededAlways: true}))
	load("arcgis_exceeded_forever_capped", arcgisFaults(5, arcgistest.Faults{ExceededAlways: true, Cap: 2}))
	cs = append(cs,
		failCase("arcgis_exceeded_forever_empty", class, ArcGIS, arcgisOn("features", arcgisJSON(
			`{"objectIdFieldName":"OBJECTID","features":[],"exceededTransferLimit":true}`), nil),
			"is in the id list but the server does not return it"),
		failCase("arcgis_offsets_forever", class, ArcGIS, arcgisLayer(5, func(l *arcgistest.Layer) {
			l.NoStatistics = true
			l.Faults = arcgistest.Faults{IDsFail: true, EndlessOffsets: true}
		}), "more than the count"),
	)
	return cs
}

// arcgisErrors are error objects with status 200 (and their kin), in
// every document: each the feed's failure naming the server's error,
// except a failed id list, which the layer's object-id windows replace.
func arcgisErrors() (cs []Case) {
	const class = "ArcGIS: error objects with status 200"
	const token = `{"error":{"code":498,"message":"Invalid Token","details":[]}}`
	fail := func(name string, r Responder, errs ...string) {
		cs = append(cs, failCase(name, class, ArcGIS, r, errs...))
	}
	fail("arcgis_error_498_probe", arcgisOn("probe", arcgisJSON(token), nil), "token is invalid or expired")
	fail("arcgis_error_498_count", arcgisOn("count", arcgisJSON(token), nil), "token is invalid or expired")
	fail("arcgis_error_498_features", arcgisOn("features", arcgisJSON(token), nil), "token is invalid or expired")
	fail("arcgis_error_499", arcgisFaults(5, arcgistest.Faults{Token: "s3cret"}), "the layer needs a token")
	fail("arcgis_error_500_features", arcgisFaults(5, arcgistest.Faults{ErrorEvery: 1}), "server answered error 500")
	fail("arcgis_error_after_features", arcgisFaults(5, arcgistest.Faults{ErrorAfterFeaturesEvery: 1}), "server answered error 500")
	fail("arcgis_error_second_member", arcgisFaults(5, arcgistest.Faults{ErrorSecondEvery: 1}), "server answered error 500")
	fail("arcgis_error_400_query", arcgisFaults(5, arcgistest.Faults{BadQuery: true}), "the query is invalid")
	fail("arcgis_html_200", arcgisFaults(5, arcgistest.Faults{HTMLEvery: 1}), "HTML")
	fail("arcgis_not_a_layer", arcgisOn("probe", arcgisJSON(`{"currentVersion":11.1,"layers":[{"id":0,"name":"points"}]}`), nil), "not a layer")
	cs = append(cs, Case{Name: "arcgis_error_500_ids", Class: class, Kind: ArcGIS, Load: true, Features: 5,
		Respond: arcgisFaults(5, arcgistest.Faults{IDsFail: true})})
	return cs
}

// arcgisTruncated are answers cut short: the feed's failure, the previous
// snapshot kept; but a cut id list is read around.
func arcgisTruncated() (cs []Case) {
	const class = "ArcGIS: truncated answers"
	for _, t := range []struct {
		op, mode string
		n        int
	}{
		{"features", cutReset, 200}, {"features", cutFIN, -1}, {"features", cutChunked, 300}, {"features", cutClean, -2},
		{"probe", cutClean, 100}, {"count", cutReset, 5},
	} {
		name := "arcgis_trunc_" + t.op + "_" + t.mode
		cs = append(cs, failCase(name, class, ArcGIS, arcgisOn(t.op, cutAnswer(arcgisLayer(5, nil), t.n, t.mode), nil),
			"unexpected EOF", "connection reset", "does not decode", "unexpected end"))
	}
	// A cut id list is the server's failure: the object-id windows read
	// the layer instead, proven by the count, and it loads.
	cs = append(cs, Case{Name: "arcgis_trunc_ids_clean", Class: class, Kind: ArcGIS, Load: true, Features: 5,
		Respond: arcgisOn("ids", cutAnswer(arcgisLayer(5, nil), -3, cutClean), nil)})
	return cs
}

// arcgisBombs are an ArcGIS layer's bombs: gzip bombs in its small
// documents (each refused at its own bound, named), a huge string (its
// feature's bound may come first: the answer is read a feature at a
// time), deep nesting and fat features in the answers for features.
func arcgisBombs() (cs []Case) {
	const class = "ArcGIS: bombs"
	fail := func(name string, r Responder, errs ...string) {
		cs = append(cs, failCase(name, class, ArcGIS, r, errs...))
	}
	fail("arcgis_bomb_description", arcgisFaults(5, arcgistest.Faults{DescriptionBomb: 20 << 20}), "the layer description answer is larger than")
	fail("arcgis_bomb_count", arcgisFaults(5, arcgistest.Faults{CountBomb: 2 << 20}), "the count answer is larger than")
	fail("arcgis_bomb_id_list", arcgisFaults(5, arcgistest.Faults{IDListBomb: 5_000_000}), "the id list holds more ids")
	fail("arcgis_bomb_id_padding", arcgisFaults(5, arcgistest.Faults{IDListPadding: 2 << 20}), "the id list answer is larger than")
	fail("arcgis_bomb_fat_features", arcgisFaults(5, arcgistest.Faults{Padding: 20 << 20}), "limits.feature_bytes")
	fail("arcgis_bomb_string_gzip", arcgisOn("features", stream(ctJSON, true, text(arcgisFeaturesHead+`"name":"`),
		repeatBytes('a', 2*gib), text(`"},"geometry":{"x":1,"y":2}}]}`)), nil), "limits.value_bytes", "limits.feature_bytes")
	fail("arcgis_bomb_deep_geometry", arcgisOn("features", stream(ctJSON, false, text(arcgisFeaturesHead+`"name":"x"},"geometry":{"rings":`),
		generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, '[') }},
		generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, ']') }},
		text(`}}]}`)), nil), "nested", "max depth")
	return cs
}
