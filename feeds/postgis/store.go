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
// ingestd renders itself as the page is staged (internal/jsonbtext) so that
// PostgreSQL parses properties only for the features it writes. Reordered keys,
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
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/scrubrows"
	"github.com/ingestd/ingestd/redact"
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
	// bulkIndexMin: from this many staged features an apply truncates
	// the poll's staging instead of deleting its rows.
	bulkIndexMin int64
	// smallSnapshot: up to this many staged features, an apply first
	// checks with a statement of its own whether anything changed.
	smallSnapshot int64
	// largeUnchangedCheck: above smallSnapshot, an apply first checks
	// with OneCopyUnchangedLarge (sql/onecopy.sql) whether anything changed.
	largeUnchangedCheck bool
	// How many times it ran, and found the snapshot unchanged (tests).
	largeChecks, largeUnchanged atomic.Int64
	// How many first loads ran, and how many times one was loaded again
	// without what failed (a plain cast, a repeated id, a transform) (tests).
	bulkLoads, bulkFallbacks atomic.Int64
	// loadHook, unless nil (tests), is called in the middle of a first
	// load's transaction (atLoadStep), where a crash must leave nothing.
	loadHook func(ctx context.Context, tx pgx.Tx, step string) error
	// pageIDs: up to this many distinct ids per page, StagePage counts
	// them in memory (defaultPageIDs).
	pageIDs int
	// owner names this process (host:pid) in the polls it begins or
	// resumes, so that another instance can tell a poll a dead process
	// left running from one in flight.
	owner string
	// secrets are scrubbed by value from every error text and next link
	// the store writes (nil: none are known).
	secrets *redact.Secrets
	// reserved, when set, carries the heartbeat and the ends of polls
	// (WithReservedPool, reserve.go).
	reserved *pgxpool.Pool
	// citus: whether the database is a Citus coordinator (citus*:
	// unknown until the first apply that needs to know asks; onCitus).
	citus atomic.Int32
}

var _ feeds.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithOwner records owner (the instance's host:pid, as the feed manager
// names its claims) on the polls the store begins or resumes. Without it
// polls have no owner, and only their age tells that one was abandoned.
func WithOwner(owner string) Option {
	return func(s *Store) { s.owner = owner }
}

// WithSecrets scrubs secrets (the configuration's credentials, a set the
// caller keeps up to date) by value from every error text and next link
// the store writes: polls.error, feed_status.last_error,
// staged_pages.next_link.
func WithSecrets(secrets *redact.Secrets) Option {
	return func(s *Store) { s.secrets = secrets }
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
		smallSnapshot: defaultSmallSnapshot, largeUnchangedCheck: true,
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
	interval, keep := make([]int64, n), make([]int64, n)
	schemas, names := make([]string, n), make([]string, n)
	for i, f := range infos {
		jur[i], feed[i], kind[i], url[i], origin[i] = f.Jurisdiction, f.Feed, f.Kind, s.secrets.URL(f.URL), f.Origin
		schemas[i], names[i] = f.LayerSchema, f.LayerName
		interval[i], keep[i] = f.ExpectedInterval.Microseconds(), f.History.KeepMicros()
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sqlQuery("RegisterFeeds"), jur, feed, kind, url, origin, interval, keep, schemas, names)
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
	_, err := s.pool.Exec(ctx, sqlQuery("RemoveFeeds"), jur, feed)
	if err != nil {
		return fmt.Errorf("postgis: remove feeds: %w", err)
	}
	return nil
}

// BeginPoll records a running poll of feed and its start as the feed's last
// attempt, and returns the poll's id. A feed not registered yet gets its
// feed_status row here. It refuses (feeds.ErrPollInProgress) when another
// instance than this store's owner holds the feed's claim or has a poll of
// it running.
func (s *Store) BeginPoll(ctx context.Context, feed feeds.FeedInfo) (int64, error) {
	var id int64
	var stagingSchema string
	var staged bool
	err := s.pool.QueryRow(ctx, sqlQuery("BeginPoll"),
		feed.Jurisdiction, feed.Feed, feed.Kind, s.secrets.URL(feed.URL), feed.Origin, feed.ExpectedInterval.Microseconds(), s.owner,
		feed.History.KeepMicros(),
	).Scan(&id, &stagingSchema, &staged)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: another instance holds the claim of %s/%s or polls it (this instance's claim had ended while the poll waited for its turn)",
			feeds.ErrPollInProgress, feed.Jurisdiction, feed.Feed)
	}
	if err != nil {
		return 0, fmt.Errorf("postgis: begin poll of %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
	}
	if !staged {
		// The jurisdiction's first poll: its schema and staging table,
		// before its first page. A poll that cannot stage fails now.
		if err := ensureJurisdictionTables(ctx, s.pool, stagingSchema); err != nil {
			err = fmt.Errorf("postgis: begin poll of %s/%s: %w", feed.Jurisdiction, feed.Feed, err)
			if ferr := s.FailPoll(ctx, id, feed, err); ferr != nil {
				return 0, errors.Join(err, ferr)
			}
			return 0, err
		}
	}
	return id, nil
}

// FailPoll records the poll as failed with pollErr, counts a failure for the
// feed and discards what the poll staged; the feed's features are untouched.
// Callers on their way out should pass a context that survives their own
// cancellation (context.WithoutCancel), or the failure goes unrecorded.
func (s *Store) FailPoll(ctx context.Context, pollID int64, feed feeds.FeedInfo, pollErr error) error {
	msg := s.errorText(pollErr)
	// Retried across a lost connection: the poll often failed because
	// PostgreSQL went away, and a poll left running would stay so.
	err := retryOnConnLoss(ctx, func() error {
		return pgx.BeginFunc(ctx, s.bookkeeping(), func(tx pgx.Tx) error {
			stx, err := lockRunningPoll(ctx, tx, pollID, feed)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlQuery("FailPoll"), pollID, msg); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlQuery("FeedFailed"), feed.Jurisdiction, feed.Feed, msg, pollID); err != nil {
				return err
			}
			if stx == nil {
				return nil // nothing was staged: the jurisdiction has no staging table
			}
			return deleteStaging(ctx, stx, pollID)
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
	if err := s.endPollKeepingStaging(ctx, feed, pollID, feeds.PollRefused, &retryAfter, refusal); err != nil {
		return fmt.Errorf("postgis: record refused poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return nil
}

// endPollKeepingStaging ends a running poll with status and cause, counts a
// failure for the feed and sets its retry_after (nil: none), and keeps the
// poll's staged pages for a resume.
func (s *Store) endPollKeepingStaging(ctx context.Context, feed feeds.FeedInfo, pollID int64, status feeds.PollStatus, retryAfter *time.Time, cause error) error {
	msg := s.errorText(cause)
	return retryOnConnLoss(ctx, func() error {
		return pgx.BeginFunc(ctx, s.bookkeeping(), func(tx pgx.Tx) error {
			if _, err := lockRunningPoll(ctx, tx, pollID, feed); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlQuery("EndPollKeepingStaging"), pollID, msg, retryAfter, string(status)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, sqlQuery("FeedFailedUntil"), feed.Jurisdiction, feed.Feed, msg, retryAfter, pollID)
			return err
		})
	})
}

// lockRunningPoll locks the poll's row and checks that it is running and
// belongs to feed, so a poll is finished exactly once. It returns tx
// naming the poll's staging table (stagedTx), nil when the poll's
// jurisdiction has none (nothing of it can be staged).
func lockRunningPoll(ctx context.Context, tx pgx.Tx, pollID int64, feed feeds.FeedInfo) (pgx.Tx, error) {
	var status feeds.PollStatus
	var jur, name, stagingSchema string
	var staged bool
	err := tx.QueryRow(ctx, sqlQuery("LockPoll"), pollID).Scan(&status, &jur, &name, &stagingSchema, &staged)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: no poll %d", ErrPollNotRunning, pollID)
	case err != nil:
		return nil, err
	case jur != feed.Jurisdiction || name != feed.Feed:
		return nil, fmt.Errorf("poll %d belongs to %s/%s", pollID, jur, name)
	case status != feeds.PollRunning:
		return nil, fmt.Errorf("%w: poll %d is %s", ErrPollNotRunning, pollID, status)
	case !staged:
		return nil, nil
	}
	return stagedTx{Tx: tx, pollID: pollID, table: stagedTable(stagingSchema)}, nil
}

// deleteStaging deletes what poll pollID staged.
func deleteStaging(ctx context.Context, tx pgx.Tx, pollID int64) error {
	tx, err := withStaging(ctx, tx, pollID)
	if err != nil {
		return err
	}
	for _, q := range []string{"DeleteStagedFeatures", "DeleteStagedPages", "DeleteStagedDelta"} {
		if _, err := tx.Exec(ctx, sqlQuery(q), pollID); err != nil {
			return err
		}
	}
	return nil
}

// truncateStaging deletes a large poll's staging as deleteStaging does,
// but when no other poll has features staged it truncates staged_features
// instead: deleting a whole layer's rows is a noticeable part of a first
// load or of a refresh that fetched the whole layer, and leaves as many
// dead rows for vacuum. TRUNCATE needs the table to itself until the apply commits, so
// it is taken only if no session uses staging now (LOCK … NOWAIT; any
// other poll staging or applying holds a lock on it) and, under that
// lock, no other poll's rows are left; otherwise the lock is given back
// with its savepoint and the rows are deleted.
func truncateStaging(ctx context.Context, tx pgx.Tx, pollID int64) error {
	tx, err := withStaging(ctx, tx, pollID)
	if err != nil {
		return err
	}
	alone := false
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		if _, err := sp.Exec(ctx, sqlQuery("LockStagingAlone")); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
				return errStagingShared
			}
			return err
		}
		var others bool
		if err := sp.QueryRow(ctx, sqlQuery("OthersStaged"), pollID).Scan(&others); err != nil {
			return err
		}
		if others {
			return errStagingShared
		}
		alone = true
		_, err := sp.Exec(ctx, sqlQuery("TruncateStagedFeatures"))
		return err
	})
	if err != nil && !errors.Is(err, errStagingShared) {
		return err
	}
	if alone {
		// The pages and the delta record: a few rows.
		for _, q := range []string{"DeleteStagedPages", "DeleteStagedDelta"} {
			if _, err := tx.Exec(ctx, sqlQuery(q), pollID); err != nil {
				return err
			}
		}
		return nil
	}
	return deleteStaging(ctx, tx, pollID)
}

// errStagingShared rolls truncateStaging's savepoint back (and with it its
// lock): another poll uses staging.
var errStagingShared = errors.New("postgis: staging is shared")

// errorText is err's message as stored: redacted (every URL, and every
// secret by value), at most maxErrorLen bytes (and an ellipsis), and text
// PostgreSQL can hold, so that recording a failure never fails for the
// failure's own message.
func (s *Store) errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	// Redacted before the cut: a cut URL or secret would no longer be
	// recognised.
	return boundText(s.secrets.Error(err), maxErrorLen)
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

// ScrubSecrets replaces every secret of secrets, in any of its spellings,
// by REDACTED in the text the feeds' tables hold (feed_status.url,
// last_error and held_reason, staged_pages.next_link, polls.url and
// error), and returns how many rows it changed: what versions that did
// not scrub by value stored. The polls table grows with every poll, so
// only the polls newer than the last scrub's are read, unless all is set
// (`ingestd scrub-secrets`); the others are read whole.
func (s *Store) ScrubSecrets(ctx context.Context, secrets *redact.Secrets, all bool) (int64, error) {
	if secrets.Len() == 0 {
		return 0, nil
	}
	var total int64
	for _, rw := range [][2]string{
		{sqlQuery("ScrubReadFeedStatus"), sqlQuery("ScrubWriteFeedStatus")},
		{sqlQuery("ScrubReadPages"), sqlQuery("ScrubWritePages")},
	} {
		n, err := scrubrows.Scrub(ctx, s.pool, secrets, rw[0], rw[1])
		total += n
		if err != nil {
			return total, fmt.Errorf("postgis: scrub stored secrets: %w", err)
		}
	}
	var from, through int64
	if err := s.pool.QueryRow(ctx, sqlQuery("ScrubPollsRange"), all).Scan(&from, &through); err != nil {
		return total, fmt.Errorf("postgis: scrub stored secrets: %w", err)
	}
	n, err := scrubrows.Scrub(ctx, s.pool, secrets, sqlQuery("ScrubReadPolls"), sqlQuery("ScrubWritePolls"), from, through)
	total += n
	if err == nil {
		_, err = s.pool.Exec(ctx, sqlQuery("ScrubPollsDone"), through)
	}
	if err != nil {
		return total, fmt.Errorf("postgis: scrub stored secrets: %w", err)
	}
	return total, nil
}
