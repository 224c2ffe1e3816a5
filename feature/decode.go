package feature

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twpayne/go-geom"
)

// What follows is shared by the decoders of every encoding, so that a
// GeoJSON and a GML feature are bounded, refused and named alike.

// RefuseID says why a feature with this id cannot be stored, or "": an id
// longer than max. Such a feature is refused alone (Feature.Refused); the id
// is quoted truncated. (A NUL in an id is not refused: the store repairs it
// to U+FFFD like a NUL in a property, under the feed's invalid_feature.)
func RefuseID(id string, max int) string {
	if len(id) > max {
		return fmt.Sprintf("id of %d bytes exceeds limits.id_bytes (%d): %s", len(id), max, Snippet(id))
	}
	return ""
}

// Where names the feature of index (-1: the document around the features)
// for a LimitError.
func Where(index int) string {
	if index < 0 {
		return "document"
	}
	return "feature " + strconv.Itoa(index)
}

// BoundMessage cuts msg as Bound cuts an error's text, so that a message a
// decoder formats with input in it cannot make a huge log line.
func BoundMessage(msg string) string {
	if len(msg) <= maxErrorText {
		return msg
	}
	return boundedError{errors.New(msg)}.Error()
}

// SetCollectionLayout gives gc its members' common layout, or XY when it
// has none; with mixed layouts it stays unset and Layout is computed.
func SetCollectionLayout(gc *geom.GeometryCollection) {
	layout := geom.XY
	for i, g := range gc.Geoms() {
		if i == 0 {
			layout = g.Layout()
		} else if g.Layout() != layout {
			return
		}
	}
	if layout != geom.NoLayout {
		_ = gc.SetLayout(layout) // cannot fail: every member has it
	}
}
