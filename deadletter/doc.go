// Package deadletter keeps polls that could not finish now in Postgres and
// replays them later, across restarts and across several instances.
//
// A poll is parked (Queue.Park) when an open circuit breaker refused one of
// its requests (ReasonCircuitOpen) or a request failed after its retries on a
// closed breaker (ReasonFailed). The row records the feed, the request, its
// origin, when it may be retried and a Checkpoint: the staged poll and the
// page to resume at. A feed has at most one open (pending or replaying) row;
// parking it again updates that row.
//
// A Replayer claims due rows with FOR UPDATE SKIP LOCKED, marks them
// replaying under a lease it renews while the replay runs, and hands each to
// a ReplayFunc (feeds.Manager.Replay in the daemon: this package knows
// nothing of feeds, pages or PostGIS). A ReplayFunc's result decides the row:
//
//	nil              done
//	*DeferError      pending again with attempts+1 and the new retry_after and
//	                 checkpoint, or abandoned once attempts reach MaxAttempts
//	ErrNotNow, or    pending again unchanged (the replayer is stopping, or the
//	the replayer     feed is busy in this process); attempts do not grow
//	stopping
//	any other error  abandoned: retrying cannot fix it (a 404, a feed removed
//	                 from the configuration)
//
// A row whose lease expired (its instance died mid-replay) goes back to
// pending on the next tick of any replayer, so nothing parked is lost; the
// lease and SKIP LOCKED make sure that no two replayers hold one row at once.
//
// Replays of one origin run one after another in a process, so that the
// single probe a recovering origin admits is not raced by that origin's own
// backlog; different origins replay in parallel, up to the batch size. A row
// is claimed only when a slot and its origin are free, and each row is
// recorded and released as soon as its own replay ends: a slow replay holds
// its slot, never the rows of other origins. A claimed row's lease is renewed
// while its replay runs and no longer; a renewal that finds the row gone
// means another instance took it, and only then is "lease lost" logged.
package deadletter
