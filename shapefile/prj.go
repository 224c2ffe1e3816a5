package shapefile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// SRIDFromPRJ reads the EPSG code of a .prj's CRS (WKT 1, in GDAL's or
// Esri's dialect): the root's AUTHORITY["EPSG", n] when it has one, else
// the CRS's name among those Esri and GDAL write for the common CRSs
// (geographic NAD27, NAD83, WGS 84, ETRS89; Web Mercator; UTM zones on
// NAD27, NAD83, WGS 84 and ETRS89; North Carolina's State Plane). A CRS it
// cannot name is an error asking for the feed's crs: setting, which
// overrides the .prj: a guessed CRS would put every feature in the wrong
// place without a word.
func SRIDFromPRJ(wkt string) (int, error) {
	kw, name, auth := rootOf(wkt)
	if kw == "" {
		return 0, fmt.Errorf("not a WKT CRS: %q; set crs: (e.g. EPSG:4326)", snippet(wkt))
	}
	if auth > 0 {
		return auth, nil
	}
	key := normalize(name)
	if srid, ok := prjNames[key]; ok {
		return srid, nil
	}
	if m := utmName.FindStringSubmatch(key); m != nil {
		zone, _ := strconv.Atoi(m[2])
		if base, ok := utmBase[m[1]+m[3]]; ok && zone >= 1 && zone <= 60 {
			return base + zone, nil
		}
	}
	return 0, fmt.Errorf("CRS %s %q has no EPSG code ingestd knows; set crs: to its EPSG code (e.g. crs: EPSG:2264)", kw, name)
}

// rootOf returns the WKT's root keyword, its name and the EPSG code of its
// own AUTHORITY (0 when none: Esri's dialect writes none).
func rootOf(wkt string) (kw, name string, auth int) {
	s := strings.TrimSpace(strings.TrimPrefix(wkt, "\ufeff"))
	open := strings.IndexAny(s, "[(")
	if open <= 0 {
		return "", "", 0
	}
	kw = strings.ToUpper(strings.TrimSpace(s[:open]))
	if !strings.HasSuffix(kw, "CS") && kw != "PROJCRS" && kw != "GEOGCRS" {
		return "", "", 0
	}
	rest := s[open+1:]
	if q := strings.IndexByte(rest, '"'); q >= 0 {
		if e := strings.IndexByte(rest[q+1:], '"'); e >= 0 {
			name = rest[q+1 : q+1+e]
		}
	}
	// The root's own AUTHORITY is its last child at depth 1.
	depth, inQuote := 0, false
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case depth == 0 && (strings.HasPrefix(strings.ToUpper(rest[i:]), "AUTHORITY[") || strings.HasPrefix(strings.ToUpper(rest[i:]), "ID[")):
			if m := authority.FindStringSubmatch(rest[i:]); m != nil {
				auth, _ = strconv.Atoi(m[1])
			}
		}
	}
	return kw, name, auth
}

var authority = regexp.MustCompile(`(?i)^(?:AUTHORITY|ID)\[\s*"EPSG"\s*,\s*"?(\d+)"?`)

// normalize lower-cases name and keeps its letters and digits.
func normalize(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, name)
}

// prjNames are the normalized names of common CRSs, as Esri (GCS_…,
// projected names with underscores) and GDAL's WKT 1 write them.
var prjNames = map[string]int{
	"gcswgs1984": 4326, "wgs84": 4326, "wgs1984": 4326,
	"gcsnorthamerican1927": 4267, "nad27": 4267,
	"gcsnorthamerican1983": 4269, "nad83": 4269,
	"gcsnorthamerican1983harn": 4152, "nad83harn": 4152,
	"gcsnad19832011": 6318, "nad832011": 6318,
	"gcsetrs1989": 4258, "etrs89": 4258,
	"wgs1984webmercatorauxiliarysphere": 3857, "wgs84pseudomercator": 3857, "wgs1984webmercator": 3857,
	"nad1983stateplanenorthcarolinafips3200feet": 2264, "nad83northcarolinaftus": 2264,
	"nad1983stateplanenorthcarolinafips3200": 32119, "nad83northcarolina": 32119,
	"nad1927stateplanenorthcarolinafips3200": 32019, "nad27northcarolina": 32019,
}

// utmName matches a UTM zone's normalized name, Esri's
// ("nad1983utmzone17n") or GDAL's ("nad83utmzone17n", "wgs84utmzone17n").
var utmName = regexp.MustCompile(`^(nad1983|nad83|nad1927|nad27|wgs1984|wgs84|etrs1989|etrs89)utmzone(\d{1,2})([ns])$`)

// utmBase is the EPSG code before zone 1 of each datum's UTM zones.
var utmBase = map[string]int{
	"nad1983n": 26900, "nad83n": 26900, "nad1927n": 26700, "nad27n": 26700,
	"wgs1984n": 32600, "wgs84n": 32600, "wgs1984s": 32700, "wgs84s": 32700,
	"etrs1989n": 25800, "etrs89n": 25800,
}

func snippet(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
