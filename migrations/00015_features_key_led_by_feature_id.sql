-- features: the primary key leads with feature_id: (feature_id,
-- jurisdiction, feed) instead of (jurisdiction, feed, feature_id).
--
-- Why: within a feed's table jurisdiction and feed are the same on every
-- row, so a key led by them makes every comparison of a sort or a descent
-- go through two equal strings before reaching the id, and the sort's
-- abbreviated keys (the first bytes of the leading column) never tell two
-- rows apart. The bulk build of a first load's key took about three times
-- as long in that order as led by the id (scripts/bench.sh gdal measures a
-- first load). Lookups are unchanged: every query that names a
-- feature gives all three columns, ON CONFLICT (jurisdiction, feed,
-- feature_id) infers the key whatever its column order, and a feed's rows
-- are found by partition, not by the key.

-- +goose Up
SET LOCAL maintenance_work_mem = '256MB';
ALTER TABLE features DROP CONSTRAINT features_pkey;
ALTER TABLE features ADD CONSTRAINT features_pkey PRIMARY KEY (feature_id, jurisdiction, feed);

-- +goose Down
SET LOCAL maintenance_work_mem = '256MB';
ALTER TABLE features DROP CONSTRAINT features_pkey;
ALTER TABLE features ADD CONSTRAINT features_pkey PRIMARY KEY (jurisdiction, feed, feature_id);
