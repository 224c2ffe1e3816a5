package schema

import (
	"sync"
	"time"
)

// Memo keeps each layer's last declared schema, keyed as its protocol
// identifies the document (WFS: the layer's negotiation key; OGC API: the
// schema link). Its zero value is ready to use and it is safe for
// concurrent use.
//
// It serves two needs every protocol has: a schema read within the TTL is
// reused, so a feed polled every few minutes does not add a request per
// poll to the county; and past it, when the read fails, the last schema
// read is still there, so a passing failure does not retype a layer's
// values (and make every GML feature look modified).
type Memo[K comparable] struct {
	mu      sync.Mutex
	entries map[K]memoEntry
}

type memoEntry struct {
	d  *Declared
	at time.Time
}

// Get returns key's schema: the one read within ttl of now (ttl <= 0: never
// reused), else what read returns, remembered. When read fails, Get returns
// its error with the last schema read for key (nil if none), which the
// caller may use as a fallback or discard (an open breaker, a deadline).
func (m *Memo[K]) Get(key K, ttl time.Duration, now func() time.Time, read func() (*Declared, error)) (*Declared, error) {
	m.mu.Lock()
	e, ok := m.entries[key]
	m.mu.Unlock()
	if ok && ttl > 0 && now().Sub(e.at) < ttl {
		return e.d, nil
	}
	d, err := read()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		return m.entries[key].d, err
	}
	if m.entries == nil {
		m.entries = make(map[K]memoEntry)
	}
	m.entries[key] = memoEntry{d: d, at: now()}
	return d, nil
}
