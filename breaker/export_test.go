package breaker

import (
	"context"
	"time"
)

// SetSleep replaces r's waits (backoffs, 429 pauses), for the tests to sleep
// on their fake clock or to forbid sleeping.
func SetSleep(r *Registry, sleep func(context.Context, time.Duration) error) { r.sleep = sleep }

// SetJitter pins r's jitter source.
func SetJitter(r *Registry, jitter func() float64) { r.rand = jitter }
