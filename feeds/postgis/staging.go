package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/jsonbtext"
	"github.com/ingestd/ingestd/schema"
)

// StagePage copies one page of features into the poll's staging area with a
// binary COPY and returns how many it staged. The page is one transaction:
// if features fails mid-way the COPY is aborted, nothing of the page stays,
// and the reader's error is returned wrapped. Staging a page again (a retry)
// replaces what that page staged before.
//
// The COPY streams: features are encoded as the connection asks for bytes,
// so a page of any size costs the memory of a few features, and the caller
// may feed it while the page's body is still arriving (feeds stages pages in
// chunks that way). Until the transaction commits, with the page's
// staged_pages row, no other session sees a row of the page: an apply, a
// resume, a held accept or the uniqueness checks never mistake a page cut
// short for the page, and a crash mid-page leaves nothing of it.
//
// A feature without an ID is staged with "" and named at apply by the hex of
// its content hash, so it keeps its id from poll to poll as long as it does
// not change (reordered property keys included).
func (s *Store) StagePage(ctx context.Context, pollID int64, page int, features feature.FeatureReader) (int, error) {
	src := &copySource{page: int32(page), ids: make(map[string]struct{})}
	ids := &pageIDs{features: features, src: src, max: s.pageIDs}
	src.features = ids
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// FOR SHARE makes a concurrent FailPoll or Apply of this poll wait for
		// the page, so staging never lands after the poll was cleaned up.
		var status feeds.PollStatus
		var stagingSchema string
		var staged bool
		if err := tx.QueryRow(ctx, sqlQuery("LockPollForStaging"), pollID).Scan(&status, &stagingSchema, &staged); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: no poll %d", ErrPollNotRunning, pollID)
			}
			return err
		}
		if status != feeds.PollRunning {
			return fmt.Errorf("%w: poll %d is %s", ErrPollNotRunning, pollID, status)
		}
		tx, err := stagingOf(ctx, tx, pollID, stagingSchema, staged)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedPage"), pollID, page); err != nil {
			return err
		}
		src.pollID = pollID
		tag, err := tx.Conn().PgConn().CopyFrom(ctx, src,
			strings.ReplaceAll(sqlQuery("StagingCopy"), "{{staged}}", stagedTable(stagingSchema)))
		if err != nil {
			// The reader's error is the cause (the caller branches on
			// it), then an encoding error; PostgreSQL's report of the
			// aborted COPY only repeats them.
			if src.readErr != nil {
				return src.readErr
			}
			if src.err != nil {
				return src.err
			}
			return err
		}
		n := tag.RowsAffected()
		// A page with too many ids to hold leaves them unknown (NULL): a
		// poll of that one page cannot repeat an id across pages
		// (OnePage), one of more pages is checked at apply
		// (checkPagesDisjoint). Counting them here would be a large part
		// of a big document's first load (scripts/bench.sh bigdoc).
		var named *int
		if !ids.overflow {
			count := len(src.ids)
			named = &count
		}
		profile, err := json.Marshal(&src.profile)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlQuery("RecordStagedPage"), pollID, page, n, named, src.invalid.json(), profile, s.nextLink(features))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: stage page %d of poll %d: %w", page, pollID, err)
	}
	return src.n, nil
}

// nextLink is the next link the page's reader knows once it ended (kinds
// that page by links: see feeds' chunkReader), nil for the others. The
// kind left the feed url's own credentials out; a secret still in it (the
// key in a link to another origin, a short one) is scrubbed here by value,
// and the resume puts the feed's credentials back.
func (s *Store) nextLink(features feature.FeatureReader) *string {
	nl, ok := features.(interface{ NextLink() (string, bool) })
	if !ok {
		return nil
	}
	link, ok := nl.NextLink()
	if !ok {
		return nil
	}
	link = s.secrets.Scrub(link)
	return &link
}

// NextLink returns the next link page of poll pollID recorded when it was
// staged; ok is false when it recorded none (no such page, or a kind that
// pages by offset).
func (s *Store) NextLink(ctx context.Context, pollID int64, page int) (link string, ok bool, err error) {
	var l *string
	err = s.pool.QueryRow(ctx, sqlQuery("StagedNextLink"), pollID, page).Scan(&l)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && l == nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("postgis: next link of page %d of poll %d: %w", page, pollID, err)
	}
	return *l, true, nil
}

// RestartStaging deletes every page poll pollID staged, so that it
// fetches again from the first page (a resume whose next link expired).
func (s *Store) RestartStaging(ctx context.Context, pollID int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tx, err := withStaging(ctx, tx, pollID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedFeaturesFrom"), pollID, 0); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeleteStagedPagesFrom"), pollID, 0); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlQuery("DeleteStagedDelta"), pollID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgis: restart the staging of poll %d: %w", pollID, err)
	}
	return nil
}

// StagedPageDigest implements the digest a resumed poll compares the page
// before its checkpoint by (feeds.PageDigest): the page's features, and a
// digest of their ids and content hashes, in any order.
func (s *Store) StagedPageDigest(ctx context.Context, pollID int64, page int) (feeds.PageDigest, error) {
	var d feeds.PageDigest
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tx, err := withStaging(ctx, tx, pollID)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, sqlQuery("StagedPageDigest"), pollID, page).Scan(&d.Features, &d.Sum)
	})
	if err != nil {
		return d, fmt.Errorf("postgis: digest of page %d of poll %d: %w", page, pollID, err)
	}
	return d, nil
}

// StagedFeatures returns how many features the poll's staged pages hold:
// a resumed poll counts them against its limits.poll_features.
func (s *Store) StagedFeatures(ctx context.Context, pollID int64) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, sqlQuery("StagedFeatures"), pollID).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgis: count staged features of poll %d: %w", pollID, err)
	}
	return n, nil
}

// defaultPageIDs is how many distinct ids StagePage counts in memory for a
// page's staged_pages.named_ids (a few MB); a larger page's are left
// unknown (NULL), so memory does not grow with the page.
const defaultPageIDs = 1 << 16

// pageIDs is the FeatureReader copySource reads a page through: it bounds
// copySource's set of the page's ids (filled by encode) to max ids, and
// drops it past that for good, leaving the count to PostgreSQL. A fresh set
// after the overflow would only be filled to be dropped again: on a page of
// 1M features, a map of 65,536 ids and their strings rebuilt 15 times, for
// a count nobody reads.
type pageIDs struct {
	features feature.FeatureReader
	src      *copySource
	max      int
	overflow bool
}

func (r *pageIDs) Next() (*feature.Feature, error) {
	if !r.overflow && len(r.src.ids) > r.max {
		r.overflow = true
		r.src.ids = nil // encode stops collecting
	}
	return r.features.Next()
}

// copySource adapts a FeatureReader to the byte stream of a binary COPY
// (io.Reader), encoding features as the connection asks for bytes, so
// memory does not grow with the page. Written by hand rather than through
// pgx.CopyFrom: the row's types are fixed, and pgx's per-value encoding
// (an encode plan looked up and each value boxed, ten per feature) was a
// tenth of ingestd's CPU time on a large layer.
type copySource struct {
	features feature.FeatureReader
	pollID   int64
	page     int32
	n        int
	readErr  error // the reader's own error, kept apart from encoding errors
	err      error
	jsonb    jsonbtext.Normalizer
	props    []byte // jsonb_send bytes of the current row's properties
	// ids holds the page's distinct source ids (staged_pages.named_ids),
	// at most pageIDs.max of them; nil once a page has more (not counted).
	ids map[string]struct{}
	// invalid counts the page's features by invalid reason
	// (staged_pages.invalid_features).
	invalid invalidCounts
	// profile counts the page's value kinds and geometry types
	// (staged_pages.profile; typed layers, schema.go).
	profile schema.Profile

	buf     []byte // encoded rows; out is what Read has not returned yet
	out     []byte
	started bool // the header is written
	done    bool // the trailer is written
}

// copyChunk is how much copySource encodes ahead of Read.
const copyChunk = 64 << 10

// Read implements io.Reader for pgconn's CopyFrom.
func (c *copySource) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if c.done {
			return 0, io.EOF
		}
		c.encodeChunk()
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// encodeChunk encodes rows into buf until it holds copyChunk bytes, the
// features end (then the trailer) or fail (c.err).
func (c *copySource) encodeChunk() {
	// The last resort: staging runs in a goroutine of its own (the
	// poll's page stager), where a panic would end the process whatever
	// the poll recovers. A feature ingestd cannot encode fails its page,
	// naming it; encode is meant never to get here.
	defer func() {
		if r := recover(); r != nil {
			c.err = fmt.Errorf("feature %d: cannot be staged: %v", c.n, r)
			c.out = nil
		}
	}()
	b := c.buf[:0]
	if !c.started {
		c.started = true
		b = append(b, "PGCOPY\n\377\r\n\000"...)
		b = binary.BigEndian.AppendUint32(b, 0) // flags
		b = binary.BigEndian.AppendUint32(b, 0) // header extension length
	}
	for len(b) < copyChunk {
		f, err := c.features.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.readErr, c.err = err, err
				break
			}
			b = binary.BigEndian.AppendUint16(b, 0xFFFF) // trailer: -1 fields
			c.done = true
			break
		}
		if f.Refused != "" || len(f.ID) > MaxIDBytes {
			// An id that long cannot be a key (the apply's index refuses
			// it) and says nothing about the rest of the layer: the
			// feature alone is refused, never the page. The decoders
			// refuse ids over the feed's limits.id_bytes (Refused); this
			// ceiling holds whatever a feed configures.
			c.invalid[reasonIDTooLong]++
			continue
		}
		b = c.appendRow(b, c.encode(f))
		c.n++
	}
	c.buf = b
	if c.err == nil {
		c.out = b
	}
}

// appendRow appends row as a binary COPY tuple of staged_features' columns
// (StagingCopy's order, sql/staging.sql): a field count, then each field's length (-1 for
// NULL) and bytes in PostgreSQL's binary format.
func (c *copySource) appendRow(b []byte, row stagedRow) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 12)
	b = be.AppendUint64(be.AppendUint32(b, 8), uint64(c.pollID))
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(c.page))
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(c.n))
	b = append(be.AppendUint32(b, uint32(len(row.id))), row.id...)
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(row.srid))
	b = appendNullable(b, row.ewkb)
	b = appendNullable(b, row.properties)
	b = append(be.AppendUint32(b, uint32(len(row.geomHash))), row.geomHash...)
	b = append(be.AppendUint32(b, uint32(len(row.propsHash))), row.propsHash...)
	b = append(be.AppendUint32(b, uint32(len(row.contentHash))), row.contentHash[:]...)
	broken := byte(0)
	if row.broken {
		broken = 1
	}
	b = append(be.AppendUint32(b, 1), broken)
	return be.AppendUint16(be.AppendUint32(b, 2), uint16(row.invalid))
}

// appendNullable appends a bytea or text field, NULL when v is nil.
func appendNullable(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
	}
	return append(binary.BigEndian.AppendUint32(b, uint32(len(v))), v...)
}

// jsonbVersion is the format version jsonb_send writes before the text.
const jsonbVersion = 1

// emptyHash is SHA-256 of nothing: the hash of no properties.
var emptyHash = func() []byte { h := sha256.Sum256(nil); return h[:] }()

// stagedRow is a feature encoded for staging.
type stagedRow struct {
	id         string // "" when the source gave none: Apply names it
	srid       int32
	ewkb       []byte // nil for a null geometry
	properties []byte // jsonb text, nil for no properties
	geomHash   []byte
	propsHash  []byte
	// contentHash is the layer's content hash of the row (contentHash).
	contentHash [contentHashBytes]byte
	broken      bool // the geometry cannot be stored: ewkb is nil, geomHash is of the source's
	invalid     int16
}

// contentHashBytes is the length of a feature's content hash as a layer
// table keeps it (ingestd_hash) and the change log records it.
const contentHashBytes = 16

// contentHash is a feature's content hash as a layer keeps it: the first
// contentHashBytes of SHA-256(geomHash || propsHash), the bytes SQL's
// substring(sha256(geom_hash || props_hash) for 16) gives, so that hashes
// stored before staging computed it stay valid. Computed here, once per
// staged row, rather than by the apply for every row of every snapshot:
// docs/decisions/0221-content-hash-at-staging.md.
func contentHash(geomHash, propsHash []byte) [contentHashBytes]byte {
	in := make([]byte, 0, 2*sha256.Size)
	sum := sha256.Sum256(append(append(in, geomHash...), propsHash...))
	return [contentHashBytes]byte(sum[:contentHashBytes])
}

// Values of staged_features.invalid_feature: what the apply may do with the row.
const (
	featureValid = 0
	// featureRepaired: its id or properties were repaired (see jsonbtext);
	// written under invalid_feature: repair, skipped under skip.
	featureRepaired = 1
	// featureUnusable: its properties have no faithful repair (not JSON,
	// a number numeric cannot hold); its update is always skipped.
	featureUnusable = 2
)

// MaxIDBytes is the longest feature id the store stages, whatever a feed's
// limits say (feature.MaxIDBytes). A feature with a longer id is refused
// alone and counted as id_too_long. Feeds bound ids lower with
// limits.id_bytes (default feature.DefaultIDBytes), in the decoders.
const MaxIDBytes = feature.MaxIDBytes

// Reasons a feature is counted as invalid (polls.invalid_features, the
// invalid_features metric), indexes into invalidCounts.
const (
	reasonInvalidUTF8 = iota
	reasonNUL
	reasonLoneSurrogate
	reasonIDTooLong
	reasonInvalidJSON
	reasonNumberRange
	numReasons
)

// reasonNames are the reasons' keys in polls.invalid_features.
var reasonNames = [numReasons]string{"invalid_utf8", "nul", "lone_surrogate", "id_too_long", "invalid_json", "number_out_of_range"}

// invalidCounts counts features per reason.
type invalidCounts [numReasons]int

// add counts one feature for each kind of repair in mask.
func (c *invalidCounts) add(mask jsonbtext.Repairs) {
	if mask&jsonbtext.RepairUTF8 != 0 {
		c[reasonInvalidUTF8]++
	}
	if mask&jsonbtext.RepairNUL != 0 {
		c[reasonNUL]++
	}
	if mask&jsonbtext.RepairSurrogate != 0 {
		c[reasonLoneSurrogate]++
	}
}

// json renders the non-zero counts as a JSON object, nil when there are none.
func (c *invalidCounts) json() []byte {
	var b []byte
	for i, n := range c {
		if n == 0 {
			continue
		}
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q:%d", reasonNames[i], n)
	}
	if b == nil {
		return nil
	}
	return append(b, '}')
}

// encode encodes the feature for staging. Its properties' jsonb text is
// rendered into a buffer reused from row to row: pgx encodes a row before
// asking for the next.
//
// Nothing a feature holds fails the page: a geometry PostgreSQL cannot parse
// is staged without it (geom_broken), text jsonb or PostgreSQL cannot hold
// is repaired (invalid_feature 1), and properties with no faithful repair are
// staged without them (invalid_feature 2); each is counted per reason.
func (c *copySource) encode(f *feature.Feature) stagedRow {
	var r stagedRow
	if f.Geometry != nil {
		b, broken := encodeGeometry(f.Geometry)
		r.srid = int32(f.Geometry.SRID())
		// Broken geometries hash as the source's EWKB, so an unchanged
		// one stays unchanged; one that cannot even be encoded by its
		// reason.
		if b == nil {
			b = []byte("unencodable geometry: " + broken)
		}
		r.geomHash = geomHash(b)
		if broken == "" {
			r.ewkb = b
		} else {
			r.broken = true
		}
	} else {
		r.geomHash = geomHash(nil)
	}
	// The hash is of jsonb_send's bytes: a version byte, then the text.
	c.props = append(c.props[:0], jsonbVersion)
	var repairs jsonbtext.Repairs
	switch {
	case len(f.Properties) == 0:
		r.propsHash = emptyHash
	default:
		var err error
		c.props, err = c.jsonb.Append(c.props, f.Properties)
		repairs = c.jsonb.Repairs()
		if err != nil {
			// Staged without properties, hashed by the source's bytes
			// (with a prefix no jsonb_send output has): the feature's
			// update is skipped while its properties stay unusable.
			if errors.Is(err, jsonbtext.ErrNumberRange) {
				c.invalid[reasonNumberRange]++
			} else {
				c.invalid[reasonInvalidJSON]++
			}
			r.invalid = featureUnusable
			h := sha256.New()
			h.Write([]byte("unusable properties\x00"))
			h.Write(f.Properties)
			r.propsHash = h.Sum(nil)
			break
		}
		r.properties = c.props[1:]
		h := sha256.Sum256(c.props)
		r.propsHash = h[:]
	}
	props := f.Properties
	if r.invalid == featureUnusable {
		props = nil
	}
	// Properties the decoder vouched for scan; an error only leaves this
	// feature's values out of the profile.
	_ = c.profile.AddFeature(props, feature.GeometryName(f.Geometry))
	// The decoders repair what they can before the store sees it; their
	// repairs count, and are skipped under invalid_feature: skip, as ours.
	if f.Repairs&feature.RepairedUTF8 != 0 {
		repairs |= jsonbtext.RepairUTF8
	}
	if f.Repairs&feature.RepairedSurrogate != 0 {
		repairs |= jsonbtext.RepairSurrogate
	}
	r.contentHash = contentHash(r.geomHash, r.propsHash)
	r.id, repairs = repairText(f.ID, repairs)
	c.invalid.add(repairs)
	if repairs != 0 && r.invalid == featureValid {
		r.invalid = featureRepaired
	}
	if r.id != "" && c.ids != nil {
		c.ids[r.id] = struct{}{}
	}
	return r
}

// repairText returns s with what a PostgreSQL text value cannot hold
// replaced by U+FFFD — each byte of invalid UTF-8, and NUL — and repairs
// with the kinds of repair made added.
func repairText(s string, repairs jsonbtext.Repairs) (string, jsonbtext.Repairs) {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s, repairs
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			repairs |= jsonbtext.RepairUTF8
			b.WriteString(jsonbtext.Replacement)
		case r == 0:
			repairs |= jsonbtext.RepairNUL
			b.WriteString(jsonbtext.Replacement)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), repairs
}

// geomHash is SHA-256 of the geometry's EWKB as encodeFeature writes it:
// always little-endian, from the decoded coordinates, so two sources
// formatting the same coordinates differently hash alike. A null geometry
// hashes as empty bytes, like missing properties in SQL.
func geomHash(ewkb []byte) []byte {
	h := sha256.Sum256(ewkb)
	return h[:]
}

// RecordCompleteness records what a succeeded poll's completeness rests on
// (polls.completeness: number_matched or links_only).
func (s *Store) RecordCompleteness(ctx context.Context, pollID int64, basis string) error {
	if _, err := s.pool.Exec(ctx, sqlQuery("RecordCompleteness"), pollID, basis); err != nil {
		return fmt.Errorf("postgis: record the completeness of poll %d: %w", pollID, err)
	}
	return nil
}
