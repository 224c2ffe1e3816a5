package postgis_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/ingestd/ingestd/feeds"
)

// TestPollStatusesMatchSchema: feeds.PollStatus names exactly the states the
// migrations' polls_status_check allows.
func TestPollStatusesMatchSchema(t *testing.T) {
	b := setup(t)
	var def string
	if err := b.pool.QueryRow(b.ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conname = 'polls_status_check'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	var schema []string
	for _, m := range regexp.MustCompile(`'([a-z]+)'`).FindAllStringSubmatch(def, -1) {
		schema = append(schema, m[1])
	}
	var statuses []string
	for _, s := range feeds.PollStatuses() {
		statuses = append(statuses, string(s))
	}
	slices.Sort(schema)
	slices.Sort(statuses)
	if !slices.Equal(schema, statuses) {
		t.Errorf("polls_status_check allows %v, feeds.PollStatuses are %v (%s)", schema, statuses, def)
	}
}
