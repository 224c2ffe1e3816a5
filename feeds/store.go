package feeds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Store is where polls land: the whole contract between the engine and its
// database, every method of which the engine may call. feeds/postgis
// implements it; main wires it in. A store does not offer a subset: the
// engine never asks a Store what it can do.
//
// A poll stages pages as they arrive and applies them in one step at the end,
// so a poll that does not finish changes nothing a reader sees.
type Store interface {
	// RegisterFeeds records the configured feeds (so that feed_freshness lists
	// feeds never polled) with their expected interval between polls. It
	// never marks other feeds removed: another instance, or a one-off
	// command, may run with a different configuration.
	RegisterFeeds(ctx context.Context, feeds []FeedInfo) error
	// RemoveFeeds marks feeds as no longer configured (feed_freshness status
	// 'removed'); their features, history and dead letters stay. Only a
	// running daemon's reload calls it, for the feeds its new configuration
	// dropped from its previous one.
	RemoveFeeds(ctx context.Context, feeds []FeedInfo) error
	// LastSuccess returns, per feed key ("jurisdiction/feed"), when its last
	// successful poll applied; feeds that never succeeded are absent.
	LastSuccess(ctx context.Context) (map[string]time.Time, error)
	// ClaimPoll claims the feed for a poll by owner (one instance) for at
	// most lease. It fails (false, nil) while another owner's lease runs, or
	// when the feed was claimed less than minGap ago: another instance took
	// this very tick.
	ClaimPoll(ctx context.Context, feed FeedInfo, owner string, lease, minGap time.Duration) (bool, error)
	// ReleasePoll ends owner's claim on the feed.
	ReleasePoll(ctx context.Context, feed FeedInfo, owner string) error
	// BeginPoll records the start of a poll and returns its id.
	BeginPoll(ctx context.Context, feed FeedInfo) (pollID int64, err error)
	// StagePage copies one page of features into the poll's staging area. It
	// stages all of the page or none of it, and returns how many it staged.
	StagePage(ctx context.Context, pollID int64, page int, features feature.FeatureReader) (int, error)
	// Apply replaces the feed's features with everything the poll staged, in
	// one transaction, and records the poll as succeeded. It refuses, with a
	// *StagingLostError, a snapshot whose staged rows a crash of PostgreSQL
	// emptied (the caller then fails the poll).
	Apply(ctx context.Context, pollID int64, feed FeedInfo) (ApplyResult, error)
	// FailPoll records the poll as failed with pollErr, discards what it
	// staged and leaves the feed's features untouched.
	FailPoll(ctx context.Context, pollID int64, feed FeedInfo, pollErr error) error

	// RecordRefused records that an open breaker refused the poll: it ends
	// as refused with retryAfter, and keeps what it staged for a resume.
	RecordRefused(ctx context.Context, feed FeedInfo, pollID int64, retryAfter time.Time, refusal error) error
	// SuspendPoll records the poll as failed with cause (and retryAfter,
	// when not zero) but keeps what it staged, for a resume.
	SuspendPoll(ctx context.Context, feed FeedInfo, pollID int64, retryAfter time.Time, cause error) error
	// ResumePoll makes a refused or suspended poll running again and
	// returns the page to continue at: the end of the run of pages staged
	// from page 0 (a poll left running by a crashed instance resumes too).
	// It fails with ErrCheckpointApplied when the poll already succeeded,
	// and ErrCheckpointLost when its staging is gone or does not reach
	// wantPage, or when crash recovery emptied the staged rows of its
	// recorded pages (then with a *StagingLostError too).
	ResumePoll(ctx context.Context, feed FeedInfo, pollID int64, wantPage int) (nextPage int, err error)
	// StagedFeatures counts the features a poll's staged pages hold, which
	// a resumed poll counts against limits.poll_features.
	StagedFeatures(ctx context.Context, pollID int64) (int64, error)
	// StagedPageDigest digests what a poll staged for one page (its ids
	// and content hashes), for a resume that reads that page again
	// (fetchResumed).
	StagedPageDigest(ctx context.Context, pollID int64, page int) (PageDigest, error)
	// NextLink returns the next link a staged page recorded
	// (source.Page.Next), ok false when it recorded none.
	NextLink(ctx context.Context, pollID int64, page int) (link string, ok bool, err error)
	// RestartStaging drops what a resumed poll staged, for a fetch from
	// the first page.
	RestartStaging(ctx context.Context, pollID int64) error
	// DiscardPoll deletes what a poll that will not be resumed staged, and
	// records it as failed with cause if it was still open.
	DiscardPoll(ctx context.Context, feed FeedInfo, pollID int64, cause error) error

	// Conditional GET.

	// AppliedValidators returns the validators of the feed's last applied
	// snapshot if they came with the request whose key is requestKey: zero
	// when it has none, when its last poll failed, was refused or held
	// (only an applied snapshot may let a server answer "unchanged"), or
	// when the request changed (another URL's document could be older).
	AppliedValidators(ctx context.Context, feed FeedInfo, requestKey string) (source.Validators, error)
	// RecordFetch adds what the running poll's fetch read (body bytes) to
	// the poll and records the validators the server sent with it for the
	// request whose key is requestKey, which become the feed's if (and only
	// if) the snapshot applies.
	RecordFetch(ctx context.Context, pollID int64, bytes int64, v source.Validators, requestKey string) error
	// RecordQueueWait adds wait to the time the poll waited in line for
	// request slots (polls.queue_wait), which its timeout does not count.
	RecordQueueWait(ctx context.Context, pollID int64, wait time.Duration) error
	// RecordNotModified ends the running poll as a success that fetched
	// nothing (polls.not_modified): the server proved the layer unchanged
	// since the feed's last applied snapshot. The feed is fresh as of now;
	// its features and validators stay. The result counts the feed's
	// features, all unchanged.
	RecordNotModified(ctx context.Context, pollID int64, feed FeedInfo) (ApplyResult, error)

	// What a poll read.

	// KnownSRID reports whether the store can transform srid to EPSG:4326
	// (postgis: spatial_ref_sys): a kind asks it through
	// source.Layer.KnownSRID before staging anything in that CRS.
	KnownSRID(ctx context.Context, srid int) (bool, error)
	// RecordCompleteness records what a poll's completeness rests on
	// (source.FetchStats.Completeness; polls.completeness).
	RecordCompleteness(ctx context.Context, pollID int64, basis string) error
	// RecordCRS records the CRS a poll read its layer in and how it was
	// identified (source.FetchStats.CRS; polls.crs, polls.crs_identified_by).
	RecordCRS(ctx context.Context, pollID int64, code, by string) error

	// Incremental refresh (delta.go).

	// ReadDeltaBase starts reading, in the background, what composing
	// poll pollID's delta needs of the feed's applied snapshot, for
	// ComposeDelta: the poll calls it when the kind plans a delta
	// (source.Layer.DeltaPlanned), so that the read overlaps the fetch of
	// the changes. The poll's claim on the feed keeps the snapshot as it
	// was read until the apply: no other poll applies to the feed, and a
	// feed with a held snapshot (which an operator may accept at any
	// time) has no validators, so its polls never read a delta.
	ReadDeltaBase(ctx context.Context, pollID int64, feed FeedInfo) *DeltaBase
	// ComposeDelta composes poll pollID's whole snapshot in its staging
	// from the pages it fetched and the feed's applied features (those
	// base read ahead, or read now when base is nil), as d says, and
	// proves it against d.IDs.
	ComposeDelta(ctx context.Context, pollID int64, feed FeedInfo, d source.Delta, base *DeltaBase) (DeltaResult, error)
	// ReconcileDrift counts the staged features of a full dump that
	// differ from the feed's stored ones while their edit date is at most
	// r.Cutoff.
	ReconcileDrift(ctx context.Context, pollID int64, feed FeedInfo, r source.Reconcile) (int, error)
	// RecordFetchMode records how the poll fetched (polls.fetch_mode)
	// and the drift it found (drift < 0: none compared).
	RecordFetchMode(ctx context.Context, pollID int64, mode string, drift int) error
}

// Checkpoint errors, wrapped by Store.ResumePoll.
var (
	// ErrCheckpointApplied means the poll of a checkpoint already applied:
	// an instance died between applying and recording the replay as done.
	ErrCheckpointApplied = errors.New("feeds: the checkpoint's poll already applied")
	// ErrCheckpointLost means the checkpoint's staged pages are gone.
	ErrCheckpointLost = errors.New("feeds: the checkpoint's staged pages are gone")
)

// StagingLostError is returned (wrapped) when a poll's staged snapshot is
// not whole: fewer staged features than the pages recorded when they were
// staged. Staging (each jurisdiction's ingestd_staged) is unlogged, so
// PostgreSQL's crash recovery empties it while the (logged) record of its pages stays; applying what is
// left would remove every feature of the lost pages. The snapshot is
// discarded, never applied.
type StagingLostError struct {
	// Feed is "jurisdiction/feed".
	Feed   string
	PollID int64
	// What names the snapshot: "staged snapshot", "held snapshot" or
	// "checkpoint".
	What string
	// Staged features found, of Recorded; Pages the pages recorded.
	Staged, Recorded int64
	Pages            int
}

func (e *StagingLostError) Error() string {
	pages := "pages"
	if e.Pages == 1 {
		pages = "page"
	}
	return fmt.Sprintf("feed %s: the %s (poll %d) was lost with a database crash (staged %d of %d features, %d %s recorded); poll again",
		e.Feed, e.What, e.PollID, e.Staged, e.Recorded, e.Pages, pages)
}

// FeedInfo identifies a feed to the store.
type FeedInfo struct {
	Jurisdiction string
	Feed         string
	Kind         string
	URL          string // credentials redacted
	Origin       string
	// ExpectedInterval is the time between two scheduled polls.
	ExpectedInterval time.Duration
	// Guard is checked by Apply before the snapshot replaces the features.
	Guard Guard

	// Typed layers: what the protocol declared of the layer's schema
	// (nil: nothing, the schema is inferred from the snapshot), and
	// whether the decoder typed text values (GML) by it, so that the
	// store retypes stored values the same way before diffing.
	Declared  *schema.Declared
	TypedText bool
	// History is the feed's history retention, recorded by RegisterFeeds
	// and BeginPoll (feed_status.history_keep) and obeyed by Apply.
	History config.History
	// LayerSchema and LayerName name the feed's typed layer in PostGIS
	// (config/names.go); "" leaves the store's default.
	LayerSchema, LayerName string
	// Common is the feed's conform into a common layer, nil when it has
	// none: Apply then retires any conformed rows the feed had.
	Common *CommonConform
}

// CommonConform is what the store needs to keep a feed's rows in a common
// layer: the layer (its table's columns and geometry type), the compiled
// conform, and a digest of both that changes when either does, so that the
// store re-conforms the feed's rows in full rather than only the changed
// features.
type CommonConform struct {
	Layer   config.CommonLayer
	Conform *conform.Conform
	Digest  string
}

// NewCommonConform returns the hand-off of a feed's conform to the store,
// nil when fc is nil.
func NewCommonConform(fc *config.FeedConform) *CommonConform {
	if fc == nil || fc.Conform == nil || fc.Spec == nil {
		return nil
	}
	// Where the conform is written is not what it says: lines out.
	layer := fc.Common
	layer.Line = 0
	attrs := make([]conform.Attribute, len(fc.Spec.Attributes))
	for i, a := range fc.Spec.Attributes {
		attrs[i] = conform.Attribute{Column: a.Column, Value: a.Value}
	}
	h := sha256.New()
	// encoding/json sorts map keys, so equal conforms digest equally.
	_ = json.NewEncoder(h).Encode(struct {
		Layer      config.CommonLayer
		Attributes []conform.Attribute
	}{layer, attrs})
	return &CommonConform{Layer: layer, Conform: fc.Conform, Digest: hex.EncodeToString(h.Sum(nil))}
}

// ApplyResult counts what applying a snapshot changed.
type ApplyResult struct {
	Features  int // features in the snapshot
	Added     int
	Modified  int
	Removed   int
	Unchanged int
	// InvalidGeometries counts the added or modified features whose geometry
	// was invalid: repaired, or skipped (then not in Added or Modified).
	InvalidGeometries int
	// InvalidFeatures counts the poll's features that were repaired,
	// skipped or refused, by reason: over every feature the poll staged
	// (unchanged ones too) or refused.
	InvalidFeatures InvalidFeatures
}

// InvalidFeatures counts a poll's invalid features by reason. The reasons'
// names (Reasons; polls.invalid_features; the reason label of
// ingestd_feeds_invalid_features_total) are the snake_case of the fields.
// A skipped feature keeps its previous version and is in neither Added nor
// Modified.
type InvalidFeatures struct {
	// InvalidUTF8, NUL and LoneSurrogate: the id or properties held invalid
	// UTF-8, a NUL (\u0000) or a lone surrogate escape, each made U+FFFD;
	// the feature is written so (invalid_feature: repair) or its update
	// skipped (skip).
	InvalidUTF8, NUL, LoneSurrogate int
	// InvalidJSON and NumberOutOfRange: properties that are not JSON, or
	// hold a number PostgreSQL's numeric cannot; no faithful repair exists,
	// so the feature's update is skipped whatever the policy.
	InvalidJSON, NumberOutOfRange int
	// IDTooLong: an id longer than the limit; the feature is refused, as if
	// the source had not sent it.
	IDTooLong int
}

// Reasons returns the non-zero counts by reason name (nil when all are 0).
func (c InvalidFeatures) Reasons() map[string]int {
	var m map[string]int
	for _, r := range []struct {
		name string
		n    int
	}{
		{"invalid_utf8", c.InvalidUTF8}, {"nul", c.NUL}, {"lone_surrogate", c.LoneSurrogate},
		{"invalid_json", c.InvalidJSON}, {"number_out_of_range", c.NumberOutOfRange}, {"id_too_long", c.IDTooLong},
	} {
		if r.n > 0 {
			if m == nil {
				m = make(map[string]int)
			}
			m[r.name] = r.n
		}
	}
	return m
}

// Total is the number of counts (a feature with two reasons counts twice).
func (c InvalidFeatures) Total() int {
	return c.InvalidUTF8 + c.NUL + c.LoneSurrogate + c.InvalidJSON + c.NumberOutOfRange + c.IDTooLong
}
