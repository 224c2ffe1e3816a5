// Package ows reads OGC Web Services exception reports (OWS Common's
// ows:ExceptionReport, WFS 1.0's ServiceExceptionReport, GeoServer's JSON
// form) and judges them by their codes: a report whose codes say the
// server failed counts against the origin, one whose codes all say the
// request is wrong is the feed's. Every kind that may meet an OGC service
// uses it (wfs; geojson, whose URL is often a WFS GetFeature request
// pasted whole), so that no kind imports another.
package ows
