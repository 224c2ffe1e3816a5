// Package breaker guards every request ingestd makes with a circuit breaker per
// origin (scheme://host:port), retries inside one logical call, and paces each
// origin, all under a global bound on requests in flight.
//
// A Registry, built once in main and passed down, holds one breaker per origin
// (a sony/gobreaker/v2 TwoStepCircuitBreaker) with the origin's Policy, rate
// limiter, in-flight cap, Retry-After pause and retry budget. One origin's
// trouble never refuses or slows calls to another, except through the global
// bound on requests in flight, which a struggling origin cannot fill beyond
// its own MaxInFlightPerOrigin.
//
// # Logical calls and outcomes
//
// Registry.Do runs one logical call: it asks the breaker once, runs the
// AttemptFunc up to MaxAttempts times, and reports only the final outcome to
// the breaker. Each attempt classifies itself:
//
//	outcome    examples                                   retried            breaker counts
//	Success    2xx; 4xx other than 429 (Err returned)     no                 success
//	Failure    transport error, AttemptTimeout, 5xx,      yes, with backoff  failure (if the
//	           body cut short, OGC/HTML error page                           final attempt)
//	Throttled  429 (a long Retry-After: *ThrottledError)      yes, after pause   neither
//	Ignored    caller cancelled, local error              no                 neither
//
// Do corrects two classifications only it can make: an attempt that fails
// while the caller's context is done is Ignored, and an attempt cut short by
// the policy's AttemptTimeout is a Failure. A call that runs out of attempts
// on 429s is reported as neither: pacing must never trip the breaker. A call
// stopped by its context while waiting (backoff, pause, rate limiter, slots)
// is Ignored.
//
// Retries wait a full-jitter exponential backoff, or the origin's pause after
// a 429 with Retry-After (plus per-caller jitter so parallel callers do not
// resume together). A Retry-After longer than MaxRetryAfter or than the
// caller's remaining deadline ends the call at once with a *ThrottledError
// carrying the (capped) time, so that the caller can park its work until then
// instead of sleeping to its deadline; so does a pause already in force that
// outlasts the deadline. Before each retry Do checks that
// the origin has not been declared open since the call was admitted; if it
// has, Do stops at once with an *OpenError. Retries also draw on the origin's
// retry budget: over the last Window they may add at most RetryBudgetRatio of
// the origin's calls (never fewer than RetryBudgetMin), so that a fixed retry
// count cannot multiply the load on a failing host.
//
// Pacing is per attempt: wait out the origin's pause, its start as spaced by
// its response times (TargetConcurrency, off by default), a token from its
// rate limiter (none by default), then a slot of its in-flight cap (2 by
// default: the default pacing, which never holds a sequential poll), then a
// global slot. Slots are released after each attempt, never held across a
// backoff, and every wait ends with the caller's context.
//
// # Trip, open and half-open
//
// Closed: the breaker trips when ConsecutiveFailures calls in a row failed,
// whatever the time between them, or when, over a rolling Window (ten
// buckets), at least MinCalls calls were decided and at least FailureRatio of
// them failed. The run of failures is the wrapper's (a success or a change of
// state ends it): gobreaker keeps its ConsecutiveFailures inside its window,
// which forgets the failures of a dead origin whose feeds poll it minutes
// apart. For the ratio, a call whose outcome arrives after its start has
// left the window is not counted (gobreaker's rolling window works that
// way), which is why Policy.Validate insists that a call bounded by
// AttemptTimeout fits in Window.
//
// Open: calls are refused without touching the network with an *OpenError
// whose RetryAfter is the time until the next probe. The open duration is
// OpenBase × the number of consecutive opens, capped by OpenMax, with ±20%
// jitter; the count of consecutive opens halves for every OpenDecay the
// origin then stays closed. gobreaker's own Timeout is fixed per breaker and
// reads the real clock, so it is set to a nanosecond and the package keeps
// the open deadline itself, on Config.Clock (see state.go for what
// gobreaker decides and what the package adds).
//
// Half-open: after the cooldown up to HalfOpenMaxCalls probes are admitted
// (gobreaker's MaxRequests); others are refused. HalfOpenMaxCalls consecutive successful probes close the
// breaker with a fresh window; one failed probe re-opens it at once, for a
// longer time. A probe whose outcome is neither (cancelled, throttled) gives
// its slot back without deciding anything.
//
// # Visibility
//
// Every state change is logged once (keys origin, from, to,
// consecutive_failures, requests, failures, retry_after, consecutive_opens,
// and decided_by when another instance's verdict caused it) and passed to
// Config.OnStateChange. gobreaker announces changes while holding its own
// lock, so the package only records them there and delivers them after the
// gobreaker call has returned. Registry.Snapshot reports this process's view
// of every origin it used; `ingestd status` and `ingestd breaker list` read
// the cluster's verdicts from breaker_state instead (pgshare.Cluster.Verdicts),
// since the process asking is not the one polling. A pgshare.OriginWatch on
// Config.OnStateChange reports an origin stuck open across several
// cooldowns and marks it in breaker_state for feed_freshness.
//
// # Time
//
// Everything the package times (cooldowns, decay, retry budgets, 429
// pauses, probe leases) reads Config.Clock, the real clock by default, so
// that tests move a fake clock instead of sleeping. Context deadlines are
// compared with the real clock they were set on.
//
// # Packages
//
// This package is the in-process core: policy, origin state, registry,
// retries, pacing and in-flight slots. It imports no database client and no
// metrics client, so that httpcall and the protocol packages above it do
// not either. Two seams carry the rest, both wired in main:
//
//   - Config.Observer is told every attempt, call result and state change;
//     breaker/breakermetrics implements it with the Prometheus series
//     (ingestd_breaker_requests_total, _calls_total, _state, _transitions_total).
//   - Config.Shared (the Shared interface) shares verdicts with the other
//     instances; breaker/pgshare implements it on PostgreSQL's breaker_state
//     table (NOTIFY cache, async writer, probe leases, operator overrides,
//     clock-skew estimate) and holds the OriginWatch.
//
// # Shared verdicts
//
// With Config.Shared, several instances and restarts agree. gobreaker stays
// the local detector of trips; what follows a trip is the cluster's:
//
//   - A trip is published (asynchronously) as open until open_until, and
//     every instance refuses with the same RetryAfter as soon as its cache
//     holds the row. Do reads only the cache (Shared.View).
//   - After open_until an instance must win the probe lease
//     (Shared.AcquireLease) before its probe goes out; the others refuse for
//     the rest of the lease. The holder renews the lease while probing; if
//     it dies the lease lapses and another instance probes. A successful
//     probe closes the verdict for everyone (and gives every instance a
//     fresh gobreaker); a failed one re-opens it, longer. That close
//     stands: an instance asks for the lease from the row it last synced
//     (AcquireLease's seen), and a row closed since is not taken, nor is a
//     cached view older than the one synced adopted.
//   - Manual overrides (Override, `ingestd breaker open|close|auto`): open
//     refuses every call (OpenError.Override), closed admits every call
//     without the breaker, none lets the breaker decide.
//   - While the store is unreachable, cached verdicts still refuse until
//     their time and each instance's own breaker decides the rest; taking
//     the lease is the only query on a caller's path, bounded by its
//     implementation's timeout.
//
// See breaker/pgshare for how the verdicts are stored, shared and resumed.
package breaker
