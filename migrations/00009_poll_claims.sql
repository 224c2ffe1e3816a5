-- One poller per feed across instances: before polling, an instance claims
-- the feed in feed_status with a lease. A claim is refused while another
-- instance's lease runs, or when the feed was claimed less than half an
-- interval ago (the same tick, fired by another instance).

-- +goose Up
ALTER TABLE feed_status
    ADD COLUMN poll_owner       text,
    ADD COLUMN poll_lease_until timestamptz,
    ADD COLUMN poll_claimed_at  timestamptz;

COMMENT ON COLUMN feed_status.poll_owner IS 'The instance (host:pid) polling the feed now, if any.';
COMMENT ON COLUMN feed_status.poll_lease_until IS 'Until when poll_owner''s claim holds if it is not released (a crashed instance''s claim lapses then).';
COMMENT ON COLUMN feed_status.poll_claimed_at IS 'When the feed was last claimed for a poll, by any instance.';

-- +goose Down
ALTER TABLE feed_status
    DROP COLUMN poll_owner,
    DROP COLUMN poll_lease_until,
    DROP COLUMN poll_claimed_at;
