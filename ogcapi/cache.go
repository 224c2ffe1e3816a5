package ogcapi

import (
	"slices"
	"sync"
	"time"
)

// DefaultDiscoveryTTL is how long Prepare reuses a collection's discovery:
// a collection's items link, CRS list and the server's conformance and
// maximum limit change with a server's configuration, not between polls,
// and rereading them costs four or five requests per poll.
const DefaultDiscoveryTTL = time.Hour

// WithDiscoveryTTL sets how long Prepare reuses a discovery (default
// DefaultDiscoveryTTL); a negative d disables the cache.
func WithDiscoveryTTL(d time.Duration) Option {
	return func(c *Client) { c.discovery.ttl = d }
}

// discoveryCache remembers successful discoveries per url and collection.
// Its zero value is ready to use.
type discoveryCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[discoveryKey]discovered
}

type discoveryKey struct{ url, collection string }

type discovered struct {
	d        Discovery
	warnings []string
	at       time.Time
}

func (c *discoveryCache) get(url, collection string, now time.Time) (Discovery, []string, bool) {
	if c.ttl < 0 {
		return Discovery{}, nil, false
	}
	ttl := c.ttl
	if ttl == 0 {
		ttl = DefaultDiscoveryTTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[discoveryKey{url, collection}]
	if !ok || now.Sub(e.at) > ttl {
		return Discovery{}, nil, false
	}
	return e.d, slices.Clone(e.warnings), true
}

func (c *discoveryCache) put(url, collection string, d Discovery, warnings []string, now time.Time) {
	if c.ttl < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[discoveryKey]discovered)
	}
	c.entries[discoveryKey{url, collection}] = discovered{d: d, warnings: slices.Clone(warnings), at: now}
}

// drop forgets a discovery, for a collection whose items link failed.
func (c *discoveryCache) drop(url, collection string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, discoveryKey{url, collection})
}
