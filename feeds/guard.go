package feeds

import (
	"fmt"

	"github.com/ingestd/ingestd/config"
)

// DefaultMaxShrink is max_shrink when neither the feed, its jurisdiction nor
// the defaults set it: a snapshot with fewer than half the previous features
// is held.
const DefaultMaxShrink = 0.5

// Guard is what the store checks before applying a snapshot. A snapshot that
// fails a check is held, not applied: see HeldError.
//
// The zero value is the default policy (max_shrink 0.5, no extent check), so
// a FeedInfo built without a Guard is still protected.
type Guard struct {
	// MaxShrink is the largest fraction of the previous features a snapshot
	// may lose: fewer than (1 - MaxShrink) × previous is held. 0 means
	// DefaultMaxShrink; 1 turns the check off except for an empty snapshot
	// replacing a non-empty one, which is always held.
	MaxShrink float64
	// BBox is the jurisdiction's extent in EPSG:4326 (min lon, min lat, max
	// lon, max lat); nil skips the extent check. A snapshot with more than
	// half of its located features outside it is held.
	BBox *config.BBox
	// SkipInvalid leaves out the update of a feature whose geometry is
	// invalid (unparseable, not valid, or outside longitudes ±180 and
	// latitudes ±90) instead of repairing it (invalid_geometry: skip).
	SkipInvalid bool
	// SkipInvalidFeature leaves out the update of a feature whose id or
	// properties needed a repair (invalid UTF-8, NUL, a lone surrogate,
	// each made U+FFFD) instead of writing the repaired feature
	// (invalid_feature: skip). A feature with no faithful repair is
	// skipped either way.
	SkipInvalidFeature bool

	// Typed layers (schema drift).

	// SchemaChange is what a snapshot whose schema drifted (a column
	// added, removed, retyped, or collapsed to all null) does:
	// config.SchemaEvolve ("" too) applies it and the typed view follows;
	// config.SchemaHold holds it like the shrink guard, the reason naming the
	// columns, until `ingestd held accept|reject`.
	SchemaChange string
}

// guardOf returns the checks Apply makes before f's snapshot replaces its
// features: max_shrink as resolved (feed, else jurisdiction, else
// defaults), the jurisdiction's bbox, and what to do with invalid
// geometries and features.
func guardOf(f *config.Feed) Guard {
	return Guard{MaxShrink: f.MaxShrink, BBox: f.BBox, SkipInvalid: f.InvalidGeometry == config.InvalidSkip,
		SkipInvalidFeature: f.InvalidFeature == config.InvalidSkip, SchemaChange: f.SchemaChange}
}

// EffectiveMaxShrink returns MaxShrink with the zero value resolved.
func (g Guard) EffectiveMaxShrink() float64 {
	if g.MaxShrink <= 0 {
		return DefaultMaxShrink
	}
	return g.MaxShrink
}

// IncompleteSnapshotError is a staged snapshot the store refuses to apply
// because it cannot be complete, whatever its kind proved while fetching:
// feature ids on more than one page (an unstable paging order, or an
// id_property that is not unique). Nothing is applied; the poll fails.
type IncompleteSnapshotError struct {
	// URL is the feed's (redacted) URL.
	URL string
	// Reason says what did not add up, with the figures.
	Reason string
}

func (e *IncompleteSnapshotError) Error() string {
	return fmt.Sprintf("feeds: incomplete snapshot of %s: %s", e.URL, e.Reason)
}

// HeldError is returned (wrapped) by Store.Apply when a guard held the
// snapshot instead of applying it. The poll is then finished (status held,
// staging kept): callers must not FailPoll it. An operator accepts or
// rejects it with `ingestd held`, or a later poll supersedes it.
type HeldError struct {
	// Feed is "jurisdiction/feed".
	Feed   string
	PollID int64
	// Reason says which guard held the snapshot, with the figures.
	Reason string
	// Previous is the number of features the feed had; Snapshot the number
	// of distinct features in the held snapshot.
	Previous, Snapshot int
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("feeds: snapshot of %s (poll %d) held: %s", e.Feed, e.PollID, e.Reason)
}
