// Package postgis is the feeds.Store that writes polls into PostGIS.
//
// A poll's pages are COPYed into unlogged staging tables as they arrive
// (StagePage) and applied to the features table in one transaction at the end
// (Apply): a poll that does not finish changes nothing a reader sees.
//
// Change detection is by content hash over normalised content (the rule is
// in migrations/00004): SHA-256(geom_hash || props_hash), where geom_hash is
// SHA-256 of the geometry as ingestd re-encodes it from the decoded
// coordinates (little-endian EWKB in the source CRS) and props_hash is SHA-256
// of PostgreSQL's normalised jsonb text of the properties (jsonb_send), which
// ingestd renders itself as the page is staged (jsonb.go) so that PostgreSQL
// parses properties only for the features it writes. Reordered keys,
// whitespace or number formatting in the source's text therefore do not
// count as modifications; changed values, coordinates, geometry type or
// source CRS do.
//
// Apply is guarded (see feeds.Guard and guard.go): a snapshot that shrank
// too much, lies mostly outside the jurisdiction's extent, or would remove
// features while the feed is stale or its origin stuck open is held, not
// applied, until an operator accepts or rejects it (held.go).
//
// The schema lives in package migrations.
package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/wfs"
)

// ErrPollNotRunning is returned (wrapped) when a poll is staged, applied or
// failed after it already finished, or when it does not exist.
var ErrPollNotRunning = errors.New("postgis: poll is not running")

// ApplyLockClass is the first key of the two-int advisory lock Apply takes per
// feed (the second is hashtext('jurisdiction/feed')). Two-int keys live in a
// key space apart from bigint keys, so a poller holding a bigint advisory
// lock on the same feed does not deadlock against Apply.
const ApplyLockClass int32 = 0x6170706c // "appl"

// maxErrorLen bounds the error text stored per poll and feed (polls.error,
// feed_status.last_error), in bytes: some servers answer with whole HTML
// pages, an error may quote a 20 MB value, and the tables are for
// operators, not archives.
const maxErrorLen = 1024

// maxQuotedLen bounds a value from the source quoted in a message (an id,
// say), in bytes before quoting.
const maxQuotedLen = 200

// Store implements feeds.Store on a pgx pool. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// bulkIndexMin: a first load of at least this many staged features
	// builds its indexes after filling its table.
	bulkIndexMin int64
	// smallSnapshot: up to this many staged features, an apply first
	// checks with a statement of its own whether anything changed.
	smallSnapshot int64
	// largeUnchangedCheck: above smallSnapshot, an apply first checks
	// with unchangedLargeSQL whether anything changed.
	largeUnchangedCheck bool
	// How many times it ran, and found the snapshot unchanged (tests).
	largeChecks, largeUnchanged atomic.Int64
	// useBulkFirstLoad: a first load of bulkIndexMin features or more is built
	// by bulkFirstLoad (else by firstLoadSQL). How many times it ran, and
	// fell back to firstLoadSQL for a repeated id or a failed transform
	// (tests).
	useBulkFirstLoad         bool
	bulkLoads, bulkFallbacks atomic.Int64
	// pageIDs: up to this many distinct ids per page, StagePage counts
	// them in memory (defaultPageIDs).
	pageIDs int
	// owner names this process (host:pid) in the polls it begins or
	// resumes, so that another instance can tell a poll a dead process
	// left running from one in flight.
	owner string
}

var _ feeds.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithBulkIndexMin sets the size from which a feed's first load builds its
// primary key and GiST index after filling its table instead of with it
// (default 10,000 features; 0: always after).
func WithBulkIndexMin(features int) Option {
	return func(s *Store) { s.bulkIndexMin = int64(features) }
}

// WithOwner records owner (the instance's host:pid, as the feed manager
// names its claims) on the polls the store begins or resumes. Without it
// polls have no owner, and only their age tells that one was abandoned.
func WithOwner(owner string) Option {
	return func(s *Store) { s.owner = owner }
}

// WithLogger sets the logger (nil discards).
func WithLogger(logger *slog.Logger) Option {
	return func(s *Store) {
		if logger != nil {
			s.logger = logger
		}
	}
}

// New returns a Store writing through pool. The schema must be migrated.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, logger: slog.New(slog.DiscardHandler), bulkIndexMin: defaultBulkIndexMin,
		smallSnapshot: defaultSmallSnapshot, largeUnchangedCheck: true, useBulkFirstLoad: true,
		pageIDs: defaultPageIDs}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// RegisterFeeds upserts a feed_status row for each configured feed. It marks
// nothing removed: the caller's configuration is one instance's (or one
// command's) view, and other instances may run with others; see RemoveFeeds
// and Prune.
func (s *Store) RegisterFeeds(ctx context.Context, infos []feeds.FeedInfo) error {
	n := len(infos)
	jur, feed := make([]string, n), make([]string, n)
	kind, url, origin := make([]string, n), make([]string, n), make([]string, n)
	interval := make([]int64, n)
	for i, f := range infos {
		jur[i], feed[i], kind[i], url[i], origin[i] = f.Jurisdiction, f.Feed, f.Kind, f.URL, f.Origin
		interval[i] = f.ExpectedInterval.Microseconds()
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, configured)
			SELECT j, f, k, u, o, CASE WHEN us > 0 THEN us * interval '1 microsecond' END, true
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS t(j, f, k, u, o, us)
			ON CONFLICT (jurisdiction, feed) DO UPDATE SET
				kind = excluded.kind, url = excluded.url, origin = excluded.origin,
				expected_interval = excluded.expected_interval, configured = true`,
			jur, feed, kind, url, origin, interval)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgis: register feeds: %w", err)
	}
	return nil
}

// RemoveFeeds implements feeds.Store: the feeds are marked configured =
// false. Their features and history stay: removing a feed from the YAML is
// not a request to delete its data.
func (s *Store) RemoveFeeds(ctx context.Context, infos []feeds.FeedInfo) error {
	jur, feed := make([]string, len(infos)), make([]string, len(infos))
	for i, f := range infos {
		jur[i], feed[i] = f.Jurisdiction, f.Feed
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE feed_status SET configured = false
		WHERE configured AND (jurisdiction, feed) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, jur, feed)
	if err != nil {
		return fmt.Errorf("postgis: remove feeds: %w", err)
	}
	return nil
}

// BeginPoll records a running poll of feed and its start as the feed's last
// attempt, and returns the poll's id. A feed not registered yet gets its
// feed_status row here.
func (s *Store) BeginPoll(ctx context.Context, feed feeds.FeedInfo) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `
		WITH p AS (
			INSERT INTO polls (jurisdiction, feed, url, owner) VALUES ($1, $2, $4, nullif($7, ''))
			RETURNING id, started_at
		), fs AS (
			INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, last_attempt_at, last_poll_id)
			SELECT $1, $2, $3, $4, $5, CASE WHEN $6::bigint > 0 THEN $6 * interval '1 microsecond' END, p.started_at, p.id FROM p
			ON CONFLICT (jurisdiction, feed) DO UPDATE SET
				last_attempt_at = excluded.last_attempt_at,
				last_poll_id = GREATEST(s.last_poll_id, excluded.last_poll_id)
		)
		SELECT id FROM p`,
		feed.Jurisdiction, feed.Feed, feed.Kind, feed.URL, feed.Origin, feed.ExpectedInterval.Microseconds(), s.owner,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("postgis: begin poll of %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
	}
	return id, nil
}

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
func (s *Store) StagePage(ctx context.Context, pollID int64, page int, features wfs.FeatureReader) (int, error) {
	src := &copySource{page: int32(page), ids: make(map[string]struct{})}
	ids := &pageIDs{features: features, src: src, max: s.pageIDs}
	src.features = ids
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// FOR SHARE makes a concurrent FailPoll or Apply of this poll wait for
		// the page, so staging never lands after the poll was cleaned up.
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM polls WHERE id = $1 FOR SHARE`, pollID).Scan(&status); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: no poll %d", ErrPollNotRunning, pollID)
			}
			return err
		}
		if status != "running" {
			return fmt.Errorf("%w: poll %d is %s", ErrPollNotRunning, pollID, status)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM staged_features WHERE poll_id = $1 AND page = $2`, pollID, page); err != nil {
			return err
		}
		src.pollID = pollID
		tag, err := tx.Conn().PgConn().CopyFrom(ctx, src, stagingCopySQL)
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
		named := len(src.ids)
		if ids.overflow {
			// Too many ids to hold: PostgreSQL counts the page's own rows
			// (about a second per million; COLLATE "C" compares bytes).
			if err := tx.QueryRow(ctx, `
				SELECT count(*)::int FROM (SELECT DISTINCT feature_id COLLATE "C" FROM staged_features
					WHERE poll_id = $1 AND page = $2 AND feature_id <> '') d`, pollID, page).Scan(&named); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO staged_pages (poll_id, page, features, named_ids, invalid_features) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (poll_id, page) DO UPDATE SET features = excluded.features, named_ids = excluded.named_ids,
				invalid_features = excluded.invalid_features, staged_at = now()`,
			pollID, page, n, named, src.invalid.json())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: stage page %d of poll %d: %w", page, pollID, err)
	}
	return src.n, nil
}

// StagedFeatures returns how many features the poll's staged pages hold:
// a resumed poll counts them against its limits.poll_features.
func (s *Store) StagedFeatures(ctx context.Context, pollID int64) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(features), 0) FROM staged_pages WHERE poll_id = $1`, pollID).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgis: count staged features of poll %d: %w", pollID, err)
	}
	return n, nil
}

// defaultPageIDs is how many distinct ids StagePage counts in memory for a
// page's staged_pages.named_ids (a few MB); a larger page is counted by
// PostgreSQL after its COPY, so memory does not grow with the page.
const defaultPageIDs = 1 << 16

// pageIDs is the FeatureReader copySource reads a page through: it bounds
// copySource's set of the page's ids (filled by encode) to max ids, and
// drops it past that, leaving the count to PostgreSQL.
type pageIDs struct {
	features wfs.FeatureReader
	src      *copySource
	max      int
	overflow bool
}

func (r *pageIDs) Next() (*wfs.Feature, error) {
	if len(r.src.ids) > r.max {
		r.overflow = true
		r.src.ids = make(map[string]struct{})
	}
	return r.features.Next()
}

// stagingCopySQL is the COPY StagePage sends; copySource writes its rows.
const stagingCopySQL = `COPY staged_features (poll_id, page, ordinal, feature_id, srid, geom_ewkb, properties,
	geom_hash, props_hash, geom_broken, invalid_feature) FROM STDIN (FORMAT binary)`

// copySource adapts a FeatureReader to the byte stream of a binary COPY
// (io.Reader), encoding features as the connection asks for bytes, so
// memory does not grow with the page. Written by hand rather than through
// pgx.CopyFrom: the row's types are fixed, and pgx's per-value encoding
// (an encode plan looked up and each value boxed, ten per feature) was a
// tenth of ingestd's CPU time on a large layer.
type copySource struct {
	features wfs.FeatureReader
	pollID   int64
	page     int32
	n        int
	readErr  error // the reader's own error, kept apart from encoding errors
	err      error
	jsonb    jsonbNormalizer
	props    []byte // jsonb_send bytes of the current row's properties
	// ids holds the page's distinct source ids (staged_pages.named_ids):
	// bounded by the page size.
	ids map[string]struct{}
	// invalid counts the page's features by invalid reason
	// (staged_pages.invalid_features).
	invalid invalidCounts

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
// (stagingCopySQL's order): a field count, then each field's length (-1 for
// NULL) and bytes in PostgreSQL's binary format.
func (c *copySource) appendRow(b []byte, row stagedRow) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 11)
	b = be.AppendUint64(be.AppendUint32(b, 8), uint64(c.pollID))
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(c.page))
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(c.n))
	b = append(be.AppendUint32(b, uint32(len(row.id))), row.id...)
	b = be.AppendUint32(be.AppendUint32(b, 4), uint32(row.srid))
	b = appendNullable(b, row.ewkb)
	b = appendNullable(b, row.properties)
	b = append(be.AppendUint32(b, uint32(len(row.geomHash))), row.geomHash...)
	b = append(be.AppendUint32(b, uint32(len(row.propsHash))), row.propsHash...)
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
	broken     bool // the geometry cannot be stored: ewkb is nil, geomHash is of the source's
	invalid    int16
}

// Values of staged_features.invalid_feature: what the apply may do with the row.
const (
	featureValid = 0
	// featureRepaired: its id or properties were repaired (see jsonb.go);
	// written under invalid_feature: repair, skipped under skip.
	featureRepaired = 1
	// featureUnusable: its properties have no faithful repair (not JSON,
	// a number numeric cannot hold); its update is always skipped.
	featureUnusable = 2
)

// MaxIDBytes is the longest feature id the store stages, whatever a feed's
// limits say: PostgreSQL's B-tree entries hold at most 2704 bytes, and the
// features key holds the id with the jurisdiction and feed. A feature with
// a longer id is refused alone and counted as id_too_long. Feeds bound ids
// lower with limits.id_bytes (default wfs.DefaultIDBytes), in the decoders.
const MaxIDBytes = 2048

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
func (c *invalidCounts) add(mask uint8) {
	if mask&repairUTF8 != 0 {
		c[reasonInvalidUTF8]++
	}
	if mask&repairNUL != 0 {
		c[reasonNUL]++
	}
	if mask&repairSurrogate != 0 {
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
func (c *copySource) encode(f *wfs.Feature) stagedRow {
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
	var repairs uint8
	switch {
	case len(f.Properties) == 0:
		r.propsHash = emptyHash
	default:
		var err error
		c.props, err = c.jsonb.jsonbText(c.props, f.Properties)
		repairs = c.jsonb.repairs
		if err != nil {
			// Staged without properties, hashed by the source's bytes
			// (with a prefix no jsonb_send output has): the feature's
			// update is skipped while its properties stay unusable.
			if errors.Is(err, errNumberRange) {
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
	// The decoders repair what they can before the store sees it; their
	// repairs count, and are skipped under invalid_feature: skip, as ours.
	if f.Repairs&wfs.RepairedUTF8 != 0 {
		repairs |= repairUTF8
	}
	if f.Repairs&wfs.RepairedSurrogate != 0 {
		repairs |= repairSurrogate
	}
	r.id, repairs = repairText(f.ID, repairs)
	c.invalid.add(repairs)
	if repairs != 0 && r.invalid == featureValid {
		r.invalid = featureRepaired
	}
	if r.id != "" {
		c.ids[r.id] = struct{}{}
	}
	return r
}

// repairText returns s with what a PostgreSQL text value cannot hold
// replaced by U+FFFD — each byte of invalid UTF-8, and NUL — and repairs
// with the kinds of repair made added.
func repairText(s string, repairs uint8) (string, uint8) {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s, repairs
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			repairs |= repairUTF8
			b.WriteString(replacement)
		case r == 0:
			repairs |= repairNUL
			b.WriteString(replacement)
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

// Apply replaces the feed's features with the poll's snapshot in one
// transaction and records the poll as succeeded, unless a guard holds the
// snapshot: the poll then ends as held with its staging kept, feed_status
// shows the hold, and the error wraps a *feeds.HeldError (the caller must not
// FailPoll it). A snapshot that applies supersedes an older held one.
//
// Rows whose content hash did not change are not written at all (no dead
// tuples, no WAL, no index churn for the common case of a layer that barely
// changes); features.last_seen_at is therefore not stored per row but is the
// feed's last_success_at (view features_seen). Every added, modified and
// removed feature gets a feature_changes row in the same transaction. When
// the snapshot holds a feature id more than once, the last one in page and
// ordinal order wins and the others are counted in polls.duplicate_ids.
// Geometries in another CRS are transformed to EPSG:4326 (SRID 0 is taken as
// 4326) and forced to 2D.
func (s *Store) Apply(ctx context.Context, pollID int64, feed feeds.FeedInfo) (feeds.ApplyResult, error) {
	var out applyOutcome
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockFeed(ctx, tx, feed.Jurisdiction, feed.Feed); err != nil {
			return err
		}
		if err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
			return err
		}
		// A crash of PostgreSQL during the poll emptied the pages it had
		// staged; what is left must not replace the layer.
		if err := checkStagingWhole(ctx, tx, pollID, feed.Jurisdiction, feed.Feed, "staged snapshot", -1); err != nil {
			return err
		}
		var err error
		out, err = s.applySnapshot(ctx, tx, pollID, feed.Jurisdiction, feed.Feed, &feed.Guard, &feed)
		return err
	})
	if err != nil {
		return feeds.ApplyResult{}, fmt.Errorf("postgis: apply poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	if out.held != "" {
		// Debug: the poll logs the hold at error level with its own context.
		s.logger.DebugContext(ctx, "snapshot held", "poll_id", pollID, "jurisdiction", feed.Jurisdiction,
			"feed", feed.Feed, "reason", out.held, "previous_features", out.previous, "snapshot_features", out.res.Features)
		return feeds.ApplyResult{}, fmt.Errorf("postgis: apply poll %d: %w", pollID, &feeds.HeldError{
			Feed: feed.Jurisdiction + "/" + feed.Feed, PollID: pollID, Reason: out.held,
			Previous: out.previous, Snapshot: out.res.Features})
	}
	s.logger.DebugContext(ctx, "applied snapshot", "poll_id", pollID, "jurisdiction", feed.Jurisdiction,
		"feed", feed.Feed, "features", out.res.Features, "added", out.res.Added, "modified", out.res.Modified,
		"removed", out.res.Removed, "duplicate_ids", out.duplicates)
	return out.res, nil
}

// applyOutcome is what applySnapshot did.
type applyOutcome struct {
	res        feeds.ApplyResult
	duplicates int
	previous   int
	// held is the guard's reason when the snapshot was held ("" if applied).
	held string
}

// checkSplit fails the apply when split (splitIDs' count, nil when
// unknown) says ids were staged on more than one page of a poll whose pages
// must be disjoint (checkPages non-nil); checkPagesDisjoint names them.
func checkSplit(ctx context.Context, tx pgx.Tx, pollID int64, checkPages *feeds.FeedInfo, split *int) error {
	if checkPages == nil || (split != nil && *split == 0) {
		return nil
	}
	if err := checkPagesDisjoint(ctx, tx, pollID, *checkPages); err != nil {
		return err
	}
	if split != nil {
		return fmt.Errorf("%d feature ids appear on more than one page", *split)
	}
	return nil
}

// checkPagesDisjoint refuses a snapshot in which one feature id was staged on
// two different pages: the server's paging order was unstable (features
// skipped while others repeat), or the feed's id_property is not unique.
// Either way the snapshot cannot be trusted to be complete. Checked here over
// every staged page, a resumed poll's earlier pages included, rather than in
// memory while fetching, so memory does not grow with the layer.
func checkPagesDisjoint(ctx context.Context, tx pgx.Tx, pollID int64, feed feeds.FeedInfo) error {
	var n int
	var example, pages *string
	err := tx.QueryRow(ctx, `
		SELECT count(*)::int, min(feature_id), (array_agg(pages ORDER BY feature_id))[1]
		FROM (
			SELECT feature_id, array_to_string(array_agg(DISTINCT page ORDER BY page), ', ') AS pages
			FROM staged_features WHERE poll_id = $1 AND feature_id <> ''
			GROUP BY feature_id HAVING min(page) <> max(page)
		) d`, pollID).Scan(&n, &example, &pages)
	if err != nil || n == 0 {
		return err
	}
	return &wfs.IncompleteError{URL: feed.URL, Expected: -1, Reason: fmt.Sprintf(
		"%d feature ids appear on more than one page (e.g. %s on pages %s): the server's paging order is unstable, "+
			"or id_property does not identify features uniquely", n, quoteInput(*example), *pages)}
}

// lockFeed serialises applies (and held decisions) of one feed across
// instances; the counts would be wrong if two snapshots diffed concurrently.
func lockFeed(ctx context.Context, tx pgx.Tx, jurisdiction, feed string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, ApplyLockClass, jurisdiction+"/"+feed)
	return err
}

// applySnapshot diffs and applies (or holds) the snapshot of poll pollID in
// tx, which holds the feed's lock and the poll's row. guard nil applies
// unconditionally (an operator accepted the snapshot).
//
// checkPages, unless nil, is the feed whose pages must be disjoint (see
// checkPagesDisjoint and splitIDs); a snapshot that is not fails the
// transaction, which writes nothing.
func (s *Store) applySnapshot(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed string, guard *feeds.Guard,
	checkPages *feeds.FeedInfo) (applyOutcome, error) {
	var out applyOutcome
	// The poll's staged rows were just COPYed and the feed's features may
	// have been written since the last ANALYZE, so the planner estimates
	// both sides at a handful of rows and picks nested loops that compare
	// every staged feature with every current one: minutes for 50k
	// features. Both sides are bulk, so hash joins are right whatever the
	// statistics say.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_nestloop = off`); err != nil {
		return out, err
	}
	// Disabling nested loops adds a huge constant to the cost of every plan
	// that would have used one, which pushes even a 10-feature apply past
	// jit_above_cost: a second of JIT compilation per apply, for a query
	// that then runs in milliseconds. JIT never pays off here.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return out, err
	}
	accept, maxShrink := guard == nil, feeds.DefaultMaxShrink
	var bbox []float64
	if guard != nil {
		maxShrink = guard.EffectiveMaxShrink()
		if b := guard.BBox; b != nil {
			bbox = []float64{b.MinX, b.MinY, b.MaxX, b.MaxY}
		}
	}
	var pages int
	var split *int
	var held *string
	skipInvalid := guard != nil && guard.SkipInvalid
	skipInvalidFeature := guard != nil && guard.SkipInvalidFeature
	invalidFeatures, err := countInvalidFeatures(ctx, tx, pollID)
	if err != nil {
		return out, err
	}
	table, err := lookupFeedTable(ctx, tx, pollID, jurisdiction, feed)
	if err != nil {
		return out, err
	}
	staged := int(table.staged)
	firstLoad := !table.exists
	// bulk: a large first load done (or held) by bulkFirstLoad, with its
	// table, indexes and change log.
	bulk := false
	if firstLoad && s.useBulkFirstLoad && table.staged >= s.bulkIndexMin {
		if bulk, held, split, err = s.bulkFirstLoad(ctx, tx, pollID, table, jurisdiction, feed,
			accept, bbox, skipInvalid, skipInvalidFeature, &pages, &out); err != nil {
			return out, err
		}
		if bulk {
			if err := checkSplit(ctx, tx, pollID, checkPages, split); err != nil {
				return out, err
			}
		}
	}
	if firstLoad && !bulk {
		if err := createLoadTable(ctx, tx, &table, s.bulkIndexMin, jurisdiction, feed); err != nil {
			return out, err
		}
	}
	unchanged, checked := false, false
	if !firstLoad {
		if unchanged, checked, split, err = s.unchangedSnapshot(ctx, tx, pollID, table, jurisdiction, feed, &pages, &out); err != nil {
			return out, err
		}
	}
	// Ids on two pages fail the poll before anything is written, when the
	// small statement already counted them.
	if checked {
		if err := checkSplit(ctx, tx, pollID, checkPages, split); err != nil {
			return out, err
		}
	}
	if !unchanged && !bulk {
		// The statement's text names the feed's table: executed without
		// preparing, so thousands of feeds do not churn the statement cache.
		err = runApply(ctx, tx, applyStatement(table, firstLoad),
			[]any{pollID, jurisdiction, feed, accept, maxShrink, bbox, skipInvalid, skipInvalidFeature},
			&out.res.Features, &out.res.Added, &out.res.Modified, &out.res.Unchanged, &out.res.Removed,
			&pages, &out.previous, &held, &out.res.InvalidGeometries, &split)
		if err != nil {
			return out, err
		}
		if !checked {
			// Written rows are rolled back with the transaction.
			if err := checkSplit(ctx, tx, pollID, checkPages, split); err != nil {
				return out, err
			}
		}
	}
	out.duplicates = staged - out.res.Features
	out.res.InvalidFeatures = invalidFeatures
	var oldHeld *int64
	if err := tx.QueryRow(ctx, `SELECT held_poll_id FROM feed_status WHERE jurisdiction = $1 AND feed = $2`,
		jurisdiction, feed).Scan(&oldHeld); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return out, err
	}
	// Whatever this snapshot's fate, an older held one is now moot: the
	// operator decides on the newest, and its staging is dead weight.
	if oldHeld != nil && *oldHeld != pollID {
		if _, err := tx.Exec(ctx, `UPDATE polls SET status = 'superseded' WHERE id = $1 AND status = 'held'`, *oldHeld); err != nil {
			return out, err
		}
		if err := deleteStaging(ctx, tx, *oldHeld); err != nil {
			return out, err
		}
	}

	if held != nil && firstLoad && !bulk {
		// Nothing was written into it; the feed stays without a table
		// until a snapshot applies.
		if _, err := tx.Exec(ctx, `DROP TABLE `+table.ident()); err != nil {
			return out, err
		}
	} else if firstLoad && !bulk && !table.indexed {
		if err := buildLoadIndexes(ctx, tx, table); err != nil {
			return out, err
		}
	}
	if held != nil {
		out.held = *held
		out.res = feeds.ApplyResult{Features: out.res.Features}
		if _, err := tx.Exec(ctx, `
			UPDATE polls SET status = 'held', finished_at = now(), error = $2, pages = $3, features = $4, duplicate_ids = $5
			WHERE id = $1`,
			pollID, out.held, pages, out.res.Features, out.duplicates); err != nil {
			return out, err
		}
		// last_error too, so that views that do not know 'held' still show
		// the feed as not applying, with the reason.
		_, err := tx.Exec(ctx, `
			UPDATE feed_status SET held_poll_id = $3, held_reason = $4, held_at = now(),
				last_error = 'snapshot held: ' || $4, last_error_at = now(),
				last_poll_id = GREATEST(last_poll_id, $3)
			WHERE jurisdiction = $1 AND feed = $2`,
			jurisdiction, feed, pollID, out.held)
		return out, err
	}

	if _, err := tx.Exec(ctx, `
		UPDATE polls SET status = 'succeeded', finished_at = now(), pages = $2, features = $3,
			added = $4, modified = $5, removed = $6, unchanged = $7, duplicate_ids = $8, invalid_geometries = $9,
			error = CASE WHEN status = 'held' THEN 'accepted: ' || error ELSE error END
		WHERE id = $1`,
		pollID, pages, out.res.Features, out.res.Added, out.res.Modified, out.res.Removed, out.res.Unchanged, out.duplicates,
		out.res.InvalidGeometries); err != nil {
		return out, err
	}
	if _, err := tx.Exec(ctx, `
		UPDATE feed_status SET last_success_at = now(), feature_count = $3, consecutive_failures = 0,
			retry_after = NULL, last_poll_id = GREATEST(last_poll_id, $4),
			held_poll_id = NULL, held_reason = NULL, held_at = NULL
		WHERE jurisdiction = $1 AND feed = $2`,
		jurisdiction, feed, out.res.Features, pollID); err != nil {
		return out, err
	}
	if err := deleteStaging(ctx, tx, pollID); err != nil {
		return out, err
	}
	if firstLoad {
		// Last: attaching locks the jurisdiction's partition against other
		// attaches until the transaction ends.
		return out, attachFeedTable(ctx, tx, table, jurisdiction, feed)
	}
	return out, nil
}

// runApply runs the apply statement sql with args, scanning its row into
// dest. When a geometry's transform fails — a coordinate outside its CRS's
// domain, which PROJ refuses and PostGIS turns into an error that aborts the
// statement — it runs it again with transforms that give such a geometry no
// value (it is then invalid: stored without it, or skipped). The first run
// stays the plain one: the safe transform catches errors in a
// subtransaction per call, which parallel workers cannot run.
func runApply(ctx context.Context, tx pgx.Tx, sql string, args []any, dest ...any) error {
	sp, err := tx.Begin(ctx) // a savepoint
	if err != nil {
		return err
	}
	err = sp.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeDescribeExec}, args...)...).Scan(dest...)
	if err == nil {
		return sp.Commit(ctx)
	}
	if rbErr := sp.Rollback(ctx); rbErr != nil || !isTransformError(err) {
		return err
	}
	return tx.QueryRow(ctx, safeTransforms(sql), append([]any{pgx.QueryExecModeDescribeExec}, args...)...).Scan(dest...)
}

// isTransformError tells whether err is PostGIS failing to transform a
// coordinate ("transform: Point outside of projection domain").
func isTransformError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "XX000" && strings.HasPrefix(pgErr.Message, "transform:")
}

// safeTransforms is sql with every ST_Transform replaced by
// ingestd_try_transform (migration 18), which gives NULL where ST_Transform
// fails for a coordinate.
func safeTransforms(sql string) string {
	return strings.ReplaceAll(sql, "ST_Transform(", "ingestd_try_transform(")
}

// countInvalidFeatures sums the invalid features the poll's pages counted
// while staging into polls.invalid_features and returns them, whether the
// snapshot then applies or is held.
func countInvalidFeatures(ctx context.Context, tx pgx.Tx, pollID int64) (feeds.InvalidFeatures, error) {
	var counts map[string]int
	err := tx.QueryRow(ctx, `
		UPDATE polls SET invalid_features = (
			SELECT jsonb_object_agg(reason, n) FROM (
				SELECT e.key AS reason, sum(e.value::int) AS n
				FROM staged_pages sp CROSS JOIN LATERAL jsonb_each_text(sp.invalid_features) e
				WHERE sp.poll_id = $1
				GROUP BY e.key) r)
		WHERE id = $1
		RETURNING invalid_features`, pollID).Scan(&counts)
	return feeds.InvalidFeatures{
		InvalidUTF8:      counts[reasonNames[reasonInvalidUTF8]],
		NUL:              counts[reasonNames[reasonNUL]],
		LoneSurrogate:    counts[reasonNames[reasonLoneSurrogate]],
		IDTooLong:        counts[reasonNames[reasonIDTooLong]],
		InvalidJSON:      counts[reasonNames[reasonInvalidJSON]],
		NumberOutOfRange: counts[reasonNames[reasonNumberRange]],
	}, err
}

// stagedID names a staged_features row: its source id, or without one the
// hex of its content hash.
const stagedID = `CASE WHEN feature_id = '' THEN encode(sha256(geom_hash || props_hash), 'hex') ELSE feature_id END`

// snapshotCTEs reads poll $1's snapshot: staged (every staged row, named
// by its source id or, without one, its hex content hash) and snapshot
// (the last row of each id in page and ordinal order). Narrow: ids, hashes
// and where the row is staged; the geometry and properties are read back
// (stagedPayload) only for features that are written, so an unchanged
// layer's payload is never moved again. COLLATE "C": the sort only groups
// equal ids, so it compares bytes (abbreviated keys) instead of calling
// strcoll.
const snapshotCTEs = `
WITH staged AS (
	SELECT ` + stagedID + ` AS id,
		feature_id <> '' AS named, page, ordinal, geom_hash, props_hash
	FROM staged_features
	WHERE poll_id = $1
), snapshot AS MATERIALIZED (
	SELECT DISTINCT ON (id COLLATE "C") id AS feature_id, named, page, ordinal, geom_hash, props_hash
	FROM staged
	ORDER BY id COLLATE "C", page DESC, ordinal DESC
)`

// splitIDs, followed by the count of the snapshot's distinct source ids,
// counts the ids staged on more than one page: each page counted its
// distinct ids while staging (NULL for a page staged before version 14,
// which leaves the count unknown).
const splitIDs = `(SELECT CASE WHEN bool_or(named_ids IS NULL) THEN NULL ELSE sum(named_ids) END
	FROM staged_pages WHERE poll_id = $1)::int - `

// applySQL diffs the poll's staged snapshot ($1) against the feed's features
// ($2, $3), asks the guards, and — unless they hold it — writes the
// difference and the change log, all in one statement and one pass over the
// staging. $4 true bypasses the guards (accept); $5 is max_shrink; $6 the
// jurisdiction's bbox (float8[4], EPSG:4326) or NULL; $7 skips features
// with an invalid geometry, $8 those whose id or properties were repaired
// (skippedRow).
//
// The data-modifying CTEs see the same snapshot of features and touch
// disjoint rows (written: ids in the snapshot; removed: ids not in it);
// PostgreSQL runs each to completion even though the final SELECT reads
// only some of them. Each is gated on the verdict, so a held snapshot
// writes nothing; the verdict's subqueries for the extent and the freeze
// only run when their CASE branch is reached.
//
// Guards, in order (the first that trips is the reason):
//   - empty: no features while the feed has some;
//   - shrink: fewer than (1 - max_shrink) × the previous count of distinct
//     features (so a server repeating its first page for every page, which
//     stages many rows but few ids, is caught too);
//   - extent: more than half of the features that have a geometry have a
//     bounding box (after transform to EPSG:4326) that does not intersect
//     the bbox — a swapped axis order or a wrong CRS;
//   - freeze: the snapshot would remove features while the feed is stale
//     (its last success is older than 2 × its expected interval, the
//     feed_freshness rule) or its origin is stuck open (breaker_state.stuck).
//
// {{table}} is the feed's table (applyStatement). A written row that
// exists is updated (applyUpsert).
//
// Its rows: distinct features, added, modified, unchanged, removed, pages,
// previous features, the guards' verdict, invalid geometries, and ids
// staged on more than one page (splitIDs).
const applySQL = snapshotCTEs + `, diff AS MATERIALIZED (
	-- One pass over both sides: present rows are the snapshot's, rows
	-- only in the feed's table (NOT present) are the removed ones.
	SELECT s.*, f.feature_id AS old_id, s.feature_id IS NOT NULL AS present,
		f.feature_id IS NOT NULL AS existed, f.content_hash AS old_hash,
		f.geom_hash IS DISTINCT FROM s.geom_hash AS geom_changed,
		f.props_hash IS DISTINCT FROM s.props_hash AS props_changed,
		-- A row written before geometry hashes: adopt the new hashes
		-- silently when the properties did not change.
		f.feature_id IS NOT NULL AND f.geom_hash IS NULL AS legacy
	FROM snapshot s
	FULL JOIN (SELECT feature_id, content_hash, geom_hash, props_hash FROM {{table}}) f ON f.feature_id = s.feature_id
), counts AS MATERIALIZED (
	SELECT
		count(*) FILTER (WHERE present)::int AS features,
		count(*) FILTER (WHERE present AND NOT existed)::int AS added,
		count(*) FILTER (WHERE present AND existed AND (geom_changed OR props_changed)
			AND NOT (legacy AND NOT props_changed))::int AS modified,
		count(*) FILTER (WHERE present AND existed)::int AS kept,
		count(*) FILTER (WHERE existed)::int AS previous,
		count(*) FILTER (WHERE present AND named)::int AS named
	FROM diff
), ` + extentCTE + `, verdict AS MATERIALIZED (
	SELECT CASE
		WHEN $4 THEN NULL
		WHEN c.previous > 0 AND c.features = 0 THEN
			format('empty: the snapshot has no features, the feed has %s', c.previous)
		WHEN c.features < (1 - $5::float8) * c.previous THEN
			format('shrink: the snapshot has %s features, the feed has %s (max_shrink %s allows no fewer than %s)',
				c.features, c.previous, $5::float8, ceil((1 - $5::float8) * c.previous))
		WHEN $6::float8[] IS NOT NULL AND (SELECT 2 * e.outside > e.located FROM extent e) THEN
			(SELECT ` + extentReason + ` FROM extent e)
		WHEN c.previous > c.kept AND fz.stale THEN
			format('freeze: the snapshot would remove %s features while the feed is stale (last success %s)',
				c.previous - c.kept, fz.last_success_at)
		WHEN c.previous > c.kept AND fz.stuck THEN
			format('freeze: the snapshot would remove %s features while its origin %s is stuck open',
				c.previous - c.kept, fz.origin)
	END AS reason
	FROM counts c
	LEFT JOIN (
		SELECT s.last_success_at, s.origin,
			coalesce(s.expected_interval IS NOT NULL AND now() - s.last_success_at > 2 * s.expected_interval, false) AS stale,
			EXISTS (SELECT 1 FROM breaker_state b WHERE b.origin = s.origin AND b.stuck AND b.state <> 'closed') AS stuck
		FROM feed_status s WHERE s.jurisdiction = $2 AND s.feed = $3
	) fz ON true
), towrite AS MATERIALIZED (
	SELECT w.*, ` + skippedRow + ` AS skipped FROM (
	-- Only added and modified features are transformed and judged valid:
	-- an unchanged layer costs no geometry work at all.
	-- The content hash too is computed only for rows that are written.
	SELECT d.*, sha256(d.geom_hash || d.props_hash) AS content_hash, p.properties, p.invalid_feature,
		` + storedGeometry + ` AS geom, ` + invalidGeometry + ` AS invalid
	FROM diff d
	CROSS JOIN LATERAL (` + stagedPayload + `) p
	` + stagedGeometry + `
	WHERE d.present AND (NOT d.existed OR d.geom_changed OR d.props_changed)
	  AND (SELECT reason FROM verdict) IS NULL
	) w
), written AS (
	` + insertWritten + `
	` + applyUpsert + `
), removed AS (
	-- The ids come from diff. Usually there are none: a hash join whose
	-- hashed side is empty does not scan the table at all.
	DELETE FROM {{table}} f
	USING (SELECT old_id FROM diff WHERE NOT present) r
	WHERE f.jurisdiction = $2 AND f.feed = $3 AND f.feature_id = r.old_id
	  AND (SELECT reason FROM verdict) IS NULL
	RETURNING f.feature_id, f.content_hash
), logged AS (
	INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change,
		geometry_changed, properties_changed, old_hash, new_hash, changed_at)
	SELECT $1, $2, $3, d.feature_id, CASE WHEN d.existed THEN 'modified' ELSE 'added' END,
		CASE WHEN NOT d.existed THEN true WHEN d.legacy THEN NULL ELSE d.geom_changed END,
		NOT d.existed OR d.props_changed, d.old_hash, d.content_hash, now()
	FROM towrite d
	WHERE (NOT d.existed OR ((d.geom_changed OR d.props_changed) AND NOT (d.legacy AND NOT d.props_changed)))
	  AND NOT d.skipped
	UNION ALL
	SELECT $1, $2, $3, r.feature_id, 'removed', true, true, r.content_hash, NULL, now()
	FROM removed r
)
SELECT
	c.features,
	-- A skipped feature is neither added nor modified: its old version stays.
	c.added - (SELECT count(*) FROM towrite WHERE skipped AND NOT existed)::int,
	c.modified - (SELECT count(*) FROM towrite WHERE skipped AND existed
		AND NOT (legacy AND NOT props_changed))::int,
	c.features - c.added - c.modified,
	(SELECT count(*) FROM removed)::int,
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	c.previous,
	(SELECT reason FROM verdict),
	(SELECT count(*) FROM towrite WHERE invalid)::int,
	` + splitIDs + `c.named
FROM counts c`

// insertWritten writes towrite's rows into the feed's table: invalid
// geometries repaired, the rows skippedRow skips left out.
const insertWritten = `INSERT INTO {{table}} AS f (jurisdiction, feed, feature_id, geom, properties, geom_hash, props_hash,
		content_hash, first_seen_at, changed_at, poll_id)
	SELECT $2, $3, t.feature_id,
		CASE WHEN t.invalid AND t.geom IS NOT NULL THEN ST_MakeValid(t.geom) ELSE t.geom END,
		t.properties::jsonb, t.geom_hash, t.props_hash, t.content_hash, now(), now(), $1
	FROM towrite t
	WHERE NOT t.skipped`

// skippedRow tells whether the towrite row w is left out: its geometry is
// invalid and the feed skips those ($7, invalid_geometry: skip), its
// properties have no faithful repair, or they (or its id) were repaired and
// the feed skips those ($8, invalid_feature: skip). A skipped feature keeps
// its previous version, and a new one is not added.
const skippedRow = `((w.invalid AND $7) OR w.invalid_feature = 2 OR (w.invalid_feature = 1 AND $8::boolean))`

// inRange tells whether the geometry g.geom (stagedGeometry: in EPSG:4326)
// lies within longitudes [-180, 180] and latitudes [-90, 90]: lon 500 or
// lat 100 is no place on Earth, whatever the source's CRS (a geographic
// one passes it through ST_Transform as it is). By bounding box (@): a
// tenth of the cost of ST_XMin and its kin, and exact here, as the bounds
// are floats the box's single precision holds (it rounds outward). An
// empty geometry (no box) is in range; a NaN coordinate passes the box
// test but fails ST_IsValid.
const inRange = `coalesce(g.geom @ ST_MakeEnvelope(-180, -90, 180, 90, 4326) OR ST_IsEmpty(g.geom), true)`

// invalidGeometry tells whether the staged row p's geometry g.geom is
// invalid: it could not be parsed (geom_broken) or transformed, lies out of
// range, or is not valid for ST_IsValid. A CASE, so that ST_IsValid only sees
// geometries in range.
const invalidGeometry = `CASE
		WHEN p.geom_broken THEN true
		-- No geometry from a staged one: its transform failed (runApply).
		WHEN g.geom IS NULL THEN p.geom_ewkb IS NOT NULL
		WHEN NOT ` + inRange + ` THEN true
		ELSE NOT ST_IsValid(g.geom)
	END`

// storedGeometry is the geometry stored for g.geom before repair: none
// when it lies out of range (there is no faithful repair for lon 500).
const storedGeometry = `CASE WHEN ` + inRange + ` THEN g.geom END`

// extentCTE counts, for the extent guard, the snapshot's features that
// have a geometry and those whose bounding box (in EPSG:4326) does not
// intersect the jurisdiction's bbox ($6). Evaluated only when the verdict
// asks.
const extentCTE = `extent AS (
	SELECT count(*) AS located, count(*) FILTER (WHERE NOT (
		CASE WHEN p.srid IN (0, 4326) THEN ST_SetSRID(x.geom, 4326)
		     ELSE ST_Transform(ST_Envelope(x.geom), 4326)
		END && ST_MakeEnvelope(($6::float8[])[1], ($6::float8[])[2], ($6::float8[])[3], ($6::float8[])[4], 4326))) AS outside
	FROM snapshot d
	CROSS JOIN LATERAL (` + stagedPayload + `) p
	CROSS JOIN LATERAL (SELECT ST_GeomFromEWKB(p.geom_ewkb) AS geom) x
	-- An empty geometry is nowhere: neither inside nor outside.
	WHERE p.geom_ewkb IS NOT NULL AND NOT ST_IsEmpty(x.geom)
)`

// extentReason is the extent guard's reason, from e's counts and the bbox $6.
const extentReason = `format('extent: %s of %s located features lie outside the jurisdiction''s bbox [%s]',
	e.outside, e.located, array_to_string($6::float8[], ', '))`

// stagedGeometry is g.geom: the staged payload p's geometry as stored, in
// EPSG:4326 (SRID 0 taken as 4326) and 2D.
const stagedGeometry = `CROSS JOIN LATERAL (SELECT CASE
			WHEN p.geom_ewkb IS NULL THEN NULL
			WHEN p.srid IN (0, 4326) THEN ST_Force2D(ST_SetSRID(ST_GeomFromEWKB(p.geom_ewkb), 4326))
			ELSE ST_Force2D(ST_Transform(ST_GeomFromEWKB(p.geom_ewkb), 4326))
		END AS geom) g`

// firstLoadSQL is applySQL for a feed's first load, into the new table
// {{table}}: every feature is added, so there is nothing to diff and of the
// guards only the extent can hold the snapshot. One pass from the snapshot
// to the table; the change log is written from what the INSERT returns.
// Same parameters and rows as applySQL.
const firstLoadSQL = snapshotCTEs + `, ` + extentCTE + `, verdict AS MATERIALIZED (
	SELECT CASE WHEN NOT $4 AND $6::float8[] IS NOT NULL AND (SELECT 2 * e.outside > e.located FROM extent e) THEN
		(SELECT ` + extentReason + ` FROM extent e)
	END AS reason,
	-- max_shrink cannot hold a first load; typed here so that the
	-- statement takes applySQL's parameters.
	$5::float8 AS max_shrink
), towrite AS MATERIALIZED (
	SELECT w.*, ` + skippedRow + ` AS skipped FROM (
	SELECT d.feature_id, d.geom_hash, d.props_hash, sha256(d.geom_hash || d.props_hash) AS content_hash,
		p.properties, p.invalid_feature, ` + storedGeometry + ` AS geom, ` + invalidGeometry + ` AS invalid
	FROM snapshot d
	JOIN staged_features p ON p.poll_id = $1 AND p.page = d.page AND p.ordinal = d.ordinal
	` + stagedGeometry + `
	WHERE (SELECT reason FROM verdict) IS NULL
	) w
), written AS (
	` + insertWritten + `
	RETURNING feature_id, content_hash
), logged AS (
	INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change,
		geometry_changed, properties_changed, old_hash, new_hash, changed_at)
	SELECT $1, $2, $3, w.feature_id, 'added', true, true, NULL, w.content_hash, now()
	FROM written w
)
SELECT
	c.features,
	(SELECT count(*) FROM written)::int,
	0, 0, 0,
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	0,
	(SELECT reason FROM verdict),
	(SELECT count(*) FROM towrite WHERE invalid)::int,
	` + splitIDs + `c.named
FROM (SELECT count(*)::int AS features, count(*) FILTER (WHERE named)::int AS named FROM snapshot) c`

// defaultSmallSnapshot is the size up to which an apply first checks
// whether the snapshot changes anything with unchangedSQL; above it with
// unchangedLargeSQL.
const defaultSmallSnapshot = 10000

// unchangedSnapshot tells whether the snapshot holds exactly the feed's
// features with the same hashes, and if so fills in the counts of an apply
// that changes nothing. Most polls of a quiet layer are that, and both
// checks cost a fraction of applySQL: for a small layer, planning applySQL
// (a dozen CTEs, a new plan per feed) costs more than running it; for a
// large one, applySQL's sort and full join run on one core, while
// unchangedLargeSQL is read-only and PostgreSQL runs it in parallel. A
// snapshot that changes anything goes to applySQL. ran says whether split
// holds splitIDs' count (only the small statement counts it).
func (s *Store) unchangedSnapshot(ctx context.Context, tx pgx.Tx, pollID int64, t feedTable, jurisdiction, feed string,
	pages *int, out *applyOutcome) (unchanged, ran bool, split *int, err error) {
	if t.staged > s.smallSnapshot {
		return s.unchangedLargeSnapshot(ctx, tx, pollID, t, pages, out)
	}
	var features, changed, current int
	err = tx.QueryRow(ctx, strings.ReplaceAll(unchangedSQL, "{{table}}", t.ident()), pgx.QueryExecModeDescribeExec,
		pollID, jurisdiction, feed).Scan(pages, &features, &changed, &current, &split)
	if err != nil || changed > 0 || current != features {
		return false, err == nil, split, err
	}
	out.res = feeds.ApplyResult{Features: features, Unchanged: features}
	out.previous = current
	return true, true, split, nil
}

// unchangedLargeSnapshot is unchangedSnapshot for a snapshot of more than
// smallSnapshot features. When something did change, the check's time is
// lost (1.4 s of a 1M-feature apply), so it is skipped when the staged count
// differs from the feed's count at its last apply (features were added or
// removed, or ids repeat) and when that apply changed features: a layer
// that changed last time likely changed again, one that was quiet likely
// is still.
func (s *Store) unchangedLargeSnapshot(ctx context.Context, tx pgx.Tx, pollID int64, t feedTable,
	pages *int, out *applyOutcome) (unchanged, ran bool, split *int, err error) {
	if !s.largeUnchangedCheck || t.staged != t.lastCount || !t.lastQuiet {
		return false, false, nil, nil
	}
	s.largeChecks.Add(1)
	// Staging's statistics describe whatever it held at its last ANALYZE:
	// a new poll's rows are estimated at one, and the planner would then
	// reach them by index and hash all of them in every parallel worker.
	// Without index scans it hashes them once, in parallel.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
		return false, false, nil, err
	}
	var current, matched int
	err = tx.QueryRow(ctx, strings.ReplaceAll(unchangedLargeSQL, "{{table}}", t.ident()), pgx.QueryExecModeDescribeExec,
		pollID).Scan(pages, &current, &matched)
	if err != nil {
		return false, false, nil, err
	}
	// applySQL reads the staged payload by index.
	if _, err := tx.Exec(ctx, `RESET enable_indexscan; RESET enable_bitmapscan`); err != nil {
		return false, false, nil, err
	}
	if int64(current) != t.staged || matched != current {
		return false, false, nil, err
	}
	s.largeUnchanged.Add(1)
	zero := 0
	out.res = feeds.ApplyResult{Features: current, Unchanged: current}
	out.previous = current
	return true, true, &zero, nil
}

// unchangedSQL counts, for unchangedSnapshot, the pages of poll $1,
// the snapshot's distinct features, those of them that are new or whose
// hashes differ from the feed's ($2, $3) table, the features the table holds
// (more than the snapshot's unchanged ones: removals), and the split ids.
const unchangedSQL = snapshotCTEs + `
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	count(*)::int,
	count(*) FILTER (WHERE f.feature_id IS NULL OR f.geom_hash IS DISTINCT FROM s.geom_hash
		OR f.props_hash IS DISTINCT FROM s.props_hash)::int,
	(SELECT count(*) FROM {{table}} WHERE jurisdiction = $2 AND feed = $3)::int,
	` + splitIDs + `count(*) FILTER (WHERE s.named)
FROM snapshot s
LEFT JOIN {{table}} f ON f.jurisdiction = $2 AND f.feed = $3 AND f.feature_id = s.feature_id`

// unchangedLargeSQL counts the pages of poll $1, the features of the feed's
// table, and those of them that poll $1 staged with the same id and hashes.
// When both counts equal the staged count, the staged rows and the table
// match one to one (the table's ids are unique): the snapshot is the table,
// with no repeated id and so no id on two pages. No sort and no write: a
// parallel hash semi-join.
const unchangedLargeSQL = `
SELECT
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int,
	(SELECT count(*) FROM {{table}})::int,
	(SELECT count(*) FROM {{table}} f WHERE EXISTS (
		-- stagedID's unqualified columns are s's (the innermost scope).
		SELECT FROM staged_features s
		WHERE s.poll_id = $1
		  AND ` + stagedID + ` = f.feature_id
		  AND s.geom_hash = f.geom_hash AND s.props_hash = f.props_hash))::int`

// stagedPayload reads back the geometry and properties of the snapshot row d
// (page, ordinal) from staging: one primary-key lookup, done only for rows
// that need them.
const stagedPayload = `SELECT sf.srid, sf.geom_ewkb, sf.geom_broken, sf.properties, sf.invalid_feature FROM staged_features sf
		WHERE sf.poll_id = $1 AND sf.page = d.page AND sf.ordinal = d.ordinal`

// applyUpsert turns an added id that exists into an update (every written
// row of a table that already holds the feed is added or modified).
const applyUpsert = `ON CONFLICT (jurisdiction, feed, feature_id) DO UPDATE SET
		geom = excluded.geom, properties = excluded.properties, geom_hash = excluded.geom_hash,
		props_hash = excluded.props_hash, content_hash = excluded.content_hash,
		changed_at = CASE WHEN f.geom_hash IS NULL AND f.props_hash = excluded.props_hash THEN f.changed_at ELSE excluded.changed_at END,
		poll_id = CASE WHEN f.geom_hash IS NULL AND f.props_hash = excluded.props_hash THEN f.poll_id ELSE excluded.poll_id END`

// applyStatement is the apply statement for the feed's table t: applySQL,
// or firstLoadSQL when t is new.
func applyStatement(t feedTable, firstLoad bool) string {
	sql := applySQL
	if firstLoad {
		sql = firstLoadSQL
	}
	return strings.ReplaceAll(sql, "{{table}}", t.ident())
}

// FailPoll records the poll as failed with pollErr, counts a failure for the
// feed and discards what the poll staged; the feed's features are untouched.
// Callers on their way out should pass a context that survives their own
// cancellation (context.WithoutCancel), or the failure goes unrecorded.
func (s *Store) FailPoll(ctx context.Context, pollID int64, feed feeds.FeedInfo, pollErr error) error {
	msg := errorText(pollErr)
	// Retried across a lost connection: the poll often failed because
	// PostgreSQL went away, and a poll left running would stay so.
	err := retryOnConnLoss(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `
			UPDATE polls SET status = 'failed', finished_at = now(), error = $2 WHERE id = $1`,
				pollID, msg); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `
			UPDATE feed_status SET last_error = $3, last_error_at = now(),
				consecutive_failures = consecutive_failures + 1,
				last_poll_id = GREATEST(last_poll_id, $4)
			WHERE jurisdiction = $1 AND feed = $2`,
				feed.Jurisdiction, feed.Feed, msg, pollID); err != nil {
				return err
			}
			return deleteStaging(ctx, tx, pollID)
		})
	})
	if err != nil {
		return fmt.Errorf("postgis: fail poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}

// RecordRefused records that an open circuit breaker refused the poll: the
// poll ends as 'refused' with retryAfter, and the feed counts a failure and
// shows retry_after (feed_freshness status 'parked' until then). Unlike
// FailPoll it keeps what the poll staged, so a later resume can continue from
// its last staged page.
func (s *Store) RecordRefused(ctx context.Context, feed feeds.FeedInfo, pollID int64, retryAfter time.Time, refusal error) error {
	if err := s.endPollKeepingStaging(ctx, feed, pollID, "refused", &retryAfter, refusal); err != nil {
		return fmt.Errorf("postgis: record refused poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}

// endPollKeepingStaging ends a running poll with status and cause, counts a
// failure for the feed and sets its retry_after (nil: none), and keeps the
// poll's staged pages for a resume.
func (s *Store) endPollKeepingStaging(ctx context.Context, feed feeds.FeedInfo, pollID int64, status string, retryAfter *time.Time, cause error) error {
	msg := errorText(cause)
	return retryOnConnLoss(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `
			UPDATE polls SET status = $4, finished_at = now(), error = $2, retry_after = $3
			WHERE id = $1`, pollID, msg, retryAfter, status); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
			UPDATE feed_status SET last_error = $3, last_error_at = now(), retry_after = $4,
				consecutive_failures = consecutive_failures + 1,
				last_poll_id = GREATEST(last_poll_id, $5)
			WHERE jurisdiction = $1 AND feed = $2`,
				feed.Jurisdiction, feed.Feed, msg, retryAfter, pollID)
			return err
		})
	})
}

// lockRunningPoll locks the poll's row and checks that it is running and
// belongs to feed, so a poll is finished exactly once.
func lockRunningPoll(ctx context.Context, tx pgx.Tx, pollID int64, feed feeds.FeedInfo) error {
	var status, jur, name string
	err := tx.QueryRow(ctx, `SELECT status, jurisdiction, feed FROM polls WHERE id = $1 FOR UPDATE`, pollID).
		Scan(&status, &jur, &name)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: no poll %d", ErrPollNotRunning, pollID)
	case err != nil:
		return err
	case jur != feed.Jurisdiction || name != feed.Feed:
		return fmt.Errorf("poll %d belongs to %s/%s", pollID, jur, name)
	case status != "running":
		return fmt.Errorf("%w: poll %d is %s", ErrPollNotRunning, pollID, status)
	}
	return nil
}

func deleteStaging(ctx context.Context, tx pgx.Tx, pollID int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM staged_features WHERE poll_id = $1`, pollID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM staged_pages WHERE poll_id = $1`, pollID)
	return err
}

// errorText is err's message as stored: at most maxErrorLen bytes (and an
// ellipsis), and text PostgreSQL can hold, so that recording a failure
// never fails for the failure's own message.
func errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	// Redacted before the cut: a cut URL would no longer be recognised.
	return boundText(redact.Error(err), maxErrorLen)
}

// quoteInput quotes a value from the source for a message, cut to
// maxQuotedLen bytes.
func quoteInput(s string) string {
	return strconv.Quote(boundText(s, maxQuotedLen))
}

// boundText returns s cut to at most limit bytes on a rune boundary (with
// "…" appended when cut), as valid UTF-8 without NUL: invalid bytes and NUL
// become U+FFFD, as in features (repairText). Cut before repairing, so a
// huge message is not copied whole, and after, as a repair lengthens it.
func boundText(s string, limit int) string {
	cut := false
	for range 2 {
		if len(s) > limit {
			cut = true
			n := limit
			// A rune starts at most UTFMax-1 bytes back, unless the
			// bytes are not UTF-8 at all (repairText replaces them).
			for n > 0 && n > limit-utf8.UTFMax && !utf8.RuneStart(s[n]) {
				n--
			}
			s = s[:n]
		}
		s, _ = repairText(s, 0)
	}
	if cut {
		s += "…"
	}
	return s
}
