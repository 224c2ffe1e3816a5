package deadletter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/scrubrows"
	"github.com/ingestd/ingestd/redact"
)

// Queue reads and writes the dead_letter table. It is safe for concurrent
// use; the schema comes from package migrations.
type Queue struct {
	pool *pgxpool.Pool
	sql  queueSQL
	// secrets are scrubbed by value from the texts the queue writes (nil:
	// none are known).
	secrets *redact.Secrets
}

// QueueOption configures a Queue.
type QueueOption func(*Queue)

// QueueSecrets scrubs secrets (the configuration's credentials, a set the
// caller keeps up to date) by value from the error texts and URLs the
// queue writes (dead_letter.last_error, url).
func QueueSecrets(secrets *redact.Secrets) QueueOption {
	return func(q *Queue) { q.secrets = secrets }
}

// NewQueue returns a Queue on pool.
func NewQueue(pool *pgxpool.Pool, opts ...QueueOption) *Queue {
	q := &Queue{pool: pool, sql: loadQueueSQL()}
	for _, o := range opts {
		o(q)
	}
	return q
}

// scanLetter reads a row of the letter_columns block (sql/queue.sql).
func scanLetter(row pgx.Row) (*Letter, error) {
	var l Letter
	var lease, finished *time.Time
	err := row.Scan(&l.ID, &l.Jurisdiction, &l.Feed, &l.URL, &l.Origin, &l.Reason, &l.RetryAfter, &l.Attempts,
		&l.Status, &l.LastError, &l.Checkpoint.PollID, &l.Checkpoint.Page, &l.Checkpoint.At, &l.ClaimedBy,
		&lease, &l.CreatedAt, &l.UpdatedAt, &finished)
	if err != nil {
		return nil, err
	}
	if lease != nil {
		l.LeaseUntil = *lease
	}
	if finished != nil {
		l.FinishedAt = *finished
	}
	return &l, nil
}

func collectLetters(rows pgx.Rows) ([]*Letter, error) {
	defer rows.Close()
	var out []*Letter
	for rows.Next() {
		l, err := scanLetter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Park records p as the feed's pending dead letter and returns its id. A
// feed that already has a pending row gets that row updated (attempts are
// kept); one whose row is being replayed gets ErrAlreadyOpen.
func (q *Queue) Park(ctx context.Context, p Parking) (int64, error) {
	var id int64
	err := q.pool.QueryRow(ctx, q.sql.Get("park"),
		p.Jurisdiction, p.Feed, q.secrets.URL(p.URL), p.Origin, string(p.Reason), p.RetryAfter, q.errorText(p.Err),
		p.Checkpoint.PollID, p.Checkpoint.Page, nullTime(p.Checkpoint.At)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s/%s", ErrAlreadyOpen, p.Jurisdiction, p.Feed)
	}
	if err != nil {
		return 0, fmt.Errorf("deadletter: park %s/%s: %w", p.Jurisdiction, p.Feed, err)
	}
	return id, nil
}

// Open returns the feed's open (pending or replaying) dead letter, or nil.
func (q *Queue) Open(ctx context.Context, jurisdiction, feed string) (*Letter, error) {
	l, err := scanLetter(q.pool.QueryRow(ctx, q.sql.Get("open"), jurisdiction, feed))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deadletter: open letter of %s/%s: %w", jurisdiction, feed, err)
	}
	return l, nil
}

// Get returns the dead letter id, or an error wrapping ErrNotFound.
func (q *Queue) Get(ctx context.Context, id int64) (*Letter, error) {
	l, err := scanLetter(q.pool.QueryRow(ctx, q.sql.Get("get"), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("deadletter: get %d: %w", id, err)
	}
	return l, nil
}

// Filter selects dead letters; zero fields select everything.
type Filter struct {
	IDs    []int64
	Status Status
	// Feed is "jurisdiction/feed".
	Feed  string
	Limit int
}

func (f Filter) where(args *[]any) string {
	var conds []string
	add := func(cond string, v any) {
		*args = append(*args, v)
		conds = append(conds, fmt.Sprintf(cond, len(*args)))
	}
	if len(f.IDs) > 0 {
		add("id = ANY($%d)", f.IDs)
	}
	if f.Status != "" {
		add("status = $%d", string(f.Status))
	}
	if f.Feed != "" {
		add("jurisdiction || '/' || feed = $%d", f.Feed)
	}
	if len(conds) == 0 {
		return "true"
	}
	return strings.Join(conds, " AND ")
}

// List returns the dead letters f selects, newest first.
func (q *Queue) List(ctx context.Context, f Filter) ([]*Letter, error) {
	var args []any
	sql := q.sql.withFilter("list", f.where(&args))
	if f.Limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := q.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("deadletter: list: %w", err)
	}
	out, err := collectLetters(rows)
	if err != nil {
		return nil, fmt.Errorf("deadletter: list: %w", err)
	}
	return out, nil
}

// Purge deletes the rows in one of statuses (done or abandoned) that
// finished more than olderThan ago, and returns how many it deleted. Open
// rows are never purged: they are a feed's position.
func (q *Queue) Purge(ctx context.Context, statuses []Status, olderThan time.Duration) (int64, error) {
	names := make([]string, 0, len(statuses))
	for _, s := range statuses {
		if s != StatusDone && s != StatusAbandoned {
			return 0, fmt.Errorf("deadletter: purge: only done and abandoned rows may be purged, not %s", s)
		}
		names = append(names, string(s))
	}
	tag, err := q.pool.Exec(ctx, q.sql.Get("purge"), names, olderThan.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("deadletter: purge: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Revive makes an abandoned row pending again and due now, so that an
// operator can retry it after fixing the cause. Its attempts start over.
func (q *Queue) Revive(ctx context.Context, id int64) error {
	tag, err := q.pool.Exec(ctx, q.sql.Get("revive"), id)
	if err != nil {
		return fmt.Errorf("deadletter: revive %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %d is not abandoned", ErrNotFound, id)
	}
	return nil
}

// reviveNamed revives row id if it was abandoned (see ReplayNow); a row in
// any other status is left as it is. It returns ErrNotFound when id names no
// row.
func (q *Queue) reviveNamed(ctx context.Context, id int64) error {
	l, err := q.Get(ctx, id)
	if err != nil {
		return err
	}
	if l.Status != StatusAbandoned {
		return nil
	}
	return q.Revive(ctx, id)
}

// Expedite brings forward the pending rows of origin that its breaker
// refused (reason circuit_open): they become due at notBefore, or now when it
// is zero or past, and it returns how many moved. An operator who lifts an
// open override calls it: the rows it refused wait for the override's end
// (or open_max), which no longer holds anything back. Rows already due
// sooner keep their time.
func (q *Queue) Expedite(ctx context.Context, origin string, notBefore time.Time) (int64, error) {
	tag, err := q.pool.Exec(ctx, q.sql.Get("expedite"), origin, nullTime(notBefore), string(ReasonCircuitOpen))
	if err != nil {
		return 0, fmt.Errorf("deadletter: expedite %s: %w", origin, err)
	}
	return tag.RowsAffected(), nil
}

// Postpone makes the row due no sooner than d from now, without counting an
// attempt. A replay that hands a claimed row back untouched (its feed is not
// in that instance's configuration) calls it before returning ErrNotNow, so
// that the row goes to an instance that knows the feed instead of coming
// back to this one at its next tick.
func (q *Queue) Postpone(ctx context.Context, id int64, d time.Duration) error {
	_, err := q.pool.Exec(ctx, q.sql.Get("postpone"), id, d.Microseconds())
	if err != nil {
		return fmt.Errorf("deadletter: postpone %d: %w", id, err)
	}
	return nil
}

// claimParams selects the rows a claim takes.
type claimParams struct {
	by    string
	limit int
	lease time.Duration
	// now ignores retry_after (an operator's `deadletter replay`).
	now    bool
	filter Filter
	// busyOrigins are replaying in this process: none of their rows is
	// claimed, so that one origin's replays run one at a time.
	busyOrigins []string
	// skipIDs are not claimed (rows this replayer already had in this run or
	// since its last tick: a row released or re-parked due at once waits).
	skipIDs []int64
}

// claim marks up to p.limit due pending rows as replaying by p.by, at most
// one per origin and none of p.busyOrigins, skipping rows another
// transaction holds, and returns them oldest retry_after first. The row of an
// origin is its oldest due one; if another instance holds that row, the
// origin gets none this time.
func (q *Queue) claim(ctx context.Context, p claimParams) ([]*Letter, error) {
	busy, skip := p.busyOrigins, p.skipIDs
	if busy == nil {
		busy = []string{} // NULL would make <> ALL false for every row
	}
	if skip == nil {
		skip = []int64{}
	}
	args := []any{p.limit, p.by, p.lease.Microseconds(), busy, skip}
	cond := p.filter.where(&args)
	if !p.now {
		cond += " AND retry_after <= now()"
	}
	// sql/queue.sql says how the claim picks and locks.
	rows, err := q.pool.Query(ctx, q.sql.withFilter("claim", cond), args...)
	if err != nil {
		return nil, fmt.Errorf("deadletter: claim: %w", err)
	}
	out, err := collectLetters(rows)
	if err != nil {
		return nil, fmt.Errorf("deadletter: claim: %w", err)
	}
	// UPDATE … RETURNING does not keep the CTE's order.
	sortByRetryAfter(out)
	return out, nil
}

// requeueExpired returns rows whose lease expired (their instance died or
// lost the database mid-replay) to pending, due at once.
func (q *Queue) requeueExpired(ctx context.Context) ([]*Letter, error) {
	rows, err := q.pool.Query(ctx, q.sql.Get("requeue_expired"))
	if err != nil {
		return nil, fmt.Errorf("deadletter: requeue expired leases: %w", err)
	}
	out, err := collectLetters(rows)
	if err != nil {
		return nil, fmt.Errorf("deadletter: requeue expired leases: %w", err)
	}
	return out, nil
}

// renew extends the lease of row id held by by. It reports false when by
// no longer holds the row: its lease expired and another instance put it
// back to pending or took it.
func (q *Queue) renew(ctx context.Context, id int64, by string, lease time.Duration) (bool, error) {
	tag, err := q.pool.Exec(ctx, q.sql.Get("renew"), id, by, lease.Microseconds())
	if err != nil {
		return false, fmt.Errorf("deadletter: renew lease of %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// holder returns who holds row id now and in which status, for the message
// that says a lease was lost.
func (q *Queue) holder(ctx context.Context, id int64) (string, Status, error) {
	var by string
	var st Status
	err := q.pool.QueryRow(ctx, q.sql.Get("holder"), id).Scan(&by, &st)
	if err != nil {
		return "", "", fmt.Errorf("deadletter: holder of %d: %w", id, err)
	}
	return by, st, nil
}

// errLeaseLost is returned by the finishing writes when the row is no longer
// replaying under this claimant: its lease expired and another instance
// took it, so this instance's outcome must not overwrite that one's.
var errLeaseLost = errors.New("deadletter: lease lost")

// markDone records a successful replay.
func (q *Queue) markDone(ctx context.Context, id int64, by string) error {
	return q.finish(ctx, q.sql.Get("mark_done"), id, by)
}

// release returns a claimed row to pending as it was.
func (q *Queue) release(ctx context.Context, id int64, by string) error {
	return q.finish(ctx, q.sql.Get("release"), id, by)
}

// abandon gives up on a claimed row.
func (q *Queue) abandon(ctx context.Context, id int64, by string, cause error) error {
	return q.finish(ctx, q.sql.Get("abandon"), id, by, q.errorText(cause))
}

// repark makes a claimed row pending again with p's retry_after and
// checkpoint and one more attempt, or abandoned if that attempt is the
// maxAttempts-th. It returns the row's new status.
func (q *Queue) repark(ctx context.Context, id int64, by string, p Parking, maxAttempts int) (Status, int, error) {
	var st Status
	var attempts int
	err := q.pool.QueryRow(ctx, q.sql.Get("repark"),
		id, by, maxAttempts, q.secrets.URL(p.URL), p.Origin, string(p.Reason), p.RetryAfter, q.errorText(p.Err),
		p.Checkpoint.PollID, p.Checkpoint.Page, nullTime(p.Checkpoint.At)).Scan(&st, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, errLeaseLost
	}
	if err != nil {
		return "", 0, fmt.Errorf("deadletter: re-park %d: %w", id, err)
	}
	return st, attempts, nil
}

// finish runs one of the finishing writes (sql/queue.sql: mark_done,
// release, abandon) on row id held by by.
func (q *Queue) finish(ctx context.Context, sql string, id int64, by string, extra ...any) error {
	args := append([]any{id, by}, extra...)
	tag, err := q.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("deadletter: update %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errLeaseLost
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func sortByRetryAfter(ls []*Letter) {
	slices.SortFunc(ls, func(a, b *Letter) int {
		if c := a.RetryAfter.Compare(b.RetryAfter); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// ScrubSecrets replaces every secret of secrets, in any of its spellings,
// by REDACTED in the urls and errors dead_letter holds, and returns how
// many rows it changed: what versions that did not scrub by value stored.
func (q *Queue) ScrubSecrets(ctx context.Context, secrets *redact.Secrets) (int64, error) {
	n, err := scrubrows.Scrub(ctx, q.pool, secrets, q.sql.Get("scrub_read"), q.sql.Get("scrub_write"))
	if err != nil {
		return n, fmt.Errorf("deadletter: scrub stored secrets: %w", err)
	}
	return n, nil
}
