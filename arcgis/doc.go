// Package arcgis is the ArcGIS REST kind: it dumps a FeatureServer or
// MapServer layer completely or not at all, proven against the server's own
// id list (see Client.Fetch), through the same per-origin breaker and
// logical call (package httpcall) as every kind. Responses are classified
// before they are trusted (see Classify): ArcGIS answers errors with status
// 200 and an error object, and its code decides whose fault it is. The
// features are Esri JSON (f=json), decoded by package esrijson.
package arcgis
