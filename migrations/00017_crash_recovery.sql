-- What a crash leaves behind, made visible.
--
-- staged_pages becomes logged: crash recovery empties the unlogged
-- staged_features but now keeps the record of what each page staged, so an
-- apply, a held accept or a resume sees that rows are missing (a page that
-- recorded 3 features and has 0) instead of applying what is left, which
-- removed every feature the lost pages held. One small row per page: its WAL
-- costs nothing next to the page's COPY.
--
-- polls.owner and polls.active_at name the instance running a poll and when
-- it (last) became running, and instances holds each running daemon's
-- heartbeat, so that a restarted or surviving instance recognises the polls
-- and claims of a dead one (kill -9, OOM kill, a panic): same host and the
-- process is gone, or its heartbeat lapsed. One-off commands heartbeat too,
-- while they poll.

-- +goose Up
ALTER TABLE staged_pages SET LOGGED;
COMMENT ON TABLE staged_pages IS 'Pages fully staged per poll in progress (logged, unlike staged_features): the checkpoint a resumed poll continues from, and the record an apply checks staged_features against, since crash recovery empties staged_features.';

ALTER TABLE polls
    ADD COLUMN owner     text,
    ADD COLUMN active_at timestamptz;
UPDATE polls SET active_at = started_at WHERE status = 'running';
ALTER TABLE polls ALTER COLUMN active_at SET DEFAULT now();
COMMENT ON COLUMN polls.owner IS 'The instance (host:pid) that began or last resumed the poll; NULL for polls recorded before it was kept.';
COMMENT ON COLUMN polls.active_at IS 'When the poll last became running (begun or resumed): a running poll much older than its feed''s timeout was abandoned by a dead instance.';

CREATE TABLE instances (
    owner        text        PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    pid_ns       text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
COMMENT ON TABLE instances IS 'One row per running `ingestd run`, renewed by its heartbeat and deleted at a clean shutdown. A row past expires_at is an instance that died: others end its polls and release its claims.';
COMMENT ON COLUMN instances.owner IS 'host:pid, as feed_status.poll_owner and polls.owner name it.';
COMMENT ON COLUMN instances.pid_ns IS 'The process''s PID namespace (/proc/self/ns/pid): a pid is looked up on its host only from the same namespace (two containers may share a host name).';
COMMENT ON COLUMN instances.expires_at IS 'heartbeat_at plus the instance''s liveness TTL.';

-- +goose Down
DROP TABLE instances;
ALTER TABLE polls DROP COLUMN owner, DROP COLUMN active_at;
ALTER TABLE staged_pages SET UNLOGGED;
COMMENT ON TABLE staged_pages IS 'Pages fully staged per poll in progress: the checkpoint a resumed poll continues from.';
