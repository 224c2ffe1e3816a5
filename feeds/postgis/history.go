package postgis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Feature history (migration 26, docs/querying.md): the apply that
// modifies or removes a feature keeps the version it supersedes in
// feature_history (OneCopyDiff, OneCopyDelta), with the polls and times it
// was valid from and to; the current version is the feature's row in the
// feed's table. ingestd_layer_as_of and ingestd_feature_history read them
// back; the daemon prunes by each feed's retention (HistoryPruner).
//
// A version's times are its apply's now(), the start of the apply's
// transaction. For the layer as of a time to be exact, a feed's applies
// must take increasing times: an apply whose transaction began before the
// feed's last apply committed (it waited for the feed's lock meanwhile)
// starts over in a new transaction (errApplyTooEarly).

// errApplyTooEarly says an apply's transaction began before the feed's
// last change was written: its now() would date its versions before that
// change's. The apply is run again in a new transaction.
var errApplyTooEarly = errors.New("postgis: apply began before the feed's last change committed")

// applyAttempts bounds the runs of an apply that keeps beginning too early
// (another apply of the feed committing each time in between).
const applyAttempts = 3

// inApplyTx runs fn in a transaction, again in a new one when it ends with
// errApplyTooEarly.
func (s *Store) inApplyTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for range applyAttempts {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !errors.Is(err, errApplyTooEarly) {
			return err
		}
	}
	return err
}

// readHistory reads whether the feed keeps superseded versions
// (feed_status.history_keep not 0), and fails the run with
// errApplyTooEarly when its time is not after the feed's last change.
func readHistory(ctx context.Context, r *applyRun) error {
	var later bool
	if err := r.tx.QueryRow(ctx, sqlQuery("ApplyHistory"), r.jurisdiction, r.feed).Scan(&r.keepHistory, &later); err != nil {
		return err
	}
	if !later {
		return errApplyTooEarly
	}
	return nil
}

// markHistoryGap moves the feed's history_from to this apply when it
// modified or removed features without keeping their versions (history:
// off): the layer as of an earlier time can no longer be rebuilt.
func markHistoryGap(ctx context.Context, r *applyRun) error {
	if r.keepHistory || r.held != nil || r.out.res.Modified+r.out.res.Removed == 0 {
		return nil
	}
	_, err := r.tx.Exec(ctx, sqlQuery("MarkHistoryGap"), r.jurisdiction, r.feed)
	return err
}

// notifyChanges sends NOTIFY ingestd_changes for an applied snapshot that
// added, modified or removed features; PostgreSQL delivers it when the
// apply commits, and not at all if it rolls back.
func notifyChanges(ctx context.Context, r *applyRun) error {
	res := r.out.res
	if res.Added+res.Modified+res.Removed == 0 {
		return nil
	}
	_, err := r.tx.Exec(ctx, sqlQuery("NotifyChanges"), r.jurisdiction, r.feed, r.pollID,
		res.Added, res.Modified, res.Removed)
	return err
}

// ChangesChannel is the channel NOTIFY ingestd_changes is sent on after
// each applied snapshot that changed the layer; its payload is a JSON
// object (ChangeNotice).
const ChangesChannel = "ingestd_changes"

// ChangeNotice is the payload of a NOTIFY on ChangesChannel.
type ChangeNotice struct {
	Jurisdiction string    `json:"jurisdiction"`
	Feed         string    `json:"feed"`
	PollID       int64     `json:"poll_id"`
	Added        int       `json:"added"`
	Modified     int       `json:"modified"`
	Removed      int       `json:"removed"`
	AppliedAt    time.Time `json:"applied_at"`
}

// historyPruneBatch is how many versions one prune transaction deletes at
// most: short transactions, so that pruning a busy layer's months of
// history never holds locks or a snapshot for long.
const historyPruneBatch = 10000

// PruneHistory deletes the versions in feature_history that are older than
// their feed's retention as of now (feed_status.history_keep, from
// history: {keep: …}; off deletes them all), in transactions of at most
// historyPruneBatch rows, and returns how many it deleted. Applies only
// insert into feature_history, so neither waits for the other.
func (s *Store) PruneHistory(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		if err := s.pool.QueryRow(ctx, sqlQuery("PruneHistory"), now, historyPruneBatch).Scan(&n); err != nil {
			return total, fmt.Errorf("postgis: prune history: %w", err)
		}
		total += n
		if n < historyPruneBatch {
			return total, nil
		}
	}
}

// HistoryPruner prunes feature_history in the daemon: at start and then
// every interval, on its own connection, beside the polls.
type HistoryPruner struct {
	store    *Store
	interval time.Duration
	cancel   context.CancelFunc
	done     sync.WaitGroup
	// afterPrune, when set (tests), is told each prune's outcome: the event
	// a test waits for instead of polling the table.
	afterPrune func(n int64, err error)
}

// DefaultHistoryPruneInterval is how often the daemon prunes history: the
// retention is counted in days, so an hour late costs an hour's versions.
const DefaultHistoryPruneInterval = time.Hour

// NewHistoryPruner returns a pruner of s's history every interval.
func NewHistoryPruner(s *Store, interval time.Duration) *HistoryPruner {
	return &HistoryPruner{store: s, interval: interval}
}

// Start runs the pruner until Stop. It returns at once: a failed prune is
// logged and tried again at the next interval.
func (p *HistoryPruner) Start(ctx context.Context) error {
	ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			n, err := p.store.PruneHistory(ctx, time.Now())
			if p.afterPrune != nil {
				p.afterPrune(int64(n), err)
			}
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				p.store.logger.ErrorContext(ctx, "history prune failed", "err", err)
			case n > 0:
				p.store.logger.InfoContext(ctx, "history pruned", "versions", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the pruner and waits for a prune under way to stop.
func (p *HistoryPruner) Stop() {
	if p.cancel != nil {
		p.cancel()
	}
	p.done.Wait()
}

// ChangesSince calls fn with each change of the feed after poll afterPoll
// (ingestd_changes_since), in poll and id order, as one GeoJSON Feature:
// its id, the new version's geometry (the old one's for a removal), and
// properties {change, poll_id, applied_at, old, new} holding both
// versions' properties (null where there is none, or history was off or
// pruned). Rows are streamed: fn must not keep line.
func (s *Store) ChangesSince(ctx context.Context, jurisdiction, feed string, afterPoll int64, fn func(line []byte) error) error {
	rows, err := s.pool.Query(ctx, sqlQuery("ChangesSince"), jurisdiction, feed, afterPoll)
	if err != nil {
		return fmt.Errorf("postgis: changes of %s/%s since poll %d: %w", jurisdiction, feed, afterPoll, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.RawValues()[0]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgis: changes of %s/%s since poll %d: %w", jurisdiction, feed, afterPoll, err)
	}
	return nil
}
