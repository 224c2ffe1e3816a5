-- A poll's timeout is its own work: the time it waits in line
-- for a request slot (max_in_flight, an origin's in-flight cap or rate) is
-- not counted, and is recorded here, so that an operator sees a queue that
-- is too long in SQL as well as in ingestd_feeds_poll_queue_wait_seconds.

-- +goose Up
ALTER TABLE polls ADD COLUMN queue_wait interval;
COMMENT ON COLUMN polls.queue_wait IS 'Time the poll waited in line for request slots (max_in_flight, the origin''s in-flight cap or rate limit), not counted against its timeout; bounded by queue_timeout. NULL: it waited less than a millisecond (or was recorded before ingestd reported it).';

-- +goose Down
ALTER TABLE polls DROP COLUMN queue_wait;
