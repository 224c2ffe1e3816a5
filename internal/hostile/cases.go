package hostile

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Content types of the corpus.
const (
	ctJSON = "application/json"
	ctGeo  = "application/geo+json"
	ctGML  = "application/gml+xml; version=3.2"
	ctXML  = "application/xml"
	ctHTML = "text/html; charset=utf-8"
)

// Sizes of the generated bodies, as a hostile server would send them. The
// harness caps what is really generated with Server.MaxGenerated.
const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

// Cases returns the hostile corpus: every class of hostile input a review
// found the daemon failing on, the classes it found handled already, the
// ArcGIS REST, OGC API – Features and Socrata lies and the downloaded
// files' (filecases.go), each as a case with its expected outcome.
// Static bodies are files of testdata/hostile;
// large ones are generated.
func Cases() []Case {
	var cs []Case
	for _, group := range Groups {
		cs = append(cs, group.Cases()...)
	}
	return cs
}

// Group is one group of cases, which come from one function.
type Group struct {
	// Name says what the group's cases are about: their Class.
	Name string
	// Cases returns the group's cases.
	Cases func() []Case
}

// Groups are the corpus's groups, in the order Cases lists them.
var Groups = []Group{
	{"geometry collection (finding 1)", geometryCollections},
	{"memory bomb (finding 3)", jsonBombs},
	{"secret (finding 5)", secrets},
	{"bad feature (finding 6)", badFeatures},
	{"redirect (finding 8)", redirects},
	{"429 / Retry-After (finding 8)", rateLimits},
	{"coordinates out of range (finding 8)", coordinates},
	{"wrong types / content error (finding 8)", contentErrors},
	{"truncation", truncation},
	{"XML entities / DTD / nesting", xmlAttacks},
	{"deep JSON nesting", jsonDeep},
	{"slowloris / hanging", slowloris},
	{"connection faults / malformed HTTP", connectionFaults},
	{"error pages (HTML 200, OGC exceptions, 5xx)", errorPages},
	{"gzip lies / broken gzip", gzipLies},
	{"BOM / encodings", boms},
	{"Content-Type lies", contentTypes},
	{"paging lies (numberMatched, unstable order)", pagingLies},
	{"ArcGIS: lying id lists and counts", arcgisLies},
	{"ArcGIS: exceededTransferLimit for ever", arcgisExceeded},
	{"ArcGIS: error objects with status 200", arcgisErrors},
	{"ArcGIS: truncated answers", arcgisTruncated},
	{"ArcGIS: bombs", arcgisBombs},
	{"OGC API: next links", ogcapiLinks},
	{"OGC API: numberMatched lies", ogcapiCounts},
	{"OGC API: error answers", ogcapiErrors},
	{"OGC API: truncated pages", ogcapiTruncated},
	{"OGC API: bombs", ogcapiBombs},
	{sodaCounts, socrataCounts},
	{sodaSchema, socrataColumns},
	{sodaBodies, socrataBodies},
	{sodaTrunc, socrataTruncated},
	{sodaBombs, socrataBombs},
	{sodaTokens, socrataTokens},
	{sodaHTTP, socrataHTTP},
	{sodaGeometry, socrataGeometry},
	{"file: zips (bombs, slips, damage)", fileZips},
	{"file: Shapefile headers and fields", fileShapefiles},
	{"file: CSV", fileCSVs},
	{"file: GeoJSON", fileGeoJSONs},
	{"file: GeoPackages", fileGeoPackages},
	{"file: FlatGeobuf", fileFlatGeobufs},
	{"file: File Geodatabases", fileGDBs},
	{"file: HTTP (redirects, slow-loris, sizes)", fileTransfers},
}

// loadCase is a case whose static body loads features.
func loadCase(name, class, kind, fileName string, features int) Case {
	ct := ctJSON
	if kind == GML {
		ct = ctGML
	}
	return Case{Name: name, Class: class, Kind: kind, Load: true, Features: features, Respond: file(ct, fileName)}
}

// failCase is a case that must fail naming one of errs.
func failCase(name, class, kind string, r Responder, errs ...string) Case {
	return Case{Name: name, Class: class, Kind: kind, Errors: errs, Respond: r}
}

// fcOpen opens a FeatureCollection up to its first feature's properties.
const fcOpen = `{"type":"FeatureCollection","features":[{"type":"Feature","id":"big","geometry":{"type":"Point","coordinates":[-78.9,35.6]},"properties":`

// geometryCollections: GeometryCollections are stored (with members, empty,
// nested); a member PostGIS cannot hold counts the geometry invalid.
func geometryCollections() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const gc = "geometry collection (finding 1)"
	for _, n := range []string{"gc_members", "gc_empty", "gc_nested", "gc_single", "gc_only", "gc_multi"} {
		add(loadCase(n, gc, GeoJSON, n+".geojson", 2))
	}
	c := loadCase("gc_broken_member", gc, GeoJSON, "gc_broken_member.geojson", 2)
	c.InvalidGeometries = 1
	add(c)
	// A null member is not GeoJSON at all: like any malformed geometry, the
	// document is the feed's content error (not the origin's), named.
	add(failCase("gc_member_null", gc, GeoJSON, file(ctJSON, "gc_member_null.geojson"), "GeometryCollection member 0"))
	add(loadCase("gc_gml_multigeometry", gc, GML, "gc_multigeometry.gml", 2))
	return cs
}

// jsonBombs are memory bombs. Each must end as the feed's error naming the
// limit, having held no more than the limit.
func jsonBombs() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const bomb = "memory bomb (finding 3)"
	add(
		failCase("bomb_gzip_string", bomb, GeoJSON, stream(ctJSON, true,
			text(fcOpen+`{"big":"`), repeatBytes('a', 2*gib), text(`"}}]}`)), "limits.value_bytes"),
		withLimits(failCase("bomb_gzip_features", bomb, GeoJSON, stream(ctJSON, true, points(20_000_000)), "limits.body_bytes"),
			"body_bytes", 16*mib),
		withLimits(failCase("bomb_gzip_gml", bomb, GML, stream(ctGML, true,
			generator{head: gmlHead, n: 20_000_000, item: appendGMLPoint, tail: gmlTail}), "limits.body_bytes"),
			"body_bytes", 16*mib),
		withLimits(failCase("bomb_endless_features", bomb, GeoJSON, stream(ctJSON, false, points(-1)), "limits.poll_features"),
			"poll_features", 20000),
		// Pages of 1 MB for ever: only the poll's byte bound can stop it.
		withTimeout(withPageSize(withLimits(failCase("bomb_endless_bytes", bomb, WFS, pagedFat(), "limits.poll_bytes"),
			"poll_bytes", 24*mib), 10), 20*time.Second),
		withLimits(failCase("bomb_endless_gml", bomb, GML, stream(ctGML, false,
			generator{head: gmlHead, n: -1, item: appendGMLPoint}), "limits.poll_features"),
			"poll_features", 20000),
		failCase("bomb_string_200mb", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{"big":"`), repeatBytes('a', 200*mib), text(`"}}]}`)), "limits.value_bytes"),
		failCase("bomb_string_escapes", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{"big":"`), generator{n: 10 * mib, item: func(b []byte, _ int64) []byte { return append(b, `\u0041`...) }}, text(`"}}]}`)),
			"limits.value_bytes"),
		failCase("bomb_number_20mb", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{"n":1`), repeatBytes('7', 20*mib), text(`}}]}`)), "limits.value_bytes"),
		failCase("bomb_key_20mb", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{"`), repeatBytes('k', 20*mib), text(`":1}}]}`)), "limits.value_bytes", "limits.feature_bytes"),
		failCase("bomb_many_properties", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{`), generator{sep: ",", n: 1_000_000, item: func(b []byte, i int64) []byte {
				b = append(b, `"p`...)
				b = strconv.AppendInt(b, i, 10)
				return append(b, `":1`...)
			}}, text(`}}]}`)), "limits.properties"),
		failCase("bomb_feature_bytes", bomb, GeoJSON, stream(ctJSON, false,
			text(fcOpen+`{`), generator{sep: ",", n: 500, item: func(b []byte, i int64) []byte {
				b = append(b, `"p`...)
				b = strconv.AppendInt(b, i, 10)
				b = append(b, `":"`...)
				for range 100 << 10 {
					b = append(b, 'v')
				}
				return append(b, '"')
			}}, text(`}}]}`)), "limits.feature_bytes"),
		failCase("bomb_coordinates", bomb, GeoJSON, stream(ctJSON, false,
			text(`{"type":"FeatureCollection","features":[{"type":"Feature","id":"line","properties":{},"geometry":{"type":"LineString","coordinates":[`),
			generator{sep: ",", n: 10_000_000, item: func(b []byte, i int64) []byte {
				return append(b, `[-78.912345678,35.612345678]`...)
			}}, text(`]}}]}`)), "limits.feature_bytes"),
		withLimits(failCase("bomb_one_request_1m", bomb, GeoJSON, stream(ctJSON, false, points(1_000_000)), "limits.poll_features"),
			"poll_features", 20000),
		withTimeout(withPageSize(withLimits(failCase("bomb_paged_forever", bomb, WFS, paged(func(start, count int) (int, int, []int) {
			return 100_000_000, count, seq(start, count)
		}), "limits.poll_features"), "poll_features", 2000), 100), 10*time.Second),
		failCase("bomb_xml_attribute", bomb, GML, stream(ctGML, false,
			text(gmlHead+`<wfs:member><ingestd:points gml:id="x"><ingestd:name foo="`), repeatBytes('a', 100*mib), text(`">x</ingestd:name></ingestd:points></wfs:member>`+gmlTail)),
			"limits.value_bytes"),
		failCase("bomb_xml_text", bomb, GML, stream(ctGML, false,
			text(gmlHead+`<wfs:member><ingestd:points gml:id="x"><ingestd:name>`), repeatBytes('a', 200*mib), text(`</ingestd:name></ingestd:points></wfs:member>`+gmlTail)),
			"limits.value_bytes"),
		failCase("bomb_xml_gzip_text", bomb, GML, stream(ctGML, true,
			text(gmlHead+`<wfs:member><ingestd:points gml:id="x"><ingestd:name>`), repeatBytes('a', 2*gib), text(`</ingestd:name></ingestd:points></wfs:member>`+gmlTail)),
			"limits.value_bytes"),
		withLimits(failCase("bomb_whitespace", bomb, GeoJSON, stream(ctJSON, false,
			text(`{"type":"FeatureCollection",`), repeatBytes(' ', 500*mib), text(`"features":[]}`)), "limits.body_bytes"),
			"body_bytes", 16*mib),
	)
	return cs
}

// secrets: secrets in URLs and echoed in error bodies never reach
// the output.
func secrets() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const secret = "secret (finding 5)"
	addSecret := func(name, query, userinfo, token string, r Responder, errs ...string) {
		c := failCase(name, secret, GeoJSON, r, errs...)
		c.Query, c.UserInfo, c.Secrets = query, userinfo, []string{token}
		add(c)
	}
	addSecret("secret_userinfo_token", "", "T0kenUs3rInf0", "T0kenUs3rInf0", fileStatus(500, ctHTML, "html_500.html"), "500")
	for _, p := range []string{"pw", "ticket", "hash", "k", "access_key_id", "apikey"} {
		tok := "S3cr3t" + strings.ReplaceAll(p, "_", "")
		addSecret("secret_query_"+p, p+"="+tok, "", tok, reply(403, "text/plain", "Forbidden"), "403")
	}
	addSecret("secret_echoed_exception", "token=Ech0edS3cret", "", "Ech0edS3cret", echoException(), "NoApplicableCode", "exception")
	addSecret("secret_redirect_token", "", "", "R3dir3ctT0ken", redirect(302, "{peer}/data?token=R3dir3ctT0ken"), "redirect")
	return cs
}

// badFeatures: one bad feature is repaired (U+FFFD) or refused alone,
// never the whole layer.
func badFeatures() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const badFeature = "bad feature (finding 6)"
	for _, n := range []string{"utf8_invalid_value", "utf8_invalid_key", "utf8_overlong", "utf8_truncated_seq",
		"utf8_cesu_surrogate", "utf8_above_max", "nul_value", "nul_key", "nul_nested", "surrogate_high",
		"surrogate_low", "surrogate_reversed", "surrogate_in_key", "nul_id", "utf8_invalid_id"} {
		c := loadCase(n, badFeature, GeoJSON, n+".geojson", 2)
		c.Repaired = true
		add(c)
	}
	add(
		loadCase("id_long", badFeature, GeoJSON, "id_long.geojson", 1),
		loadCase("id_long_number", badFeature, GeoJSON, "id_long_number.geojson", 1),
		loadCase("number_exponent_huge", badFeature, GeoJSON, "number_exponent_huge.geojson", 1),
		loadCase("number_long_fraction", badFeature, GeoJSON, "number_long_fraction.geojson", 1),
		func() Case {
			c := loadCase("xml_invalid_utf8", badFeature, GML, "xml_invalid_utf8.gml", 1)
			c.Repaired = true
			return c
		}(),
		loadCase("gml_id_long", badFeature, GML, "gml_id_long.gml", 5),
		Case{Name: "id_1mb", Class: badFeature, Load: true, Features: 1, Respond: stream(ctJSON, false,
			text(`{"type":"FeatureCollection","features":[{"type":"Feature","id":"h.0","geometry":{"type":"Point","coordinates":[-78.9,35.6]},"properties":{}},{"type":"Feature","id":"`),
			repeatBytes('i', mib), text(`","geometry":null,"properties":{}}]}`))},
		failCase("number_nan", badFeature, GeoJSON, file(ctJSON, "number_nan.geojson"), "invalid JSON"),
		failCase("number_leading_zero", badFeature, GeoJSON, file(ctJSON, "number_leading_zero.geojson"), "invalid JSON"),
		failCase("control_raw", badFeature, GeoJSON, file(ctJSON, "control_raw.geojson"), "invalid character", "control character"),
	)
	return cs
}

// redirects: redirects to other hosts are refused; 429 with an absurd
// Retry-After parks at once; out-of-range coordinates are counted
// invalid; content errors stay the feed's (see OriginContent).
func redirects() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const redir = "redirect (finding 8)"
	add(
		failCase("redirect_cross_origin", redir, GeoJSON, redirect(302, "{peer}/data"), "redirect"),
		failCase("redirect_cross_origin_307", redir, GeoJSON, redirect(307, "{peer}/data"), "redirect"),
		failCase("redirect_cross_origin_301", redir, GeoJSON, redirect(301, "{peer}/data"), "redirect"),
		failCase("redirect_cross_origin_wfs", redir, WFS, redirect(302, "{peer}/wfs"), "redirect"),
		failCase("redirect_scheme_relative", redir, GeoJSON, redirectSchemeRelative(), "redirect"),
		failCase("redirect_file", redir, GeoJSON, redirect(302, "file:///etc/passwd"), "redirect", `"file"`),
		failCase("redirect_gopher", redir, GeoJSON, redirect(302, "gopher://127.0.0.1:1/x"), "redirect", `"gopher"`),
		failCase("redirect_loop", redir, GeoJSON, redirect(302, "{self}/hostile/redirect_loop"), "redirect"),
		failCase("redirect_no_location", redir, GeoJSON, reply(302, "text/plain", "moved"), "302"),
		Case{Name: "redirect_same_origin", Class: redir, Load: true, Features: 2, Respond: redirect(302, "{self}/data")},
	)
	return cs
}

// rateLimits are the cases of 429 and Retry-After.
func rateLimits() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const rate = "429 / Retry-After (finding 8)"
	for _, ra := range []struct{ name, status, value string }{
		{"ratelimit_429_absurd", "429", "999999999"},
		{"ratelimit_429_far_date", "429", "Fri, 31 Dec 9999 23:59:59 GMT"},
		{"ratelimit_429_negative", "429", "-5"},
		{"ratelimit_429_garbage", "429", "soon, maybe"},
		{"ratelimit_503_absurd", "503", "999999999"},
	} {
		st, _ := strconv.Atoi(ra.status)
		// Retries on, as by default: a retry that waited for the
		// Retry-After would hold the poll for its whole timeout.
		add(Case{Name: ra.name, Class: rate, Origin: strings.ReplaceAll(strings.TrimPrefix(ra.name, "ratelimit_"), "_", ""),
			Errors: []string{ra.status}, Within: 10 * time.Second, Timeout: 40 * time.Second,
			Breaker: "{max_attempts: 3, backoff_base: 100ms, backoff_max: 1s}",
			Respond: reply(st, "text/plain", "Too Many Requests", "Retry-After", ra.value)})
	}
	return cs
}

// coordinates are the cases of coordinates out of range.
func coordinates() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const coords = "coordinates out of range (finding 8)"
	for _, n := range []string{"coords_lon_500", "coords_lat_100", "coords_polygon_out", "coords_huge", "coords_inf"} {
		c := loadCase(n, coords, GeoJSON, n+".geojson", 2)
		c.InvalidGeometries = 1
		add(c)
	}
	c := loadCase("gml_coords_out", coords, GML, "gml_coords_out.gml", 6)
	c.InvalidGeometries = 1
	add(c)
	return cs
}

// contentErrors: content errors, on an origin whose breaker trips on the first
// failure charged to it: the harness checks it stays closed.
func contentErrors() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const content = "wrong types / content error (finding 8)"
	for _, ce := range []struct{ name, err string }{
		{"features_object", "not an array"}, {"features_string", "not an array"},
		{"geometry_string", "geometry: not an object"}, {"geometry_number", "geometry: not an object"},
		{"properties_array", "properties is not an object"}, {"properties_string", "properties is not an object"},
		{"id_object", "want a string or a number"}, {"coordinates_strings", "coordinates"},
		{"geometry_unknown_type", `unknown geometry type "Circle"`}, {"top_array", "not a JSON object"},
		{"top_null", "JSON null"}, {"type_topology", "not a FeatureCollection"},
		{"feature_type_wrong", `want "Feature"`}, {"trailing_garbage", "data after the document"},
		{"two_documents", "data after the document"}, {"duplicate_features_key", `second "features"`},
	} {
		c := failCase("content_"+ce.name, content, GeoJSON, file(ctJSON, ce.name+".geojson"), ce.err)
		c.Origin, c.Breaker = OriginContent, contentBreaker
		add(c)
	}
	c := loadCase("content_healthy", content, GeoJSON, "base.geojson", 10)
	c.Origin, c.Breaker = OriginContent, contentBreaker
	add(c)
	return cs
}

// truncation was handled already by the earlier run; kept so it stays handled.
func truncation() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const trunc = "truncation"
	for _, t := range []struct {
		kind, file, ct, mode string
		offsets              []int
	}{
		{GeoJSON, "base.geojson", ctJSON, cutReset, []int{0, 1, 2, 10, 27, 40, 100, 300, 700, 1000, 1200, -3, -1}},
		{GeoJSON, "base.geojson", ctJSON, cutFIN, []int{50, 800, -1}},
		{GeoJSON, "base.geojson", ctJSON, cutChunked, []int{0, 30, 900, -2}},
		{GeoJSON, "base.geojson", ctJSON, cutClean, []int{1, 45, 600, -1}},
		{WFS, "base_wfs.json", ctJSON, cutReset, []int{60, -1}},
		{GML, "base.gml", ctGML, cutReset, []int{0, 20, 300, 900, -1}},
		{GML, "base.gml", ctGML, cutClean, []int{100, 700, -3}},
	} {
		for _, off := range t.offsets {
			name := fmt.Sprintf("trunc_%s_%s_%d", t.kind, t.mode, off)
			if off < 0 {
				name = fmt.Sprintf("trunc_%s_%s_end%d", t.kind, t.mode, off)
			}
			add(failCase(name, trunc, t.kind, truncated(t.ct, t.file, off, t.mode),
				"unexpected EOF", "connection reset", "empty response body", "unrecognized response body", "XML syntax error"))
		}
	}
	return cs
}

// xmlAttacks are the cases of XML entities, DTDs and nesting.
func xmlAttacks() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const xmlAttack = "XML entities / DTD / nesting"
	for _, n := range []string{"billion_laughs", "xxe_file", "xml_undefined_entity"} {
		add(failCase(n, xmlAttack, GML, file(ctGML, n+".gml"), "invalid character entity"))
	}
	add(failCase("xml_mismatched", xmlAttack, GML, file(ctGML, "xml_mismatched.gml"), "closed by"))
	// A DTD that is declared but not needed is ignored, never fetched: the
	// layer loads.
	add(loadCase("xxe_dtd", xmlAttack, GML, "xxe_dtd.gml", 5), loadCase("xxe_parameter", xmlAttack, GML, "xxe_parameter.gml", 5))
	add(
		failCase("xml_quadratic_blowup", xmlAttack, GML, stream(ctGML, false,
			text(`<?xml version="1.0"?>`+"\n"+`<!DOCTYPE q [<!ENTITY a "`), repeatBytes('a', 50<<10), text(`">]>`+"\n"+gmlHead+`<wfs:member><ingestd:points gml:id="x"><ingestd:n>`),
			generator{n: 20000, item: func(b []byte, _ int64) []byte { return append(b, "&a;"...) }},
			text(`</ingestd:n></ingestd:points></wfs:member>`+gmlTail)), "unrecognized response body", "entity", "DOCTYPE"),
		failCase("xml_deep_nesting", xmlAttack, GML, stream(ctGML, false,
			text(gmlHead+`<wfs:member><ingestd:points gml:id="x"><ingestd:n>`),
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, "<a>"...) }},
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, "</a>"...) }},
			text(`</ingestd:n></ingestd:points></wfs:member>`+gmlTail)), "nested"),
	)
	return cs
}

// jsonDeep are the cases of deep JSON nesting.
func jsonDeep() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const jsonDeep = "deep JSON nesting"
	deep := func(name, head, open, close, tail string) Case {
		return failCase(name, jsonDeep, GeoJSON, stream(ctJSON, false, text(head),
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, open...) }},
			generator{n: 1_000_000, item: func(b []byte, _ int64) []byte { return append(b, close...) }},
			text(tail)), "nested")
	}
	add(
		deep("json_deep_property", fcOpen+`{"deep":`, "[", "]", `}}]}`),
		deep("json_deep_object", fcOpen+`{"deep":`, `{"a":`, "}", `}}]}`),
		deep("json_deep_coordinates", `{"type":"FeatureCollection","features":[{"type":"Feature","id":"d","properties":{},"geometry":{"type":"Point","coordinates":`, "[", "]", `}}]}`),
		func() Case {
			c := deep("json_deep_top", "", "[", "]", "")
			c.Errors = append(c.Errors, "not a JSON object")
			return c
		}(),
	)
	return cs
}

// slowloris are the cases of slowloris and hanging servers.
func slowloris() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const slowClass = "slowloris / hanging"
	slowCase := func(name string, r Responder) Case {
		c := failCase(name, slowClass, GeoJSON, r, "timed out", "deadline", "timeout")
		c.RequestTimeout, c.Within = 2*time.Second, 15*time.Second
		return c
	}
	add(
		slowCase("slow_body", slow(ctJSON, "base.geojson", 100*time.Millisecond)),
		slowCase("slow_headers", hang()),
		slowCase("slow_endless_trickle", stream(ctJSON, false, generator{head: featureCollectionHead(-1), sep: ",", n: -1,
			item: func(b []byte, i int64) []byte { time.Sleep(50 * time.Millisecond); return appendPoint(b, i) }})),
	)
	return cs
}

// connectionFaults are the cases of connection faults and malformed HTTP.
func connectionFaults() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const conn = "connection faults / malformed HTTP"
	add(
		failCase("reset_before_headers", conn, GeoJSON, raw("", true), "connection reset"),
		failCase("close_before_headers", conn, GeoJSON, raw("", false), "EOF"),
		failCase("reset_mid_headers", conn, GeoJSON, raw("HTTP/1.1 200 OK\r\nContent-Ty", true), "malformed", "connection reset"),
		failCase("garbage_status_line", conn, GeoJSON, raw("HELLO THERE\r\n\r\n", false), "malformed"),
		failCase("http09_body", conn, GeoJSON, raw(`{"type":"FeatureCollection","features":[]}`, false), "malformed"),
		failCase("bad_chunk_size", conn, GeoJSON, raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", false), "chunk"),
		failCase("status_999", conn, GeoJSON, raw("HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\n{}", false), "999"),
		failCase("continue_flood", conn, GeoJSON, raw(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 20), false), "EOF", "1xx"),
		failCase("huge_header", conn, GeoJSON, hugeHeader(12*int(mib)), "header"),
		failCase("content_length_lie_long", conn, GeoJSON, raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"type\":\"FeatureCollection\",\"features\":[]}", false), "EOF"),
	)
	return cs
}

// errorPages are the cases of error pages.
func errorPages() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const errPage = "error pages (HTML 200, OGC exceptions, 5xx)"
	add(
		failCase("html_200", errPage, GeoJSON, file(ctHTML, "html_200.html"), "HTML"),
		failCase("html_200_as_json", errPage, GeoJSON, file(ctJSON, "html_200.html"), "HTML"),
		failCase("html_200_wfs", errPage, WFS, file(ctHTML, "html_200.html"), "HTML"),
		failCase("ogc_exception_200", errPage, WFS, file(ctXML, "ogc_exception.xml"), "NoApplicableCode"),
		failCase("ogc_exception_400", errPage, WFS, fileStatus(400, ctXML, "ogc_exception.xml"), "NoApplicableCode"),
		failCase("ogc_exception_gml_200", errPage, GML, file(ctGML, "ogc_exception.xml"), "NoApplicableCode"),
		failCase("ogc_exception_110_200", errPage, WFS, file(ctXML, "ogc_exception_110.xml"), "InvalidParameterValue"),
		failCase("ogc_exception_json_200", errPage, WFS, file(ctJSON, "ogc_exception_json.json"), "ExceptionReport"),
		failCase("arcgis_error_200", errPage, GeoJSON, file(ctJSON, "arcgis_error_200.json"), "neither a FeatureCollection"),
		failCase("status_500_html", errPage, GeoJSON, fileStatus(500, ctHTML, "html_500.html"), "500"),
		failCase("status_500_wfs", errPage, WFS, fileStatus(500, ctHTML, "html_500.html"), "500"),
		failCase("status_502", errPage, GeoJSON, reply(502, ctHTML, "<html><body>Bad Gateway</body></html>"), "502"),
		failCase("status_503", errPage, GeoJSON, reply(503, "text/plain", "Service Unavailable"), "503"),
		failCase("status_504", errPage, GeoJSON, reply(504, "text/plain", "Gateway Timeout"), "504"),
		failCase("status_404", errPage, GeoJSON, reply(404, "text/plain", "Not Found"), "404"),
		failCase("status_401", errPage, GeoJSON, reply(401, "text/plain", "Unauthorized", "WWW-Authenticate", `Basic realm="x"`), "401"),
		failCase("status_410", errPage, GeoJSON, reply(410, "text/plain", "Gone"), "410"),
		failCase("status_204", errPage, GeoJSON, reply(204, "", ""), "204", "empty"),
		failCase("empty_200", errPage, GeoJSON, reply(200, ctJSON, ""), "empty"),
		failCase("whitespace_200", errPage, GeoJSON, reply(200, ctJSON, " \n\t\n "), "empty"),
		failCase("empty_collection", errPage, GeoJSON, file(ctJSON, "empty_collection.geojson"), "held"),
	)
	return cs
}

// gzipLies are the cases of gzip lies.
func gzipLies() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const gz = "gzip lies / broken gzip"
	add(
		Case{Name: "gzip_lie", Class: gz, Load: true, Features: 10, Respond: file(ctJSON, "base.geojson", "Content-Encoding", "gzip")},
		Case{Name: "gzip_lie_gml", Class: gz, Kind: GML, Load: true, Features: 5, Respond: file(ctGML, "base.gml", "Content-Encoding", "gzip")},
		Case{Name: "gzip_lie_wfs", Class: gz, Kind: WFS, Load: true, Features: 10, Respond: file(ctJSON, "base_wfs.json", "Content-Encoding", "gzip")},
		Case{Name: "gzip_double", Class: gz, Load: true, Features: 10, Respond: gzipped(ctJSON, "base.geojson", true)},
		Case{Name: "gzip_unannounced", Class: gz, Load: true, Features: 10, Respond: gzipUnannounced(ctJSON, "base.geojson")},
		Case{Name: "deflate_lie", Class: gz, Load: true, Features: 10, Respond: file(ctJSON, "base.geojson", "Content-Encoding", "deflate")},
		Case{Name: "br_lie", Class: gz, Load: true, Features: 10, Respond: file(ctJSON, "base.geojson", "Content-Encoding", "br")},
		failCase("gzip_corrupt", gz, GeoJSON, gzipMangled(ctJSON, "base.geojson", func(b []byte) []byte {
			for i := 20; i < len(b)-20; i += 7 {
				b[i] ^= 0x5a
			}
			return b
		}), "gzip", "flate"),
		failCase("gzip_truncated", gz, GeoJSON, gzipMangled(ctJSON, "base.geojson", func(b []byte) []byte { return b[:len(b)*2/3] }), "EOF"),
		failCase("gzip_bad_crc", gz, GeoJSON, gzipMangled(ctJSON, "base.geojson", func(b []byte) []byte {
			b[len(b)-8] ^= 0xff
			return b
		}), "checksum"),
		failCase("gzip_trailing_garbage", gz, GeoJSON, gzipMangled(ctJSON, "base.geojson", func(b []byte) []byte {
			return append(b, "GARBAGE AFTER THE STREAM"...)
		}), "gzip"),
	)
	return cs
}

// boms are the cases of BOMs and encodings.
func boms() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const bom = "BOM / encodings"
	add(
		loadCase("bom_utf8", bom, GeoJSON, "bom_utf8.geojson", 3),
		loadCase("bom_utf8_gml", bom, GML, "bom_utf8.gml", 5),
		failCase("bom_twice", bom, GeoJSON, file(ctJSON, "bom_twice.geojson"), "unrecognized response body", "invalid JSON", "not a JSON object"),
		failCase("bom_utf16le", bom, GeoJSON, file(ctJSON, "bom_utf16le.geojson"), "unrecognized response body", "invalid JSON", "not a JSON object"),
		failCase("utf16_no_bom", bom, GeoJSON, file(ctJSON, "utf16_no_bom.geojson"), "unrecognized response body", "invalid JSON", "not a JSON object"),
	)
	return cs
}

// contentTypes are the cases of Content-Type lies.
func contentTypes() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const ctype = "Content-Type lies"
	add(
		Case{Name: "json_as_text_plain", Class: ctype, Load: true, Features: 10, Respond: file("text/plain", "base.geojson")},
		Case{Name: "json_as_octet_stream", Class: ctype, Load: true, Features: 10, Respond: file("application/octet-stream", "base.geojson")},
		Case{Name: "gml_as_json", Class: ctype, Kind: GML, Load: true, Features: 5, Respond: file(ctJSON, "base.gml")},
	)
	return cs
}

// pagingLies are the cases of WFS paging lies.
func pagingLies() (cs []Case) {
	add := func(c ...Case) { cs = append(cs, c...) }
	const paging = "paging lies (numberMatched, unstable order)"
	add(
		withLimits(withPageSize(Case{Name: "paging_unstable_no_matched", Class: paging, Kind: WFS,
			Errors: []string{"limits.poll_features", "unstable"}, Timeout: 10 * time.Second, Within: 5 * time.Second,
			Respond: paged(func(start, count int) (int, int, []int) {
				ids := make([]int, count)
				for k := range ids {
					ids[k] = (start*7 + k*13) % 30 // every page full, ids in an order that changes per page
				}
				return -1, -1, ids
			})}, 10), "poll_features", 2000),
		withPageSize(failCase("paging_matched_lies_more", paging, WFS, paged(func(start, count int) (int, int, []int) {
			return 100, -1, seq(start, max(0, min(count, 5-start)))
		}), "numberMatched"), 10),
		withPageSize(failCase("paging_matched_lies_less", paging, WFS, paged(func(start, count int) (int, int, []int) {
			return 3, -1, seq(start, count)
		}), "numberMatched"), 10),
		withPageSize(failCase("paging_matched_changes", paging, WFS, paged(func(start, count int) (int, int, []int) {
			return 30 + start, -1, seq(start, count)
		}), "numberMatched"), 10),
		withPageSize(failCase("paging_returned_lies", paging, WFS, paged(func(start, count int) (int, int, []int) {
			return 30, count - 3, seq(start, count)
		}), "numberReturned"), 10),
		withPageSize(failCase("paging_ignores_startindex", paging, WFS, paged(func(start, count int) (int, int, []int) {
			return 30, -1, seq(0, count)
		}), "startIndex"), 10),
		withPageSize(Case{Name: "paging_ignores_count", Class: paging, Kind: WFS, Load: true, Features: 25,
			Respond: paged(func(start, count int) (int, int, []int) { return 25, -1, seq(0, 25) })}, 10),
		// Ids on two pages: the paging order is unstable, features may have
		// been skipped; the snapshot is refused.
		withPageSize(failCase("paging_overlap_finite", paging, WFS, paged(func(start, count int) (int, int, []int) {
			switch {
			case start == 0:
				return -1, -1, seq(0, count)
			case start < 20:
				return -1, -1, seq(start-5, count)
			}
			return -1, -1, seq(15, 5)
		}), "unstable"), 10),
	)
	return cs
}

// contentBreaker trips the content origin's breaker on the first failure
// charged to it.
const contentBreaker = "{consecutive_failures: 1, failure_ratio: 0, max_attempts: 1}"

// withLimits sets limits (key, value pairs) on c.
func withLimits(c Case, kv ...any) Case {
	if c.Limits == nil {
		c.Limits = map[string]int64{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case int:
			c.Limits[kv[i].(string)] = int64(v)
		case int64:
			c.Limits[kv[i].(string)] = v
		}
	}
	return c
}

// withPageSize makes c a paged WFS layer of pages of n.
func withPageSize(c Case, n int) Case {
	c.PageSize = n
	return c
}

// withTimeout bounds c's poll to d, and its wall time to half of that: a
// limit must stop the case long before the timeout does.
func withTimeout(c Case, d time.Duration) Case {
	c.Timeout, c.Within = d, d/2
	return c
}

// seq is start, start+1, … (n of them).
func seq(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = start + i
	}
	return out
}

// pagedFat serves full pages of fatPoint features with a numberMatched of
// a billion: 1 MB pages for ever.
func pagedFat() Responder {
	return func(w http.ResponseWriter, r *Request) {
		count := max(r.Count, 1)
		w.Header().Set("Content-Type", ctJSON)
		buf := []byte(`{"type":"FeatureCollection","numberMatched":1000000000,"numberReturned":` + strconv.Itoa(count) + `,"features":[`)
		for i := range count {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = fatPoint(buf, int64(r.StartIndex+i))
		}
		buf = append(buf, "]}"...)
		_, _ = w.Write(buf)
	}
}

// fatPoint is a point feature with a 100 KB property: an endless stream of
// them reaches a byte limit long before a feature limit.
func fatPoint(buf []byte, i int64) []byte {
	buf = appendPoint(buf, i)
	buf = buf[:len(buf)-2] // reopen the properties
	buf = append(buf, `,"blob":"`...)
	for range 100 << 10 {
		buf = append(buf, 'x')
	}
	return append(buf, `"}}`...)
}

// echoException is a GeoServer-style exception report that echoes the
// request URL, query string (and its secrets) included.
func echoException() Responder {
	return func(w http.ResponseWriter, r *Request) {
		w.Header().Set("Content-Type", ctXML)
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0"><ows:Exception exceptionCode="NoApplicableCode"><ows:ExceptionText>Could not run request %s</ows:ExceptionText></ows:Exception></ows:ExceptionReport>
`, htmlEscape(r.URL.String()))
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// redirectSchemeRelative redirects to //peer-host:port/data, a
// scheme-relative Location that names another origin.
func redirectSchemeRelative() Responder {
	return func(w http.ResponseWriter, r *Request) {
		w.Header().Set("Location", strings.TrimPrefix(r.PeerURL(), "http:")+"/data")
		w.WriteHeader(http.StatusFound)
	}
}

// gzipUnannounced answers a gzipped body without Content-Encoding, like a
// .geojson.gz behind a plain URL.
func gzipUnannounced(contentType, name string) Responder {
	return func(w http.ResponseWriter, r *Request) {
		body := gzipBytes(r.File(name))
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// hugeHeader answers with one response header of n bytes.
func hugeHeader(n int) Responder {
	return func(w http.ResponseWriter, r *Request) {
		conn, bufrw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = bufrw.WriteString("HTTP/1.1 200 OK\r\nX-Padding: ")
		_, _ = bufrw.WriteString(strings.Repeat("p", n))
		_, _ = bufrw.WriteString("\r\nContent-Length: 2\r\n\r\n{}")
		_ = bufrw.Flush()
	}
}
