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
