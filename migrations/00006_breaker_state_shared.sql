-- Shared breaker verdicts: breaker_state (created by the dead-letter migration
-- as a record of state changes) becomes the verdict every instance honours.
-- It gains the half-open probe lease, the manual override, who wrote the row
-- last, and a version that every write bumps, so that an instance can tell a
-- newer row from a stale read. A trigger stamps each write and NOTIFYs the
-- origin on channel ingestd_breaker_state: instances re-read that row within
-- milliseconds, whoever wrote it (an instance, `ingestd breaker`, or an
-- operator's UPDATE in psql).

-- +goose Up
ALTER TABLE breaker_state
    ADD COLUMN probe_owner     text,
    ADD COLUMN probe_until     timestamptz,
    ADD COLUMN override        text        NOT NULL DEFAULT 'none'
               CHECK (override IN ('none', 'open', 'closed')),
    ADD COLUMN override_until  timestamptz,
    ADD COLUMN override_reason text,
    ADD COLUMN override_by     text,
    ADD COLUMN override_at     timestamptz,
    ADD COLUMN updated_by      text,
    ADD COLUMN last_error      text,
    ADD COLUMN version         bigint      NOT NULL DEFAULT 0,
    ADD CONSTRAINT breaker_state_probe_lease_check
        CHECK ((probe_owner IS NULL) = (probe_until IS NULL));

-- One sequence for all rows: a version never repeats, even for an origin
-- whose row was deleted and written again.
CREATE SEQUENCE breaker_state_version_seq;

-- +goose StatementBegin
CREATE FUNCTION breaker_state_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := nextval('breaker_state_version_seq');
    NEW.updated_at := now();
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION breaker_state_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The payload is only the origin: listeners re-read the row, so a
    -- notification can never carry a state older than the table's.
    PERFORM pg_notify('ingestd_breaker_state', coalesce(NEW.origin, OLD.origin));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER breaker_state_stamp BEFORE INSERT OR UPDATE ON breaker_state
    FOR EACH ROW EXECUTE FUNCTION breaker_state_stamp();
CREATE TRIGGER breaker_state_notify AFTER INSERT OR UPDATE OR DELETE ON breaker_state
    FOR EACH ROW EXECUTE FUNCTION breaker_state_notify();

COMMENT ON TABLE breaker_state IS 'Per origin: the breaker verdict every instance honours (open until when, the one half-open probe lease) and the manual override. Instances detect trips locally and write them here; they read it from a cache kept fresh by NOTIFY on ingestd_breaker_state and a periodic reload, never per request.';
COMMENT ON COLUMN breaker_state.origin IS 'scheme://host:port: the key of the circuit breaker (feed_status.origin, dead_letter.origin).';
COMMENT ON COLUMN breaker_state.state IS 'closed: requests flow. open: every instance refuses until open_until. half-open: open_until passed and probe_owner holds the lease for the one probe of the cluster.';
COMMENT ON COLUMN breaker_state.opened_at IS 'When the origin was last opened (a trip or a failed probe).';
COMMENT ON COLUMN breaker_state.open_until IS 'While open: when the next probe may go out. Every instance refuses until then, with the same retry_after.';
COMMENT ON COLUMN breaker_state.consecutive_opens IS 'Opens without a healthy spell in between; the open duration grows with it. Reset when an instance trips a closed origin.';
COMMENT ON COLUMN breaker_state.probe_owner IS 'The instance (host:pid) that holds the probe lease: the only one allowed to send the half-open probe.';
COMMENT ON COLUMN breaker_state.probe_until IS 'The probe lease expires then unless its owner renews it; an owner that died stalls recovery at most this long.';
COMMENT ON COLUMN breaker_state.override IS 'Manual override (ingestd breaker open|close|auto): open refuses every request, closed admits every request without the breaker, none lets the breaker decide.';
COMMENT ON COLUMN breaker_state.override_until IS 'The override lapses to none at this time (NULL: until changed).';
COMMENT ON COLUMN breaker_state.override_reason IS 'Why the operator set the override.';
COMMENT ON COLUMN breaker_state.override_by IS 'Who set the override (user@host:pid of the CLI).';
COMMENT ON COLUMN breaker_state.override_at IS 'When the override was set.';
COMMENT ON COLUMN breaker_state.updated_at IS 'When the row was last written (set by trigger).';
COMMENT ON COLUMN breaker_state.updated_by IS 'The instance (host:pid) or CLI user that wrote the row last.';
COMMENT ON COLUMN breaker_state.last_error IS 'The failure that last opened the origin (query strings removed).';
COMMENT ON COLUMN breaker_state.version IS 'Bumped by trigger on every write (breaker_state_version_seq); instances ignore a read older than the row they hold.';

-- +goose Down
DROP TRIGGER breaker_state_notify ON breaker_state;
DROP TRIGGER breaker_state_stamp ON breaker_state;
DROP FUNCTION breaker_state_notify();
DROP FUNCTION breaker_state_stamp();
DROP SEQUENCE breaker_state_version_seq;
ALTER TABLE breaker_state
    DROP CONSTRAINT breaker_state_probe_lease_check,
    DROP COLUMN probe_owner,
    DROP COLUMN probe_until,
    DROP COLUMN override,
    DROP COLUMN override_until,
    DROP COLUMN override_reason,
    DROP COLUMN override_by,
    DROP COLUMN override_at,
    DROP COLUMN updated_by,
    DROP COLUMN last_error,
    DROP COLUMN version;
COMMENT ON TABLE breaker_state IS 'Per origin: the last breaker state change an instance saw. Written from the breaker''s state-change hook; the breaker itself still decides in memory.';
COMMENT ON COLUMN breaker_state.origin IS NULL;
COMMENT ON COLUMN breaker_state.state IS NULL;
COMMENT ON COLUMN breaker_state.opened_at IS NULL;
COMMENT ON COLUMN breaker_state.updated_at IS NULL;
COMMENT ON COLUMN breaker_state.open_until IS 'While open: when the next probe may go out.';
COMMENT ON COLUMN breaker_state.consecutive_opens IS 'Opens without a healthy spell in between; the open duration grows with it.';
