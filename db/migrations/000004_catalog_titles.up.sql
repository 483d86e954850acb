-- Strata schema, version 4: pinned catalogue titles. See db/catalog.go for
-- the meaning of every column of strata_session_index.
--
-- A title given when a session is created (catalog.Catalog.SetTitle) is
-- stored as the document's title with pinned set: refreshes of the
-- document keep it, and it goes with the session's document when the
-- session is deleted. Titles no longer live in strata_summaries.
ALTER TABLE strata_session_index
    ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false,
    ADD CONSTRAINT strata_session_index_pinned_title CHECK (NOT pinned OR title <> '');
