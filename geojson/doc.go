// Package geojson fetches feeds of kind "geojson": one GeoJSON document
// at a URL, read in one request (no paging) through package httpcall (the
// origin's breaker, pacing, body limit, redirects) and streamed by package
// encoding/geojson's reader. The document's HTTP validators make the next poll
// conditional (If-None-Match, If-Modified-Since). Its errors name the kind
// once: "geojson: …".
package geojson
