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
)

// Queue reads and writes the dead_letter table. It is safe for concurrent
// use; the schema comes from package migrations.
type Queue struct {
	pool *pgxpool.Pool
}

// NewQueue returns a Queue on pool.
func NewQueue(pool *pgxpool.Pool) *Queue { return &Queue{pool: pool} }

// letterColumns are scanned by scanLetter, in this order.
const letterColumns = `id, jurisdiction, feed, url, origin, reason, retry_after, attempts, status,
	coalesce(last_error, ''), coalesce(poll_id, 0), next_page, checkpoint_at, coalesce(claimed_by, ''),
	lease_until, created_at, updated_at, finished_at`

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
	err := q.pool.QueryRow(ctx, `
		INSERT INTO dead_letter AS d (jurisdiction, feed, url, origin, reason, retry_after, last_error,
			poll_id, next_page, checkpoint_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, 0), $9, coalesce($10, now()))
		ON CONFLICT (jurisdiction, feed) WHERE status IN ('pending', 'replaying') DO UPDATE SET
			url = excluded.url, origin = excluded.origin, reason = excluded.reason,
			retry_after = excluded.retry_after, last_error = excluded.last_error,
			poll_id = excluded.poll_id, next_page = excluded.next_page,
			checkpoint_at = excluded.checkpoint_at, updated_at = now()
		WHERE d.status = 'pending'
		RETURNING id`,
		p.Jurisdiction, p.Feed, p.URL, p.Origin, string(p.Reason), p.RetryAfter, errorText(p.Err),
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
	l, err := scanLetter(q.pool.QueryRow(ctx, `SELECT `+letterColumns+` FROM dead_letter
		WHERE jurisdiction = $1 AND feed = $2 AND status IN ('pending', 'replaying')`, jurisdiction, feed))
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
	l, err := scanLetter(q.pool.QueryRow(ctx, `SELECT `+letterColumns+` FROM dead_letter WHERE id = $1`, id))
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
	sql := `SELECT ` + letterColumns + ` FROM dead_letter WHERE ` + f.where(&args) + ` ORDER BY id DESC`
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
	tag, err := q.pool.Exec(ctx, `DELETE FROM dead_letter
		WHERE status = ANY($1) AND finished_at < now() - $2 * interval '1 microsecond'`,
		names, olderThan.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("deadletter: purge: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Revive makes an abandoned row pending again and due now, so that an
// operator can retry it after fixing the cause. Its attempts start over.
func (q *Queue) Revive(ctx context.Context, id int64) error {
	tag, err := q.pool.Exec(ctx, `UPDATE dead_letter SET status = 'pending', attempts = 0,
		retry_after = now(), finished_at = NULL, updated_at = now()
		WHERE id = $1 AND status = 'abandoned'`, id)
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
	tag, err := q.pool.Exec(ctx, `UPDATE dead_letter SET retry_after = greatest(now(), $2::timestamptz), updated_at = now()
		WHERE origin = $1 AND status = 'pending' AND reason = $3 AND retry_after > greatest(now(), $2::timestamptz)`,
		origin, nullTime(notBefore), string(ReasonCircuitOpen))
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
	_, err := q.pool.Exec(ctx, `UPDATE dead_letter
		SET retry_after = greatest(retry_after, now() + $2 * interval '1 microsecond'), updated_at = now()
		WHERE id = $1 AND status IN ('pending', 'replaying')`, id, d.Microseconds())
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
	// DISTINCT ON cannot take FOR UPDATE: pick first, then lock what was
	// picked; the lock re-checks status, so a row another instance claimed
	// meanwhile is not taken twice.
	rows, err := q.pool.Query(ctx, `
		WITH pick AS (
			SELECT id AS pick_id FROM (
				SELECT DISTINCT ON (origin) id, retry_after FROM dead_letter
				WHERE status = 'pending' AND origin <> ALL($4) AND id <> ALL($5) AND `+cond+`
				ORDER BY origin, retry_after, id
			) first_of_origin
			ORDER BY retry_after, id
			LIMIT $1
		), due AS (
			SELECT id AS due_id FROM dead_letter
			WHERE id IN (SELECT pick_id FROM pick) AND status = 'pending'
			FOR UPDATE SKIP LOCKED
		)
		UPDATE dead_letter d SET status = 'replaying', claimed_by = $2,
			lease_until = now() + $3 * interval '1 microsecond', updated_at = now()
		FROM due WHERE d.id = due.due_id
		RETURNING `+letterColumns, args...)
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
	rows, err := q.pool.Query(ctx, `
		WITH expired AS (
			SELECT id AS expired_id, claimed_by AS expired_by FROM dead_letter
			WHERE status = 'replaying' AND lease_until < now()
			FOR UPDATE SKIP LOCKED
		)
		UPDATE dead_letter d SET status = 'pending', lease_until = NULL, updated_at = now(),
			last_error = 'lease of ' || coalesce(expired_by, '?') || ' expired during a replay'
		FROM expired WHERE d.id = expired_id
		RETURNING `+letterColumns)
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
	tag, err := q.pool.Exec(ctx, `
		UPDATE dead_letter SET lease_until = now() + $3 * interval '1 microsecond'
		WHERE id = $1 AND status = 'replaying' AND claimed_by = $2`, id, by, lease.Microseconds())
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
	err := q.pool.QueryRow(ctx, `SELECT coalesce(claimed_by, ''), status FROM dead_letter WHERE id = $1`, id).Scan(&by, &st)
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
	return q.finish(ctx, id, by, `status = 'done', finished_at = now()`)
}

// release returns a claimed row to pending as it was.
func (q *Queue) release(ctx context.Context, id int64, by string) error {
	return q.finish(ctx, id, by, `status = 'pending'`)
}

// abandon gives up on a claimed row.
func (q *Queue) abandon(ctx context.Context, id int64, by string, cause error) error {
	return q.finish(ctx, id, by, `status = 'abandoned', finished_at = now(), attempts = attempts + 1, last_error = $3`, errorText(cause))
}

// repark makes a claimed row pending again with p's retry_after and
// checkpoint and one more attempt, or abandoned if that attempt is the
// maxAttempts-th. It returns the row's new status.
func (q *Queue) repark(ctx context.Context, id int64, by string, p Parking, maxAttempts int) (Status, int, error) {
	var st Status
	var attempts int
	err := q.pool.QueryRow(ctx, `
		UPDATE dead_letter SET
			status = CASE WHEN attempts + 1 >= $3 THEN 'abandoned' ELSE 'pending' END,
			finished_at = CASE WHEN attempts + 1 >= $3 THEN now() END,
			attempts = attempts + 1, url = $4, origin = $5, reason = $6, retry_after = $7,
			last_error = $8, poll_id = nullif($9, 0), next_page = $10, checkpoint_at = coalesce($11, checkpoint_at),
			claimed_by = $2, lease_until = NULL, updated_at = now()
		WHERE id = $1 AND status = 'replaying' AND claimed_by = $2
		RETURNING status, attempts`,
		id, by, maxAttempts, p.URL, p.Origin, string(p.Reason), p.RetryAfter, errorText(p.Err),
		p.Checkpoint.PollID, p.Checkpoint.Page, nullTime(p.Checkpoint.At)).Scan(&st, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, errLeaseLost
	}
	if err != nil {
		return "", 0, fmt.Errorf("deadletter: re-park %d: %w", id, err)
	}
	return st, attempts, nil
}

func (q *Queue) finish(ctx context.Context, id int64, by, set string, extra ...any) error {
	args := append([]any{id, by}, extra...)
	tag, err := q.pool.Exec(ctx, `UPDATE dead_letter SET `+set+`, lease_until = NULL, updated_at = now()
		WHERE id = $1 AND status = 'replaying' AND claimed_by = $2`, args...)
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
