package statuspage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// FeedStatus is one feed's row of feed_freshness as the page shows it.
type FeedStatus struct {
	Jurisdiction string `db:"jurisdiction"`
	Feed         string `db:"feed"`
	// Status is feed_freshness.status: removed, held, parked, failing,
	// never, stale or fresh.
	Status              string     `db:"status"`
	AgeSeconds          *float64   `db:"age_seconds"`
	IntervalSeconds     *float64   `db:"interval_seconds"`
	FeatureCount        *int64     `db:"feature_count"`
	LastError           string     `db:"last_error"` // redacted
	LastErrorAt         *time.Time `db:"last_error_at"`
	LastSuccessAt       *time.Time `db:"last_success_at"`
	ConsecutiveFailures int        `db:"consecutive_failures"`
	Origin              string     `db:"origin"`
}

// FeedDetail is FeedStatus with what the feed's own page adds.
type FeedDetail struct {
	FeedStatus
	Kind              string     `db:"kind"`
	URL               string     `db:"url"` // redacted
	BreakerState      string     `db:"breaker_state"`
	BreakerOpenUntil  *time.Time `db:"breaker_open_until"`
	BreakerOverride   string     `db:"breaker_override"`
	BreakerOverrideBy string     `db:"breaker_override_by"`
}

// Origin is one row of breaker_state.
type Origin struct {
	Origin           string     `db:"origin"`
	State            string     `db:"state"`
	OpenedAt         *time.Time `db:"opened_at"`
	OpenUntil        *time.Time `db:"open_until"`
	ConsecutiveOpens int        `db:"consecutive_opens"`
	Stuck            bool       `db:"stuck"`
	Override         string     `db:"override"` // none when lapsed
	OverrideUntil    *time.Time `db:"override_until"`
	OverrideReason   string     `db:"override_reason"` // redacted
	OverrideBy       string     `db:"override_by"`
}

// Shown is the state the origin is in for the feeds on it: an operator's
// override in force decides every call, so it wins over the breaker's own
// state (the page showed a green "closed" beside an "open until …").
func (o Origin) Shown() string {
	if o.Override == "open" || o.Override == "closed" {
		return o.Override
	}
	return o.State
}

// Count is a number of rows with one status.
type Count struct {
	Status string
	N      int64
}

// Held is one row of held_snapshots.
type Held struct {
	Jurisdiction     string    `db:"jurisdiction"`
	Feed             string    `db:"feed"`
	PollID           int64     `db:"poll_id"`
	HeldAt           time.Time `db:"held_at"`
	Reason           string    `db:"reason"`
	PreviousFeatures *int64    `db:"previous_features"`
	SnapshotFeatures *int64    `db:"snapshot_features"`
}

// DeadLetter is a feed's open (pending or replaying) dead letter.
type DeadLetter struct {
	ID         int64     `db:"id"`
	Status     string    `db:"status"`
	Reason     string    `db:"reason"`
	RetryAfter time.Time `db:"retry_after"`
	Attempts   int       `db:"attempts"`
	NextPage   int       `db:"next_page"`
	LastError  string    `db:"last_error"` // redacted
	URL        string    `db:"url"`        // redacted
	CreatedAt  time.Time `db:"created_at"`
}

// Poll is one row of polls.
type Poll struct {
	ID              int64     `db:"id"`
	Status          string    `db:"status"`
	StartedAt       time.Time `db:"started_at"`
	DurationSeconds *float64  `db:"duration_seconds"` // nil while running
	Pages           int       `db:"pages"`
	Features        *int64    `db:"features"`
	Added           *int64    `db:"added"`
	Modified        *int64    `db:"modified"`
	Removed         *int64    `db:"removed"`
	Error           string    `db:"error"` // redacted
	// FetchMode is how the poll read its layer (full, edit_date, …; ""
	// before it finished a fetch); Drift what an incremental refresh had
	// got wrong, when a full dump compared it.
	FetchMode string `db:"fetch_mode"`
	Drift     *int64 `db:"drift"`
	// CRS is the CRS a file's layer was read in (kind file; "" for the
	// other kinds) and CRSBy how it was identified (authority, name,
	// parameters, setting).
	CRS   string `db:"crs"`
	CRSBy string `db:"crs_identified_by"`
}

// Overview is what the overview page shows.
type Overview struct {
	Now         time.Time
	Feeds       []FeedStatus
	Statuses    []Count // feeds by status, in feed_freshness's order of precedence
	Origins     []Origin
	DeadLetters []Count
	Held        []Held
}

// FeedPage is what a feed's page shows.
type FeedPage struct {
	Now        time.Time
	Feed       FeedDetail
	Polls      []Poll // newest first
	DeadLetter *DeadLetter
	Held       *Held
	Thumbnail  Thumbnail
	Duration   Chart // seconds per finished poll, oldest first
	Features   Chart // features per applied or held poll, oldest first
}

// statusOrder is feed_freshness's order of precedence, worst first.
var statusOrder = []string{"removed", "held", "parked", "failing", "never", "stale", "fresh"}

// ErrNoFeed is returned by LoadFeed for a feed feed_status does not know.
var ErrNoFeed = errors.New("statuspage: no such feed")

// LoadOverview reads the overview, every number from the SQL views.
func (h *Handler) LoadOverview(ctx context.Context) (*Overview, error) {
	o := &Overview{Now: time.Now()}
	var err error
	if o.Feeds, err = collect[FeedStatus](ctx, h, "feeds"); err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for i := range o.Feeds {
		o.Feeds[i].LastError = h.opts.secrets.Text(o.Feeds[i].LastError)
		counts[o.Feeds[i].Status]++
	}
	for _, s := range statusOrder {
		if counts[s] > 0 {
			o.Statuses = append(o.Statuses, Count{s, counts[s]})
		}
	}
	if o.Origins, err = collect[Origin](ctx, h, "origins"); err != nil {
		return nil, err
	}
	for i := range o.Origins {
		o.Origins[i].OverrideReason = h.opts.secrets.Text(o.Origins[i].OverrideReason)
	}
	if o.DeadLetters, err = h.counts(ctx, "dead_letters_by_status"); err != nil {
		return nil, err
	}
	if o.Held, err = collect[Held](ctx, h, "held"); err != nil {
		return nil, err
	}
	for i := range o.Held {
		o.Held[i].Reason = h.opts.secrets.Text(o.Held[i].Reason)
	}
	return o, nil
}

// LoadFeed reads the page of jurisdiction/feed: its last polls (at most
// h's poll limit), open dead letter, held snapshot and thumbnail.
func (h *Handler) LoadFeed(ctx context.Context, jurisdiction, feed string) (*FeedPage, error) {
	p := &FeedPage{Now: time.Now()}
	rows, _ := h.pool.Query(ctx, h.sql.Get("feed"), jurisdiction, feed)
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[FeedDetail])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoFeed
	}
	if err != nil {
		return nil, fmt.Errorf("statuspage: reading %s/%s: %w", jurisdiction, feed, err)
	}
	d.LastError, d.URL = h.opts.secrets.Text(d.LastError), h.opts.secrets.URL(d.URL)
	p.Feed = d
	if p.Polls, err = collect[Poll](ctx, h, "polls", jurisdiction, feed, h.opts.polls); err != nil {
		return nil, err
	}
	for i := range p.Polls {
		p.Polls[i].Error = h.opts.secrets.Text(p.Polls[i].Error)
	}
	p.Duration, p.Features = pollCharts(p.Polls)
	letters, err := collect[DeadLetter](ctx, h, "open_dead_letter", jurisdiction, feed)
	if err != nil {
		return nil, err
	}
	if len(letters) > 0 {
		l := letters[0]
		l.LastError, l.URL = h.opts.secrets.Text(l.LastError), h.opts.secrets.URL(l.URL)
		p.DeadLetter = &l
	}
	held, err := collect[Held](ctx, h, "feed_held", jurisdiction, feed)
	if err != nil {
		return nil, err
	}
	if len(held) > 0 {
		held[0].Reason = h.opts.secrets.Text(held[0].Reason)
		p.Held = &held[0]
	}
	var count int64
	if d.FeatureCount != nil {
		count = *d.FeatureCount
	}
	bbox, hasBBox := h.bounds(jurisdiction)
	if p.Thumbnail, err = h.thumbnail(ctx, jurisdiction, feed, count, bbox, hasBBox); err != nil {
		return nil, err
	}
	return p, nil
}

// collect runs the statement called name and scans its rows into Ts by
// column name.
func collect[T any](ctx context.Context, h *Handler, name string, args ...any) ([]T, error) {
	rows, _ := h.pool.Query(ctx, h.sql.Get(name), args...)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, fmt.Errorf("statuspage: %s: %w", name, err)
	}
	return out, nil
}

// counts runs a statement that yields (status, count) rows.
func (h *Handler) counts(ctx context.Context, name string) ([]Count, error) {
	rows, _ := h.pool.Query(ctx, h.sql.Get(name))
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Count, error) {
		var c Count
		err := r.Scan(&c.Status, &c.N)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("statuspage: %s: %w", name, err)
	}
	return out, nil
}
