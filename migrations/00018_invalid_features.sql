-- Invalid features are counted per poll, by reason, and never fail the
-- poll: text jsonb cannot hold (invalid UTF-8, \u0000, a lone surrogate) is
-- repaired to U+FFFD or, under invalid_feature: skip, the feature's update is
-- skipped; properties with no faithful repair (not JSON, a number numeric
-- cannot hold) are always skipped; an id too long to be a key refuses its
-- feature alone.
--
-- staging counts per page (a page staged again replaces its counts); the
-- apply sums them into the poll.
--
-- ingestd_try_transform is ST_Transform giving NULL where PROJ refuses a
-- coordinate (outside the CRS's domain), so that one such feature is an
-- invalid geometry rather than an error that aborts the apply. The apply
-- uses it only on a second run after the plain one failed so: it catches the
-- error in a subtransaction per call, which costs, and which parallel
-- workers cannot run (PARALLEL RESTRICTED).

-- +goose Up
ALTER TABLE staged_features ADD COLUMN invalid_feature smallint NOT NULL DEFAULT 0;
COMMENT ON COLUMN staged_features.invalid_feature IS '0: as the source sent it; 1: its id or properties were repaired (U+FFFD), written under invalid_feature: repair and skipped under skip; 2: its properties have no faithful repair (properties is NULL), its update is always skipped.';
ALTER TABLE staged_pages ADD COLUMN invalid_features jsonb;
COMMENT ON COLUMN staged_pages.invalid_features IS 'The page''s invalid features by reason, as polls.invalid_features; NULL for none.';
ALTER TABLE polls ADD COLUMN invalid_features jsonb;
COMMENT ON COLUMN polls.invalid_features IS 'Features repaired, skipped or refused, by reason: invalid_utf8, nul, lone_surrogate (repaired to U+FFFD, or skipped under invalid_feature: skip), invalid_json, number_out_of_range (update skipped), id_too_long (refused). NULL when none, or when the poll did not reach its apply.';
-- +goose StatementBegin
CREATE FUNCTION ingestd_try_transform(g geometry, srid integer) RETURNS geometry
LANGUAGE plpgsql STABLE STRICT PARALLEL RESTRICTED AS $$
BEGIN
    RETURN ST_Transform(g, srid);
EXCEPTION WHEN internal_error THEN
    IF SQLERRM LIKE 'transform:%' THEN
        RETURN NULL;
    END IF;
    RAISE;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION ingestd_try_transform(geometry, integer) IS 'ST_Transform, or NULL where PROJ refuses the coordinates (PostGIS''s "transform: …" errors); other errors are raised.';

-- +goose Down
DROP FUNCTION ingestd_try_transform(geometry, integer);
ALTER TABLE polls DROP COLUMN invalid_features;
ALTER TABLE staged_pages DROP COLUMN invalid_features;
ALTER TABLE staged_features DROP COLUMN invalid_feature;
