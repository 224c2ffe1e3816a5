package schema

import (
	"errors"
	"testing"
	"time"
)

// TestMemo: a schema is reused within the TTL and read again past it; a
// failed read returns the last schema with the error; a TTL <= 0 never
// reuses.
func TestMemo(t *testing.T) {
	var m Memo[string]
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	reads := 0
	v1, v2 := &Declared{}, &Declared{}
	next, failure := v1, error(nil)
	read := func() (*Declared, error) { reads++; return next, failure }

	if d, err := m.Get("a", time.Hour, clock, read); d != v1 || err != nil || reads != 1 {
		t.Fatalf("first read: %p %v, %d reads", d, err, reads)
	}
	next = v2
	if d, _ := m.Get("a", time.Hour, clock, read); d != v1 || reads != 1 {
		t.Errorf("within the TTL: %p, %d reads, want the remembered one and no read", d, reads)
	}
	now = now.Add(2 * time.Hour)
	if d, _ := m.Get("a", time.Hour, clock, read); d != v2 || reads != 2 {
		t.Errorf("past the TTL: %p, %d reads, want a new read", d, reads)
	}
	now = now.Add(2 * time.Hour)
	failure = errors.New("boom")
	if d, err := m.Get("a", time.Hour, clock, read); d != v2 || err == nil {
		t.Errorf("failed read: %p %v, want the last schema and the error", d, err)
	}
	if d, err := m.Get("b", time.Hour, clock, read); d != nil || err == nil {
		t.Errorf("failed first read: %p %v, want nil and the error", d, err)
	}
	failure = nil
	before := reads
	m.Get("a", 0, clock, read)
	m.Get("a", 0, clock, read)
	if reads != before+2 {
		t.Errorf("TTL 0: %d reads, want 2", reads-before)
	}
}
