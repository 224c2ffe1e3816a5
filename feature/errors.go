package feature

import (
	"fmt"
	"reflect"
)

// DecodeError is a malformed GeoJSON, GML or Esri JSON document. Index is
// the 0-based index of the feature being read, or -1 when the fault is in
// the document around the features.
type DecodeError struct {
	// Format is "gml" for the GML decoder, "esrijson" for the Esri JSON
	// decoder, "gzip" for a body gzipped more times over than the client
	// decodes; "" means GeoJSON, the first decoder, whose callers never set it.
	Format string
	// Line is the line of the input where a GML fault was noticed (0: unknown).
	Line  int
	Index int
	Msg   string
	Err   error
}

func (e *DecodeError) Error() string {
	format := e.Format
	if format == "" {
		format = "geojson"
	}
	where := "document"
	if e.Index >= 0 {
		where = fmt.Sprintf("feature %d", e.Index)
	}
	if e.Line > 0 {
		where += fmt.Sprintf(" (line %d)", e.Line)
	}
	switch {
	case e.Msg != "" && e.Err != nil:
		return fmt.Sprintf("%s: %s: %s: %v", format, where, e.Msg, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s: %s: %v", format, where, e.Err)
	}
	return fmt.Sprintf("%s: %s: %s", format, where, e.Msg)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// JSONType names, with its article, the JSON type that values of the Go
// type t decode from ("a number", "an object"; "another type" when t is
// nil or decodes from none): for a message about an
// *encoding/json.UnmarshalTypeError in ingestd's words rather than Go's.
func JSONType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return JSONType(t.Elem())
	}
	return "another type"
}
