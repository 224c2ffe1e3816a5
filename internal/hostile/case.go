package hostile

import (
	"sort"
	"time"
)

// Kinds of hostile feed: how ingestd is configured to read the case.
const (
	// GeoJSON is a plain GeoJSON document, fetched in one request.
	GeoJSON = "geojson"
	// WFS is a WFS 2.0 GetFeature layer with GeoJSON output.
	WFS = "wfs"
	// GML is a WFS 2.0 GetFeature layer with GML 3.2 output.
	GML = "gml"
	// ArcGIS is an ArcGIS REST feature layer (kind: arcgis), its URL
	// …/hostile/NAME/arcgis/rest/services/points/FeatureServer/0.
	ArcGIS = "arcgis"
	// OGCAPI is an OGC API – Features collection (kind: ogcapi), its URL
	// …/hostile/NAME/collections/points.
	OGCAPI = "ogcapi"
	// Socrata is a dataset of a Socrata portal (kind: socrata, with an app
	// token), its URL …/resource/ID.json, ID the case's DatasetID.
	Socrata = "socrata"
	// File is a downloadable file (kind: file), its URL
	// …/hostile/NAME/FILE, FILE its FileFeed's name.
	File = "file"
)

// Origins of the hostile corpus. Each is its own listener (its own breaker in
// ingestd), so that a case that pauses or trips one origin cannot turn the
// other cases into refusals. A case may name an origin of its own (the 429
// cases do, since each may pause its origin).
const (
	// OriginMain serves most cases; ingestd's breaker for it never trips.
	OriginMain = "main"
	// OriginContent serves cases whose content is deterministically bad;
	// its breaker trips on the first failure ingestd charges to the origin,
	// so a tripped breaker there shows a content error counted as the
	// origin's.
	OriginContent = "content"
	// OriginPeer is the other host redirects point to. It serves a good
	// layer at every path, so a redirect followed there loads, and the case
	// shows it.
	OriginPeer = "peer"
)

// Origins lists the origins cases need, the peer included, sorted.
func Origins(cases []Case) []string {
	seen := map[string]bool{OriginMain: true, OriginPeer: true}
	for i := range cases {
		seen[cases[i].OriginName()] = true
	}
	out := make([]string, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// Case is one lying or malformed response and what ingestd must make
// of it. The feed first loads a good layer (the Server's good phase), then
// meets the hostile response at the same URL.
type Case struct {
	// Name is the feed id and the path segment: /hostile/NAME.
	Name string
	// Class is the class of input the case belongs to, for reports.
	Class string
	// Kind is GeoJSON (the default), WFS, GML, ArcGIS, OGCAPI, Socrata or File.
	Kind string
	// File is a File case's file name and feed settings.
	File FileFeed
	// Origin is the origin that serves the case (OriginMain when empty).
	Origin string

	// Load says the poll must load the layer (the response is legitimately
	// loadable, possibly after a repair); otherwise it must fail and leave
	// the previous snapshot alone.
	Load bool
	// Features is, for a Load case, the number of features the layer has
	// afterwards.
	Features int
	// InvalidGeometries is, for a Load case, the least number of invalid
	// geometries the poll must count.
	InvalidGeometries int
	// Repaired says, for a Load case, that some stored id or property
	// must hold U+FFFD: the bad text was repaired, not dropped.
	Repaired bool
	// Contains is, for a Load case, a JSON object that the properties of
	// some stored feature must contain (jsonb @>): values the poll must
	// have kept apart or decoded, not only counted.
	Contains string
	// NoWrite are paths the poll must not create (a zip slip's target).
	NoWrite []string
	// Errors are, for a failing case, the substrings of which the error
	// must contain at least one: the cause, e.g. "limits.value_bytes".
	Errors []string
	// FeedsFault says, for a failing case, that the failure is the feed's
	// (an answer that arrived whole and is not the layer): the poll fails
	// and is not parked for a replay, which would meet the same answer.
	FeedsFault bool
	// Within bounds the poll's wall time (0: the feed's timeout).
	Within time.Duration

	// Limits are the feed's `limits:` settings (key → value).
	Limits map[string]int64
	// RequestTimeout and Timeout override the corpus defaults when set.
	RequestTimeout, Timeout time.Duration
	// PageSize is the feed's page_size (0: the corpus default, 100).
	PageSize int
	// Breaker is the breaker block (YAML flow mapping) of the case's
	// jurisdiction, over the corpus default (one attempt, never trips);
	// every case of an origin must say the same.
	Breaker string
	// Query is appended to the feed URL (planted secrets).
	Query string
	// UserInfo is put in the feed URL (a planted token).
	UserInfo string
	// Redirects is the feed's redirects setting ("": the default).
	Redirects string
	// Secrets must appear nowhere in ingestd's output for the case.
	Secrets []string

	// KnownDefect, when set, says which defect of ingestd makes the case
	// fail its expectation (which stays the correct behaviour): the
	// corpus test reports the case skipped, "known defect: …", while it
	// fails, and passes it once the defect is fixed.
	KnownDefect string

	// Respond serves the hostile phase.
	Respond Responder
}

// Feed returns the case's feed key in a corpus config: "jurisdiction/feed".
func (c *Case) Feed() string { return c.Jurisdiction() + "/" + c.Name }

// Jurisdiction is the jurisdiction of the case's feed: one per origin, so
// each can carry its own breaker policy.
func (c *Case) Jurisdiction() string {
	if c.Origin == "" {
		return "hostile"
	}
	return "hostile_" + c.Origin
}

// OriginName is c.Origin with the default resolved.
func (c *Case) OriginName() string {
	if c.Origin == "" {
		return OriginMain
	}
	return c.Origin
}
