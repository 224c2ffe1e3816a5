// Package redact is the one place that decides what of a URL may be shown:
// in logs, in the database (polls.error, feed_status, dead_letter,
// breaker_state) and in the output of the CLI. Every other package calls it
// where a URL or an error becomes text.
//
// It redacts by default. A token can hide in userinfo (http://TOKEN@host/),
// in a query parameter of any name (token, pw, ticket, hash, k,
// access_key_id, …) or in a fragment, and no list of sensitive names is ever
// complete. So every userinfo, every fragment and the value of every query
// parameter is replaced by Marker, except the values of a short allow-list
// of protocol parameters whose meaning is known and harmless (see Harmless).
// The parameter's name is kept, so that the operator sees which one was
// there. Path segments are kept: a token in a path cannot be told from a
// layer name; put it in the feed's headers instead.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Marker replaces what is redacted.
const Marker = "REDACTED"

// harmless lists the query parameters whose values are shown, lower case.
// Each is a request parameter of a protocol ingestd speaks, with a value
// that says what is asked for and never who asks: a redacted harmless value
// costs the operator a little context, a leaked token costs a rotation, so a
// name that is not certainly harmless is not here.
var harmless = map[string]bool{
	// OGC WFS 1.0/1.1/2.0 key-value requests (what RequestURL writes, and
	// what endpoints copied from a browser carry).
	"service": true, "request": true, "version": true,
	"typename": true, "typenames": true,
	"startindex": true, "count": true, "maxfeatures": true,
	"outputformat": true, "srsname": true, "sortby": true, "resulttype": true,
	"propertyname": true, "featureid": true, "resourceid": true,
	"namespaces": true, "namespace": true,
	// Filters: the layer's selection, shown so that two feeds of one
	// endpoint can be told apart.
	"cql_filter": true, "filter": true, "filter-lang": true,
	// MapServer's mapfile path: a path on the server, needed to tell its
	// layers apart.
	"map": true,
	// OGC API Features.
	"bbox": true, "bbox-crs": true, "crs": true, "filter-crs": true,
	"datetime": true, "limit": true, "offset": true,
	// Esri ArcGIS REST query.
	"f": true, "where": true, "outfields": true, "outsr": true, "insr": true,
	"resultoffset": true, "resultrecordcount": true, "orderbyfields": true,
	"returnidsonly": true, "returncountonly": true, "returngeometry": true,
	"objectids": true, "geometry": true, "geometrytype": true, "spatialrel": true,
	// Socrata SoQL (its token, $$app_token, is not here).
	"$limit": true, "$offset": true, "$where": true, "$order": true, "$select": true,
}

// Harmless reports whether the value of query parameter name may be shown.
// Names compare case-insensitively, as OGC key-value parameters do.
func Harmless(name string) bool {
	return harmless[strings.ToLower(name)]
}

// URL returns raw with every userinfo, every fragment and the value of every
// query parameter but the harmless ones replaced by Marker. The rest keeps
// its spelling, so the result still identifies the request. A string that
// does not parse as a URL is redacted the same way, on a best-effort basis.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return unparsed(raw)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(Marker, Marker)
		} else {
			u.User = url.User(Marker)
		}
	}
	u.RawQuery = query(u.RawQuery)
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Marker, ""
	}
	// ForceQuery keeps a trailing "?" as it was; String does the rest.
	return u.String()
}

// unparsed redacts a URL that url.Parse refused: userinfo (whatever stands
// before the last "@" of the authority), the query and the fragment.
func unparsed(raw string) string {
	rest, frag, hasFrag := strings.Cut(raw, "#")
	rest, q, hasQuery := strings.Cut(rest, "?")
	if i := strings.Index(rest, "//"); i >= 0 {
		auth := rest[i+2:]
		end := strings.IndexByte(auth, '/')
		if end < 0 {
			end = len(auth)
		}
		if at := strings.LastIndexByte(auth[:end], '@'); at >= 0 {
			rest = rest[:i+2] + Marker + auth[at:]
		}
	} else if at := strings.LastIndexByte(rest, '@'); at >= 0 && !strings.Contains(rest[:at], "/") {
		// host-less forms such as "TOKEN@host:port".
		rest = Marker + rest[at:]
	}
	out := rest
	if hasQuery {
		out += "?" + query(q)
	}
	if hasFrag && frag != "" {
		out += "#" + Marker
	} else if hasFrag {
		out += "#"
	}
	return out
}

// query redacts a raw query string. Pairs are separated by "&" and by ";",
// which some servers still split on: a value after a ";" must not ride along
// with a harmless name before it. A pair without "=" is a bare name, which
// may itself be the token (?SECRET): it is kept only when harmless.
func query(q string) string {
	if q == "" {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	for q != "" {
		i := strings.IndexAny(q, "&;")
		seg, sep := q, ""
		if i >= 0 {
			seg, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		key, value, hasValue := strings.Cut(seg, "=")
		name, err := url.QueryUnescape(key)
		known := err == nil && Harmless(name)
		switch {
		case known || seg == "":
			b.WriteString(seg)
		case !hasValue:
			b.WriteString(Marker)
		case value == "":
			b.WriteString(key + "=")
		default:
			b.WriteString(key + "=" + Marker)
		}
		b.WriteString(sep)
	}
	return b.String()
}

// urlInText matches a URL inside a message: a scheme, "://", and everything
// up to white space or a quote. Go's errors quote URLs ("Get \"…\": …"),
// and logs and SQL keep whole messages, so every URL in one is found.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]*`)

// queryInText matches a query string inside a message that has no scheme
// before it: a server's error that echoes the request target
// ("/wfs?service=WFS&token=…"), or a URL a message cut. It must hold an
// "=", so that prose ("what? why") is left alone.
var queryInText = regexp.MustCompile(`\?[^\s"'<>` + "`" + `#=?]+=[^\s"'<>` + "`" + `#]*`)

// Text returns s with every URL in it redacted as URL does, and every other
// query string in it as URL redacts a query. Punctuation that ends a URL in
// prose ("GET http://h/a?k=v: HTTP 404") stays outside it.
func Text(s string) string {
	if strings.Contains(s, "://") {
		s = urlInText.ReplaceAllStringFunc(s, func(m string) string {
			u := strings.TrimRight(m, ".,:;)]}!")
			return URL(u) + m[len(u):]
		})
	}
	if strings.Contains(s, "?") {
		// Queries the first pass redacted come out the same.
		s = queryInText.ReplaceAllStringFunc(s, func(m string) string {
			q := strings.TrimRight(m, ".,:;)]}!")
			return "?" + query(q[1:]) + m[len(q):]
		})
	}
	return s
}

// Error returns err's message with every URL in it redacted: the form in
// which an error may be logged, stored or printed. net/http's *url.Error,
// for one, quotes the whole request URL, userinfo and query included.
// Error(nil) is "".
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Text(err.Error())
}
