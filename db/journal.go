package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

var _ store.Journaler = (*MessageStore)(nil)

// journalSessionSQL reads the live session's epoch and holds FOR KEY
// SHARE on its row until the edit commits: a Delete or Replace (FOR
// UPDATE) waits for the edit, and the trigger of migration 13 then
// deletes the journal with the session.
const journalSessionSQL = `
SELECT epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL FOR KEY SHARE`

// journalRowSQL makes sure the session's journal row exists and locks it.
const journalRowSQL = `
INSERT INTO strata_journals (session_id, epoch, journal) VALUES ($1, $2, '{}'::jsonb)
ON CONFLICT (session_id) DO UPDATE SET updated_at = strata_journals.updated_at
RETURNING epoch, journal`

// journalWriteSQL stores the edited journal.
const journalWriteSQL = `
UPDATE strata_journals SET epoch = $2, journal = $3::jsonb, updated_at = now() WHERE session_id = $1`

// journalReadSQL reads the journal of one incarnation.
const journalReadSQL = `
SELECT journal FROM strata_journals WHERE session_id = $1 AND epoch = $2`

// EditJournal implements store.Journaler in one transaction: the live
// session of epoch is share-locked, its journal row locked (created when
// absent), edited and written back.
func (s *MessageStore) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	if !text.Storable(sessionID) {
		return nil
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: journal of session %q: begin: %w", sessionID, classify(ctx, err))
	}
	defer func() { _ = tx.Rollback() }()
	var live int64
	err = tx.QueryRowxContext(ctx, journalSessionSQL, sessionID).Scan(&live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
	case live != epoch:
		return nil
	}
	if err := editJournalTx(ctx, tx, sessionID, epoch, edit); err != nil {
		return fmt.Errorf("db: journal of session %q: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: journal of session %q: commit: %w", sessionID, classify(ctx, err))
	}
	return nil
}

// editJournalTx edits the journal of the session's incarnation epoch
// within tx, which holds a lock on the session's row.
func editJournalTx(ctx context.Context, tx *sqlx.Tx, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	var stored int64
	var raw []byte
	if err := tx.QueryRowxContext(ctx, journalRowSQL, sessionID, epoch).Scan(&stored, &raw); err != nil {
		return classify(ctx, err)
	}
	j := store.Journal{Epoch: epoch}
	if stored == epoch {
		if err := json.Unmarshal(raw, &j); err != nil {
			return fmt.Errorf("decode journal: %w", err)
		}
		j.Epoch = epoch
	}
	edit(&j)
	out, err := json.Marshal(cleanJournal(j))
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if _, err := tx.ExecContext(ctx, journalWriteSQL, sessionID, epoch, string(out)); err != nil {
		return classify(ctx, err)
	}
	return nil
}

// ReadJournal implements store.Journaler.
func (s *MessageStore) ReadJournal(ctx context.Context, sessionID string, epoch int64) (store.Journal, error) {
	j := store.Journal{Epoch: epoch}
	if !text.Storable(sessionID) {
		return j, nil
	}
	var raw []byte
	err := s.d.QueryRowxContext(ctx, journalReadSQL, sessionID, epoch).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return j, nil
	case err != nil:
		return j, fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, fmt.Errorf("db: journal of session %q: decode: %w", sessionID, err)
	}
	j.Epoch = epoch
	return j, nil
}

// cleanJournal is j with text PostgreSQL cannot store in JSONB (NUL
// bytes, invalid UTF-8) cleaned.
func cleanJournal(j store.Journal) store.Journal {
	j.Records = append([]store.JournalRecord(nil), j.Records...)
	for i := range j.Records {
		r := &j.Records[i]
		r.Trigger, r.ErrorClass, r.Summarizer, r.Model = text.Clean(r.Trigger), text.Clean(r.ErrorClass), text.Clean(r.Summarizer), text.Clean(r.Model)
		r.Changes = append([]store.FactChange(nil), r.Changes...)
		for k := range r.Changes {
			c := &r.Changes[k]
			c.Key, c.From, c.To = text.Clean(c.Key), text.Clean(c.From), text.Clean(c.To)
		}
	}
	return j
}

// queryJournaled runs a summary save (query, returning one row scanned
// into dest, which sets *saved) and, when ctx carries a journal edit (a
// fold's record, store.WithJournalEdit), runs it in one transaction with
// the edit, applied only when the save wrote: a summary and its journal
// record commit together, so no erasure comes between them. The save's
// statement holds its lock on the session row until the commit. In that
// transaction, when the save wrote and cache is not nil, the identity of
// the row written is read and the summary cached under it once committed
// (summaryCache): the next load of the session, typically the next
// fold's plan, neither receives nor decodes it again.
func queryJournaled(ctx context.Context, d *sqlx.DB, cache *summaryCache, sm summary.Summary, saved *bool, query string, args []any, dest ...any) error {
	edit := store.JournalEditOf(ctx)
	if edit == nil {
		return d.QueryRowxContext(ctx, query, args...).Scan(dest...)
	}
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowxContext(ctx, query, args...).Scan(dest...); err != nil {
		return err
	}
	var written *cachedSummary
	if *saved {
		if err := editJournalTx(ctx, tx, sm.SessionID, sm.Epoch, edit); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		if cache != nil && cache.max > 0 {
			if written, err = writtenSummary(ctx, tx, sm); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if written != nil {
		cache.put(sm.SessionID, written)
	}
	return nil
}

// summaryIdentSQL reads the identity of a session's stored summary (see
// summaryCache).
const summaryIdentSQL = `SELECT epoch, version, updated_at FROM strata_summaries WHERE session_id = $1`

// writtenSummary is the cache entry of sm, just saved within tx: the
// identity of its row and what a load would decode of it. nil when the
// ledger cannot be rebuilt (nothing is cached then).
func writtenSummary(ctx context.Context, tx *sqlx.Tx, sm summary.Summary) (*cachedSummary, error) {
	l, lerr := ledgerOf(sm)
	if lerr != nil {
		return nil, nil
	}
	cs := &cachedSummary{narrative: text.Clean(sm.Narrative), ledger: l}
	if err := tx.QueryRowxContext(ctx, summaryIdentSQL, sm.SessionID).Scan(&cs.epoch, &cs.version, &cs.updatedAt); err != nil {
		return nil, fmt.Errorf("read the summary's identity: %w", classify(ctx, err))
	}
	return cs, nil
}
