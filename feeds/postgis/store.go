// Package postgis is the feeds.Store that writes polls into PostGIS.
//
// A poll's pages are COPYed into unlogged staging tables as they arrive
// (StagePage) and applied to the features table in one transaction at the end
// (Apply): a poll that does not finish changes nothing a reader sees.
//
// Change detection is by content hash: SHA-256 over the length of the
// geometry's EWKB, the EWKB as the source sent it (before any transform), and
// the properties bytes as the source sent them. A server that reorders the
// keys of a feature's properties between polls therefore reports it modified;
// servers we know of serialise attributes in a stable order.
//
// The schema lives in package migrations.
package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twpayne/go-geom/encoding/ewkb"

	"github.com/ingestd/ingestd/feeds"
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

// maxErrorLen bounds the error text stored per poll: some servers answer with
// whole HTML pages, and the table is for operators, not archives.
const maxErrorLen = 4000

// Store implements feeds.Store on a pgx pool. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

var _ feeds.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

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
	s := &Store{pool: pool, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// RegisterFeeds upserts a feed_status row for each configured feed and marks
// the feeds that left the configuration as configured = false. Their features
// and history stay: removing a feed from the YAML is not a request to delete
// its data.
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
		if _, err := tx.Exec(ctx, `
			INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, configured)
			SELECT j, f, k, u, o, CASE WHEN us > 0 THEN us * interval '1 microsecond' END, true
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS t(j, f, k, u, o, us)
			ON CONFLICT (jurisdiction, feed) DO UPDATE SET
				kind = excluded.kind, url = excluded.url, origin = excluded.origin,
				expected_interval = excluded.expected_interval, configured = true`,
			jur, feed, kind, url, origin, interval); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			UPDATE feed_status SET configured = false
			WHERE configured AND (jurisdiction, feed) NOT IN (
				SELECT * FROM unnest($1::text[], $2::text[]))`, jur, feed)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgis: register feeds: %w", err)
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
			INSERT INTO polls (jurisdiction, feed, url) VALUES ($1, $2, $4)
			RETURNING id, started_at
		), fs AS (
			INSERT INTO feed_status AS s (jurisdiction, feed, kind, url, origin, expected_interval, last_attempt_at, last_poll_id)
			SELECT $1, $2, $3, $4, $5, CASE WHEN $6::bigint > 0 THEN $6 * interval '1 microsecond' END, p.started_at, p.id FROM p
			ON CONFLICT (jurisdiction, feed) DO UPDATE SET
				last_attempt_at = excluded.last_attempt_at,
				last_poll_id = GREATEST(s.last_poll_id, excluded.last_poll_id)
		)
		SELECT id FROM p`,
		feed.Jurisdiction, feed.Feed, feed.Kind, feed.URL, feed.Origin, feed.ExpectedInterval.Microseconds(),
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
// A feature without an ID gets the hex of its content hash, so the same
// feature keeps the same id from poll to poll as long as it does not change.
func (s *Store) StagePage(ctx context.Context, pollID int64, page int, features wfs.FeatureReader) (int, error) {
	src := &copySource{features: features, page: int32(page)}
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
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"staged_features"},
			[]string{"poll_id", "page", "ordinal", "feature_id", "srid", "geom_ewkb", "properties", "content_hash"}, src)
		if err != nil {
			if src.readErr != nil {
				// The reader's error is the cause; pgx's wrapping of it
				// is noise for the caller, who branches on the reader's.
				return src.readErr
			}
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO staged_pages (poll_id, page, features) VALUES ($1, $2, $3)
			ON CONFLICT (poll_id, page) DO UPDATE SET features = excluded.features, staged_at = now()`,
			pollID, page, n)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: stage page %d of poll %d: %w", page, pollID, err)
	}
	return src.n, nil
}

// copySource adapts a FeatureReader to pgx.CopyFromSource, encoding each
// feature as it is read so memory does not grow with the page.
type copySource struct {
	features wfs.FeatureReader
	pollID   int64
	page     int32
	n        int
	row      []any
	readErr  error // the reader's own error, kept apart from encoding errors
	err      error
}

func (c *copySource) Next() bool {
	if c.err != nil {
		return false
	}
	f, err := c.features.Next()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			c.readErr, c.err = err, err
		}
		return false
	}
	row, err := encodeFeature(f)
	if err != nil {
		c.err = fmt.Errorf("feature %d: %w", c.n, err)
		return false
	}
	c.row = append(c.row[:0], c.pollID, c.page, int32(c.n),
		row.id, row.srid, row.ewkb, row.properties, row.hash)
	c.n++
	return true
}

func (c *copySource) Values() ([]any, error) { return c.row, nil }

func (c *copySource) Err() error { return c.err }

// stagedRow is a feature encoded for staging.
type stagedRow struct {
	id         string
	srid       int32
	ewkb       []byte // nil for a null geometry
	properties []byte // nil for no properties
	hash       []byte
}

func encodeFeature(f *wfs.Feature) (stagedRow, error) {
	var r stagedRow
	if f.Geometry != nil {
		b, err := ewkb.Marshal(f.Geometry, binary.LittleEndian)
		if err != nil {
			return r, fmt.Errorf("encode geometry: %w", err)
		}
		r.ewkb = b
		r.srid = int32(f.Geometry.SRID())
	}
	if len(f.Properties) > 0 {
		// Decoders reuse their buffers; the copy outlives this Next.
		r.properties = append([]byte(nil), f.Properties...)
	}
	r.hash = contentHash(r.ewkb, r.properties)
	r.id = f.ID
	if r.id == "" {
		r.id = hex.EncodeToString(r.hash)
	}
	if !utf8.ValidString(r.id) {
		return r, fmt.Errorf("feature id %q is not UTF-8", r.id)
	}
	return r, nil
}

// contentHash is SHA-256 over len(ewkb) as 8 bytes, ewkb and properties. The
// length keeps a geometry's bytes from being read as properties' and back.
func contentHash(ewkb, properties []byte) []byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(ewkb)))
	h.Write(n[:])
	h.Write(ewkb)
	h.Write(properties)
	return h.Sum(nil)
}

// Apply replaces the feed's features with the poll's snapshot in one
// transaction and records the poll as succeeded.
//
// Rows whose content hash did not change are not written at all (no dead
// tuples, no WAL, no index churn for the common case of a layer that barely
// changes); features.last_seen_at is therefore not stored per row but is the
// feed's last_success_at (view features_seen). When the snapshot holds a
// feature id more than once, the last one in page and ordinal order wins and
// the others are counted in polls.duplicate_ids. Geometries in another CRS are
// transformed to EPSG:4326 (SRID 0 is taken as 4326) and forced to 2D.
//
// An empty snapshot removes every feature of the feed: deciding that an empty
// response is suspicious is the poller's call, made before Apply.
func (s *Store) Apply(ctx context.Context, pollID int64, feed feeds.FeedInfo) (feeds.ApplyResult, error) {
	var res feeds.ApplyResult
	var staged, duplicates, pages int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise applies of one feed across instances; the feed's
		// counts would be wrong if two snapshots diffed concurrently.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`,
			ApplyLockClass, feed.Jurisdiction+"/"+feed.Feed); err != nil {
			return err
		}
		if err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
			return err
		}
		// The poll's staged rows were just COPYed and the feed's features
		// may have been written since the last ANALYZE, so the planner
		// estimates both sides at a handful of rows and picks nested loops
		// that compare every staged feature with every current one: minutes
		// for 50k features. Both sides are bulk, so hash joins are right
		// whatever the statistics say.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_nestloop = off`); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, applySQL, pollID, feed.Jurisdiction, feed.Feed).Scan(
			&staged, &res.Features, &res.Added, &res.Modified, &res.Unchanged, &res.Removed, &pages)
		if err != nil {
			return err
		}
		duplicates = staged - res.Features
		if _, err := tx.Exec(ctx, `
			UPDATE polls SET status = 'succeeded', finished_at = now(), pages = $2, features = $3,
				added = $4, modified = $5, removed = $6, unchanged = $7, duplicate_ids = $8
			WHERE id = $1`,
			pollID, pages, res.Features, res.Added, res.Modified, res.Removed, res.Unchanged, duplicates); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE feed_status SET last_success_at = now(), feature_count = $3, consecutive_failures = 0,
				retry_after = NULL, last_poll_id = GREATEST(last_poll_id, $4)
			WHERE jurisdiction = $1 AND feed = $2`,
			feed.Jurisdiction, feed.Feed, res.Features, pollID); err != nil {
			return err
		}
		return deleteStaging(ctx, tx, pollID)
	})
	if err != nil {
		return feeds.ApplyResult{}, fmt.Errorf("postgis: apply poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	s.logger.DebugContext(ctx, "applied snapshot", "poll_id", pollID, "jurisdiction", feed.Jurisdiction,
		"feed", feed.Feed, "features", res.Features, "added", res.Added, "modified", res.Modified,
		"removed", res.Removed, "duplicate_ids", duplicates)
	return res, nil
}

// applySQL diffs the poll's staged snapshot ($1) against the feed's features
// ($2, $3) and writes the difference in one statement. The data-modifying
// CTEs see the same snapshot of features and touch disjoint rows (written:
// ids in the snapshot; removed: ids not in it); PostgreSQL runs each to
// completion even though the final SELECT does not read "written".
const applySQL = `
WITH snapshot AS MATERIALIZED (
	SELECT DISTINCT ON (feature_id) feature_id, srid, geom_ewkb, properties, content_hash
	FROM staged_features
	WHERE poll_id = $1
	ORDER BY feature_id, page DESC, ordinal DESC
), diff AS MATERIALIZED (
	SELECT s.*, f.feature_id IS NOT NULL AS existed, f.content_hash = s.content_hash AS same
	FROM snapshot s
	LEFT JOIN features f ON f.jurisdiction = $2 AND f.feed = $3 AND f.feature_id = s.feature_id
), written AS (
	INSERT INTO features AS f (jurisdiction, feed, feature_id, geom, properties, content_hash,
		first_seen_at, changed_at, poll_id)
	SELECT $2, $3, d.feature_id,
		CASE
			WHEN d.geom_ewkb IS NULL THEN NULL
			WHEN d.srid IN (0, 4326) THEN ST_Force2D(ST_SetSRID(ST_GeomFromEWKB(d.geom_ewkb), 4326))
			ELSE ST_Force2D(ST_Transform(ST_GeomFromEWKB(d.geom_ewkb), 4326))
		END,
		d.properties, d.content_hash, now(), now(), $1
	FROM diff d
	WHERE NOT d.existed OR NOT d.same
	ON CONFLICT (jurisdiction, feed, feature_id) DO UPDATE SET
		geom = excluded.geom, properties = excluded.properties, content_hash = excluded.content_hash,
		changed_at = excluded.changed_at, poll_id = excluded.poll_id
), removed AS (
	DELETE FROM features f
	WHERE f.jurisdiction = $2 AND f.feed = $3
	  AND NOT EXISTS (SELECT 1 FROM staged_features s WHERE s.poll_id = $1 AND s.feature_id = f.feature_id)
	RETURNING 1
)
SELECT
	(SELECT count(*) FROM staged_features WHERE poll_id = $1)::int,
	(SELECT count(*) FROM diff)::int,
	(SELECT count(*) FROM diff WHERE NOT existed)::int,
	(SELECT count(*) FROM diff WHERE existed AND NOT same)::int,
	(SELECT count(*) FROM diff WHERE same)::int,
	(SELECT count(*) FROM removed)::int,
	(SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int`

// FailPoll records the poll as failed with pollErr, counts a failure for the
// feed and discards what the poll staged; the feed's features are untouched.
// Callers on their way out should pass a context that survives their own
// cancellation (context.WithoutCancel), or the failure goes unrecorded.
func (s *Store) FailPoll(ctx context.Context, pollID int64, feed feeds.FeedInfo, pollErr error) error {
	msg := errorText(pollErr)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
	msg := errorText(refusal)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE polls SET status = 'refused', finished_at = now(), error = $2, retry_after = $3
			WHERE id = $1`, pollID, msg, retryAfter); err != nil {
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
	if err != nil {
		return fmt.Errorf("postgis: record refused poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
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

func errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	msg := err.Error()
	if len(msg) > maxErrorLen {
		// Cut on a rune boundary: the column is text and must stay UTF-8.
		cut := maxErrorLen
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
