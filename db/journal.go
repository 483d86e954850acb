package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

var _ store.Journaler = (*MessageStore)(nil)

// journalSessionSQL reads the live session's epoch and holds FOR KEY
// SHARE on its row until the edit commits: a Delete or Replace (FOR
// UPDATE) waits for the edit, and then deletes the journal with the
// session (deleteSessionSQL, replaceClearSQL).
const journalSessionSQL = `
SELECT epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL FOR KEY SHARE`

// journalRowSQL makes sure the session's journal header row exists and
// locks it.
const journalRowSQL = `
INSERT INTO strata_journals (session_id, epoch, journal) VALUES ($1, $2, '{}'::jsonb)
ON CONFLICT (session_id) DO UPDATE SET updated_at = strata_journals.updated_at
RETURNING epoch, journal`

// journalRecordsSQL reads the records of one incarnation, oldest first.
const journalRecordsSQL = `
SELECT n, record FROM strata_journal_records WHERE session_id = $1 AND epoch = $2 ORDER BY n`

// journalDropSQL deletes the records of a predecessor incarnation.
const journalDropSQL = `DELETE FROM strata_journal_records WHERE session_id = $1 AND epoch <> $2`

// journalInsertSQL, journalUpdateSQL and journalDeleteSQL write the
// records an edit added ($3 numbers, $4 records, $5 counts), changed or
// removed.
const (
	journalInsertSQL = `
INSERT INTO strata_journal_records (session_id, epoch, n, record, counts)
SELECT $1, $2, u.n, u.record, u.counts FROM unnest($3::bigint[], $4::jsonb[], $5::jsonb[]) AS u(n, record, counts)`
	journalUpdateSQL = `
UPDATE strata_journal_records r SET record = u.record
  FROM unnest($3::bigint[], $4::jsonb[]) AS u(n, record)
 WHERE r.session_id = $1 AND r.epoch = $2 AND r.n = u.n`
	journalDeleteSQL = `
DELETE FROM strata_journal_records WHERE session_id = $1 AND epoch = $2 AND n = ANY($3::bigint[])`
)

// journalWriteSQL stores the edited journal's header.
const journalWriteSQL = `
UPDATE strata_journals SET epoch = $2, journal = $3::jsonb, updated_at = now() WHERE session_id = $1`

// journalReadSQL reads the journal of one incarnation: its header with
// each record, oldest first (one row with no record when it has none).
const journalReadSQL = `
SELECT j.journal, r.n, r.record
  FROM strata_journals j
  LEFT JOIN strata_journal_records r ON r.session_id = j.session_id AND r.epoch = j.epoch
 WHERE j.session_id = $1 AND j.epoch = $2
 ORDER BY r.n`

// journalAppendSQL appends one record to the journal of the live session
// of epoch $2 (strata_journal_append, migration 16): an INSERT, a bounded
// DELETE of the records past the retention and an UPDATE of the header.
// It returns the record's number, NULL when the session is gone or of
// another epoch.
const journalAppendSQL = `SELECT n FROM strata_journal_append($1, $2, $3::jsonb, $4::jsonb, $5, $6, $7, true) AS n`

// EditJournal implements store.Journaler. When ctx says the edit is one
// record appended (store.WithJournalRecord) it is one statement
// (journalAppendSQL), which reads no record; otherwise one transaction:
// the live session of epoch is share-locked, the journal's header row
// locked (created when absent) and its records read, edited, and the
// records the edit added, changed or removed written.
func (s *MessageStore) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	if !text.Storable(sessionID) {
		return nil
	}
	if rec, keep, ok := store.JournalRecordOf(ctx); ok {
		a, err := appendOf(rec, keep)
		if err != nil {
			return fmt.Errorf("db: journal of session %q: %w", sessionID, err)
		}
		var n sql.NullInt64
		if err := s.d.QueryRowxContext(ctx, journalAppendSQL, sessionID, epoch, a.record, a.counts, a.day, a.spent, keep).Scan(&n); err != nil {
			return fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
		}
		if n.Valid && edit != nil {
			a.applied(edit)
		}
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

// journalAppend is a record to append as strata_journal_append's
// arguments: the record and its counts as JSON, and the UTC day and
// tokens it spent.
type journalAppend struct {
	record, counts string
	day            string
	spent          int64
}

// appendOf is the append of rec to a journal keeping keep records: what
// Journal.Add does to an empty journal gives its counts and its day.
func appendOf(rec store.JournalRecord, keep int) (journalAppend, error) {
	var one store.Journal
	one.Add(rec, keep)
	r, err := json.Marshal(cleanRecord(one.Records[0]))
	if err != nil {
		return journalAppend{}, fmt.Errorf("encode journal record: %w", err)
	}
	c, err := json.Marshal(one.Totals)
	if err != nil {
		return journalAppend{}, fmt.Errorf("encode journal record: %w", err)
	}
	return journalAppend{record: string(r), counts: string(c), day: one.Day, spent: one.DayTokens}, nil
}

// applied tells the caller that gave edit that the append was applied:
// edit, which is that append (store.WithJournalRecord), runs on a scratch
// journal.
func (journalAppend) applied(edit func(j *store.Journal)) {
	var scratch store.Journal
	edit(&scratch)
}

// editJournalTx edits the journal of the session's incarnation epoch
// within tx, which holds a lock on the session's row: the header row is
// locked, the records read, and only the records the edit added, changed
// or removed are written, with the header.
func editJournalTx(ctx context.Context, tx *sqlx.Tx, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	var stored int64
	var raw []byte
	if err := tx.QueryRowxContext(ctx, journalRowSQL, sessionID, epoch).Scan(&stored, &raw); err != nil {
		return classify(ctx, err)
	}
	j := store.Journal{Epoch: epoch}
	before := map[int64][]byte{}
	if stored == epoch {
		if err := json.Unmarshal(raw, &j); err != nil {
			return fmt.Errorf("decode journal: %w", err)
		}
		j.Epoch, j.Records = epoch, nil
		rows, err := tx.QueryxContext(ctx, journalRecordsSQL, sessionID, epoch)
		if err != nil {
			return classify(ctx, err)
		}
		for rows.Next() {
			var n int64
			var rr []byte
			if err := rows.Scan(&n, &rr); err != nil {
				_ = rows.Close()
				return classify(ctx, err)
			}
			var r store.JournalRecord
			if err := json.Unmarshal(rr, &r); err != nil {
				_ = rows.Close()
				return fmt.Errorf("decode journal record %d: %w", n, err)
			}
			r.N = n
			b, err := json.Marshal(cleanRecord(r))
			if err != nil {
				_ = rows.Close()
				return fmt.Errorf("encode journal record %d: %w", n, err)
			}
			before[n] = b
			j.Records = append(j.Records, r)
		}
		if err := rows.Err(); err != nil {
			return classify(ctx, err)
		}
	} else if _, err := tx.ExecContext(ctx, journalDropSQL, sessionID, epoch); err != nil {
		return classify(ctx, err)
	}
	edit(&j)
	var addN, updN []int64
	var addRec, addCounts, updRec []string
	for _, r := range j.Records {
		b, err := json.Marshal(cleanRecord(r))
		if err != nil {
			return fmt.Errorf("encode journal record %d: %w", r.N, err)
		}
		old, kept := before[r.N]
		switch {
		case !kept:
			var one store.Journal
			one.Add(r, 1)
			c, err := json.Marshal(one.Totals)
			if err != nil {
				return fmt.Errorf("encode journal record %d: %w", r.N, err)
			}
			addN, addRec, addCounts = append(addN, r.N), append(addRec, string(b)), append(addCounts, string(c))
		case !bytes.Equal(old, b):
			updN, updRec = append(updN, r.N), append(updRec, string(b))
		}
		delete(before, r.N)
	}
	var delN []int64
	for n := range before {
		delN = append(delN, n)
	}
	if len(delN) > 0 {
		if _, err := tx.ExecContext(ctx, journalDeleteSQL, sessionID, epoch, pq.Array(delN)); err != nil {
			return classify(ctx, err)
		}
	}
	if len(updN) > 0 {
		if _, err := tx.ExecContext(ctx, journalUpdateSQL, sessionID, epoch, pq.Array(updN), pq.Array(updRec)); err != nil {
			return classify(ctx, err)
		}
	}
	if len(addN) > 0 {
		if _, err := tx.ExecContext(ctx, journalInsertSQL, sessionID, epoch, pq.Array(addN), pq.Array(addRec), pq.Array(addCounts)); err != nil {
			return classify(ctx, err)
		}
	}
	j.Records = nil
	out, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if _, err := tx.ExecContext(ctx, journalWriteSQL, sessionID, epoch, string(out)); err != nil {
		return classify(ctx, err)
	}
	return nil
}

// ReadJournal implements store.Journaler: the header and the records of
// the incarnation, in one statement.
func (s *MessageStore) ReadJournal(ctx context.Context, sessionID string, epoch int64) (store.Journal, error) {
	j := store.Journal{Epoch: epoch}
	if !text.Storable(sessionID) {
		return j, nil
	}
	rows, err := s.d.QueryxContext(ctx, journalReadSQL, sessionID, epoch)
	if err != nil {
		return j, fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
	}
	defer func() { _ = rows.Close() }()
	first := true
	for rows.Next() {
		var raw, rr []byte
		var n sql.NullInt64
		if err := rows.Scan(&raw, &n, &rr); err != nil {
			return store.Journal{Epoch: epoch}, fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
		}
		if first {
			if err := json.Unmarshal(raw, &j); err != nil {
				return store.Journal{Epoch: epoch}, fmt.Errorf("db: journal of session %q: decode: %w", sessionID, err)
			}
			j.Epoch, j.Records, first = epoch, nil, false
		}
		if !n.Valid {
			continue
		}
		var r store.JournalRecord
		if err := json.Unmarshal(rr, &r); err != nil {
			return store.Journal{Epoch: epoch}, fmt.Errorf("db: journal of session %q: decode record %d: %w", sessionID, n.Int64, err)
		}
		r.N = n.Int64
		j.Records = append(j.Records, r)
	}
	if err := rows.Err(); err != nil {
		return store.Journal{Epoch: epoch}, fmt.Errorf("db: journal of session %q: %w", sessionID, classify(ctx, err))
	}
	return j, nil
}

// cleanRecord is r with text PostgreSQL cannot store in JSONB (NUL
// bytes, invalid UTF-8) cleaned.
func cleanRecord(r store.JournalRecord) store.JournalRecord {
	r.Trigger, r.ErrorClass, r.Summarizer, r.Model = text.Clean(r.Trigger), text.Clean(r.ErrorClass), text.Clean(r.Summarizer), text.Clean(r.Model)
	r.Changes = append([]store.FactChange(nil), r.Changes...)
	for k := range r.Changes {
		c := &r.Changes[k]
		c.Key, c.From, c.To = text.Clean(c.Key), text.Clean(c.From), text.Clean(c.To)
	}
	return r
}

// saveJournaledSQL is saveReleaseSQL ($6 the lease holder, or NULL for
// saveSummarySQL) with the append of a fold's record ($7–$11, see
// journalAppendSQL) when the save wrote, in one call
// (strata_save_journaled, migration 19), which returns the identity of
// the summary row written and the session's summary_writes after it.
const saveJournaledSQL = `
SELECT held, gone, saved, s_epoch, s_version, s_updated_at, s_up_to, s_created_at, summary_writes
  FROM strata_save_journaled($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11)`

// saveJournaled saves sm (its ledger encoded as facts) as saveSummarySQL
// does, or, with holder not nil, as saveReleaseSQL does for that lease
// holder (held is always true without). When ctx carries a journal edit
// (a fold's record, store.WithJournalEdit), the edit is applied only when
// the save wrote, in the save's transaction: a summary and its journal
// record commit together, so no erasure comes between them.
//
// When ctx also says the edit is one record appended
// (store.WithJournalRecord), the save, the append and the read of the
// written row's identity are one statement (saveJournaledSQL). Otherwise
// the save's statement holds its lock on the session row until the
// commit of a transaction that applies the edit (editJournalTx) and reads
// that identity. Either way, when the save wrote and cache is not nil,
// the summary is cached under the identity of the row written once
// committed (summaryCache): the next load of the session, typically the
// next fold's plan, neither receives nor decodes it again. In the one
// statement's case, the tail tails holds for the session (nil: none) also
// takes the summary's new identity and summary_writes when that statement
// was the only write of the summary since the tail was read (see
// heldAfterSave): the next load is still answered from it.
func saveJournaled(ctx context.Context, d *sqlx.DB, cache *summaryCache, tails *tailCache, sm summary.Summary, facts string, holder any) (held, gone, saved bool, err error) {
	held = true
	edit := store.JournalEditOf(ctx)
	save := func(q sqlx.QueryerContext) error {
		if holder == nil {
			return q.QueryRowxContext(ctx, saveSummarySQL, sm.SessionID, sm.Epoch, text.Clean(sm.Narrative), facts, sm.UpToSeq).Scan(&gone, &saved)
		}
		return q.QueryRowxContext(ctx, saveReleaseSQL, sm.SessionID, sm.Epoch, text.Clean(sm.Narrative), facts, sm.UpToSeq, holder).Scan(&held, &gone, &saved)
	}
	if edit == nil {
		err = save(d)
		return held, gone, saved, err
	}
	if rec, keep, ok := store.JournalRecordOf(ctx); ok {
		a, err := appendOf(rec, keep)
		if err != nil {
			return false, false, false, fmt.Errorf("journal: %w", err)
		}
		var ep, ver, upTo, writes sql.NullInt64
		var at, created sql.NullTime
		err = d.QueryRowxContext(ctx, saveJournaledSQL, sm.SessionID, sm.Epoch, text.Clean(sm.Narrative), facts, sm.UpToSeq, holder,
			a.record, a.counts, a.day, a.spent, keep).Scan(&held, &gone, &saved, &ep, &ver, &at, &upTo, &created, &writes)
		if err != nil {
			return false, false, false, err
		}
		if saved {
			a.applied(edit)
			if cache != nil && cache.max > 0 && ep.Valid {
				if cs := cacheEntry(sm); cs != nil {
					cs.epoch, cs.version, cs.updatedAt = ep.Int64, ver.Int64, at.Time
					cache.put(sm.SessionID, cs)
				}
			}
			if tails != nil && ep.Valid && writes.Valid {
				tails.heldAfterSave(sm.SessionID, writes.Int64, summaryIdent{ok: true, epoch: ep.Int64, version: ver.Int64,
					upTo: upTo.Int64, createdAt: created.Time, updatedAt: at.Time})
			}
		}
		return held, gone, saved, nil
	}
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return false, false, false, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := save(tx); err != nil {
		return false, false, false, err
	}
	var written *cachedSummary
	if saved {
		if err := editJournalTx(ctx, tx, sm.SessionID, sm.Epoch, edit); err != nil {
			return false, false, false, fmt.Errorf("journal: %w", err)
		}
		if cache != nil && cache.max > 0 {
			if written, err = writtenSummary(ctx, tx, sm); err != nil {
				return false, false, false, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return false, false, false, err
	}
	if written != nil {
		cache.put(sm.SessionID, written)
	}
	return held, gone, saved, nil
}

// summaryIdentSQL reads the identity of a session's stored summary (see
// summaryCache).
const summaryIdentSQL = `SELECT epoch, version, updated_at FROM strata_summaries WHERE session_id = $1`

// writtenSummary is the cache entry of sm, just saved within tx: the
// identity of its row and what a load would decode of it. nil when the
// ledger cannot be rebuilt (nothing is cached then).
func writtenSummary(ctx context.Context, tx *sqlx.Tx, sm summary.Summary) (*cachedSummary, error) {
	cs := cacheEntry(sm)
	if cs == nil {
		return nil, nil
	}
	if err := tx.QueryRowxContext(ctx, summaryIdentSQL, sm.SessionID).Scan(&cs.epoch, &cs.version, &cs.updatedAt); err != nil {
		return nil, fmt.Errorf("read the summary's identity: %w", classify(ctx, err))
	}
	return cs, nil
}

// cacheEntry is what a load would decode of sm once saved, without the
// identity of its row; nil when the ledger cannot be rebuilt (nothing is
// cached then).
func cacheEntry(sm summary.Summary) *cachedSummary {
	l, err := ledgerOf(sm)
	if err != nil {
		return nil
	}
	return &cachedSummary{narrative: text.Clean(sm.Narrative), ledger: l}
}
