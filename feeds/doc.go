// Package feeds decides what is polled, when, and what a poll's outcome
// means; it keeps no SQL of its own.
//
// It runs a configuration (package config's Config) and owns:
//
//   - the scheduler (Manager): one cron entry per feed, shifted by a
//     deterministic per-feed offset so that many feeds on one schedule do not
//     hit one origin at the same second, with claims that keep several
//     instances from polling a feed twice;
//   - the poll of one feed (poll.go, stager.go): fetch every page through the
//     origin's breaker, stage each page as it arrives, and apply the snapshot
//     only when it is whole, so a failed fetch never retires features; a poll
//     an open breaker refuses, or one that fails after its retries, is parked
//     in the dead-letter queue and later resumed from its checkpoint
//     (Manager.Replay);
//   - freshness bookkeeping: each feed's expected interval and last outcome,
//     which feed_freshness turns into fresh, stale, failing, never, parked,
//     held or removed;
//   - the crash-recovery sweep (recovery.go, sweep.go): heartbeats of this
//     instance, and ending what dead instances left (claims, running polls).
//
// It does not own storage: Store and Recovery are interfaces, and
// feeds/postgis implements them with every statement in its sql/*.sql files.
// Fetching is the kinds' packages', reached through the registry of kinds
// (package internal/kinds), breaking the breaker's, and parking
// deadletter's; cmd/ingestd wires them together.
//
// Every timestamp a poll records or compares comes from the manager's Clock
// (the real clock unless a test injects one), and the scheduler and the
// heartbeat wait on it, so that tests move time instead of sleeping.
package feeds
