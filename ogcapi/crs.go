package ogcapi

import (
	"strings"

	"github.com/ingestd/ingestd/feature"
)

// isCRS84 reports whether name is OGC's CRS84 (WGS 84, longitude first),
// the default CRS of OGC API – Features.
func isCRS84(name string) bool {
	c, err := feature.ParseCRS(name)
	return err == nil && c.SRID == 4326 && !c.LatFirst && strings.Contains(strings.ToUpper(name), "CRS84")
}

// sameCRS reports whether a and b name the same CRS with the same axis
// order, whatever their spelling (http or https URI, URN, trailing
// whitespace).
func sameCRS(a, b string) bool {
	if strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b)) {
		return true
	}
	ca, err := feature.ParseCRS(a)
	if err != nil {
		return false
	}
	cb, err := feature.ParseCRS(b)
	return err == nil && ca.SRID == cb.SRID && ca.LatFirst == cb.LatFirst && isCRS84(a) == isCRS84(b)
}

// contentCRS reads a Content-Crs header value: a URI in angle brackets
// (Part 2), or, from lenient servers, a bare URI.
func contentCRS(h string) string {
	h = strings.TrimSpace(h)
	h = strings.TrimPrefix(h, "<")
	h = strings.TrimSuffix(h, ">")
	return strings.TrimSpace(h)
}
