package postgis_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFailPollStoresBoundedText: an error that quotes a 20 MB value, invalid
// UTF-8 and a NUL is recorded (a failure must never fail to be recorded for
// its own message), cut to about 1 KB of valid text, in polls and
// feed_status.
func TestFailPollStoresBoundedText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("noisy")
	id := b.begin(t, feed)
	msg := "bad \xff\x00 value: " + strings.Repeat("9", 20<<20)
	if err := b.store.FailPoll(b.ctx, id, feed, errors.New(msg)); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`SELECT error FROM polls WHERE id = $1`,
		`SELECT last_error FROM feed_status WHERE last_poll_id = $1`,
	} {
		var got string
		b.scalar(t, &got, sql, id)
		if len(got) > 1024+len("…") || !strings.HasPrefix(got, "bad \uFFFD\uFFFD value: 999") || !strings.HasSuffix(got, "9…") || !utf8.ValidString(got) {
			t.Errorf("%s: %d bytes, %q…", sql, len(got), got[:min(len(got), 40)])
		}
	}
}
