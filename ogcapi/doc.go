// Package ogcapi is the OGC API – Features protocol (Part 1 Core, Part 2
// CRS by reference) of feed kind "ogcapi": discovery of the collection's
// items link, storage CRS and CRS list and of the server's conformance
// classes; paging by following rel="next" links exactly as given; the
// completeness rules (numberMatched, ids on two pages, repeated pages, link
// loops); the CRS check of the Content-Crs header; and the classification
// of OGC API exception documents. Every request is one logical call through
// package httpcall, and items are decoded by package geojson.
package ogcapi
