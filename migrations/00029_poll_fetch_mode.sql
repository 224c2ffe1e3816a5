-- Incremental refresh: each poll records how it read its layer,
-- and how far an incremental path had drifted from the server's layer.
--
-- fetch_mode: full (the whole layer), edit_date (the features edited or
-- added after the last applied snapshot's watermark, composed with that
-- snapshot into a whole one), change_tracking (a change log since a server
-- generation), not_modified (the server proved the layer unchanged).
-- drift: the features an incremental path got wrong, which a full dump of
-- the same poll corrected: the ids the composed snapshot lacked or had too
-- many (the poll then fell back to a full dump), or, for the periodic
-- reconciliation (full_every), the features that differ from the stored
-- ones although their edit date is before the watermark.

-- +goose Up
ALTER TABLE polls ADD COLUMN fetch_mode text;
ALTER TABLE polls ADD COLUMN drift integer;
ALTER TABLE polls ADD CONSTRAINT polls_fetch_mode_check
    CHECK (fetch_mode IN ('full', 'edit_date', 'change_tracking', 'not_modified'));
COMMENT ON COLUMN polls.fetch_mode IS 'How the poll read its layer: full, edit_date (edits since the last applied snapshot''s watermark, composed with it), change_tracking, or not_modified; NULL when the fetch did not finish (or before ingestd recorded it).';
COMMENT ON COLUMN polls.drift IS 'Features the incremental path got wrong, found by this poll''s full dump: ids a composed snapshot lacked or had too many (the poll fell back to a full dump), or features a reconciliation found changed with an edit date before the watermark; NULL when nothing was compared.';

-- +goose Down
ALTER TABLE polls DROP CONSTRAINT polls_fetch_mode_check;
ALTER TABLE polls DROP COLUMN drift;
ALTER TABLE polls DROP COLUMN fetch_mode;
