package postgis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// A poll begins only while no other instance holds its feed's claim: an
// instance whose claim was ended (taken for dead while its poll waited for
// a connection) and whose feed another instance then claimed must not run
// its poll beside the new claimant's. Without a claim held by anyone (a
// dead letter's replay), or with its own, it begins.
func TestBeginPollRefusedWhileAnotherInstanceHoldsTheClaim(t *testing.T) {
	b := setup(t)
	feed := feedInfo("claimed")
	a := postgis.New(b.pool, postgis.WithOwner("hosta:1"))
	if _, err := a.BeginPoll(b.ctx, feed); err != nil {
		t.Fatalf("first poll, no claim held: %v", err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hostb:2", time.Hour, 0); err != nil || !ok {
		t.Fatalf("claim by hostb:2: %v, %v", ok, err)
	}
	_, err := a.BeginPoll(b.ctx, feed)
	if !errors.Is(err, feeds.ErrPollInProgress) {
		t.Fatalf("poll by hosta:1 while hostb:2 holds the claim: %v, want ErrPollInProgress", err)
	}
	if n := b.count(t, `SELECT count(*) FROM polls WHERE feed = 'claimed'`); n != 1 {
		t.Errorf("%d polls recorded, want the first one only", n)
	}
	if err := b.store.ReleasePoll(b.ctx, feed, "hostb:2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hosta:1", time.Hour, 0); err != nil || !ok {
		t.Fatalf("claim by hosta:1: %v, %v", ok, err)
	}
	polled, err := a.BeginPoll(b.ctx, feed)
	if err != nil {
		t.Fatalf("poll by hosta:1 under its own claim: %v", err)
	}
	// hosta:1 taken for dead: its claim ended, its poll not yet interrupted.
	// hostb:2 claims the feed, but may not poll it beside hosta:1's poll.
	if err := b.store.ReleasePoll(b.ctx, feed, "hosta:1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hostb:2", time.Hour, 0); err != nil || !ok {
		t.Fatalf("claim by hostb:2: %v, %v", ok, err)
	}
	bStore := postgis.New(b.pool, postgis.WithOwner("hostb:2"))
	if _, err := bStore.BeginPoll(b.ctx, feed); !errors.Is(err, feeds.ErrPollInProgress) {
		t.Fatalf("poll by hostb:2 while hosta:1's poll %d runs: %v, want ErrPollInProgress", polled, err)
	}
}

// A claim under which no poll began (another instance's poll still ran)
// leaves no claim time: the tick did not happen, and the next claim within
// half an interval is not refused as that same tick. A claim under which a
// poll began keeps its time, and a second claim of the tick is refused.
func TestReleaseWithoutPollForgetsTheTick(t *testing.T) {
	b := setup(t)
	feed := feedInfo("tick")
	a := postgis.New(b.pool, postgis.WithOwner("hosta:1"))
	bStore := postgis.New(b.pool, postgis.WithOwner("hostb:2"))
	const sameTick = time.Hour
	if err := b.store.RegisterFeeds(b.ctx, []feeds.FeedInfo{feed}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hosta:1", time.Hour, sameTick); err != nil || !ok {
		t.Fatalf("claim by hosta:1: %v, %v", ok, err)
	}
	if _, err := a.BeginPoll(b.ctx, feed); err != nil {
		t.Fatal(err)
	}
	// hosta:1 taken for dead, its claim ended with its time (as the sweep
	// does), its poll still running: hostb:2's claim cannot begin a poll.
	if _, err := b.pool.Exec(b.ctx, `UPDATE feed_status SET poll_owner = NULL, poll_lease_until = NULL, poll_claimed_at = NULL
		WHERE feed = 'tick'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hostb:2", time.Hour, sameTick); err != nil || !ok {
		t.Fatalf("claim by hostb:2: %v, %v", ok, err)
	}
	if _, err := bStore.BeginPoll(b.ctx, feed); !errors.Is(err, feeds.ErrPollInProgress) {
		t.Fatalf("poll by hostb:2 beside hosta:1's: %v, want ErrPollInProgress", err)
	}
	if err := b.store.ReleasePoll(b.ctx, feed, "hostb:2"); err != nil {
		t.Fatal(err)
	}
	// hosta:1's poll ended; the tick is still to be polled.
	if _, err := b.pool.Exec(b.ctx, `UPDATE polls SET status = 'failed', finished_at = now() WHERE feed = 'tick'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hostb:2", time.Hour, sameTick); err != nil || !ok {
		t.Fatalf("claim by hostb:2 after a claim under which no poll began: %v, %v; want the claim", ok, err)
	}
	if _, err := bStore.BeginPoll(b.ctx, feed); err != nil {
		t.Fatal(err)
	}
	if err := b.store.ReleasePoll(b.ctx, feed, "hostb:2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.ClaimPoll(b.ctx, feed, "hosta:1", time.Hour, sameTick); err != nil || ok {
		t.Fatalf("claim of a tick already polled: %v, %v; want it refused", ok, err)
	}
}
