package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

var (
	_ store.Importer  = (*MessageStore)(nil)
	_ store.Forgetter = (*MessageStore)(nil)
)

// importMessagesSQL inserts an imported session's messages ($1 session, $2
// owner, $3.. column arrays, $9 creation times as text, ” for now) in
// order, returning the sequence numbers drawn for them from the session's
// counter (strata_sessions.seq_counter), which the same call raises on
// the session row the caller's transaction locked (createSQL for an
// import; the arc-reactor re-run appends with it too). An empty author is
// the owner $2. It calls the function strata_import_messages (migration
// 15), whose statements are each about the one session, as Citus needs.
const importMessagesSQL = `
SELECT * FROM strata_import_messages($1, $2, $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])`

// importSessionSQL sets an imported session's counters and times: created
// at its first message's time when older, active at its newest message's;
// and raises its summary_writes, for the summary the import may store (the
// new incarnation's epoch already tells a held tail apart; this keeps
// every summary write a stamp change by itself, see cachedTail).
const importSessionSQL = `
UPDATE strata_sessions s
   SET message_count = $2, first_user_message = $3, participants = $4, summary_writes = s.summary_writes + 1,
       created_at = LEAST(s.created_at, COALESCE(m.first, s.created_at)),
       last_activity = COALESCE(m.last, s.last_activity)
  FROM (SELECT min(created_at) AS first, max(created_at) AS last FROM strata_messages WHERE session_id = $1) m
 WHERE s.session_id = $1`

// importSummarySQL stores an imported session's summary, replacing one
// left over from a deleted predecessor.
const importSummarySQL = `
INSERT INTO strata_summaries AS cs (session_id, epoch, narrative, facts_json, up_to_seq, version, created_at, updated_at)
VALUES ($1, $2, $3, $4::jsonb, $5, 1, COALESCE($6, now()), now())
ON CONFLICT (session_id) DO UPDATE
   SET epoch = EXCLUDED.epoch, narrative = EXCLUDED.narrative, facts_json = EXCLUDED.facts_json,
       up_to_seq = EXCLUDED.up_to_seq, version = 1, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`

// Import implements store.Importer in one transaction: the session is
// created (or a deleted one's tombstone revived with a new epoch), its
// messages inserted in order keeping their CreatedAt, its counters set,
// and the summary sum returns stored; all of it commits or none does. An
// id in use returns store.ErrSessionExists.
func (s *MessageStore) Import(ctx context.Context, sessionID, userID string, msgs []store.Message,
	sum func(epoch int64, seqs []int64) *summary.Summary) (store.AppendResult, error) {
	if !text.Storable(sessionID) || !text.Storable(userID) {
		return store.AppendResult{}, fmt.Errorf("db: import: %w: id %s", store.ErrInvalidMessage, invalidID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("db: import: %w", err)
	}
	created := make([]string, len(msgs))
	for i, m := range msgs {
		if !m.CreatedAt.IsZero() {
			// In UTC to the microsecond, as given: PostgreSQL would round
			// finer digits, up to the next year at the end of 9999.
			t, ok := store.NormalTime(m.CreatedAt)
			if !ok {
				return store.AppendResult{}, fmt.Errorf("db: import: %w: message %d: created_at %s outside the years 1 to 9999", store.ErrInvalidMessage, i, m.CreatedAt.Format(time.RFC3339Nano))
			}
			created[i] = t.Format(time.RFC3339Nano)
		}
	}
	fail := func(what string, err error) (store.AppendResult, error) {
		return store.AppendResult{}, fmt.Errorf("db: import session %q: %s: %w", sessionID, what, classify(ctx, err))
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	var epoch int64
	err = tx.QueryRowxContext(ctx, createSQL, sessionID, userID).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return store.AppendResult{}, fmt.Errorf("db: import session %q: %w", sessionID, store.ErrSessionExists)
	}
	if err != nil {
		return fail("create", err)
	}
	var seqs []int64
	if len(msgs) > 0 {
		rows, err := tx.QueryContext(ctx, importMessagesSQL, sessionID, userID,
			pq.Array(b.roles), pq.Array(b.contents), pq.Array(b.toolCalls),
			pq.Array(b.toolCallIDs), pq.Array(b.names), pq.Array(b.metadata), pq.Array(created), pq.Array(b.authors))
		if err != nil {
			return fail("messages", err)
		}
		for rows.Next() {
			var q int64
			if err := rows.Scan(&q); err != nil {
				rows.Close()
				return fail("messages", err)
			}
			seqs = append(seqs, q)
		}
		if err := rows.Err(); err != nil {
			return fail("messages", err)
		}
		rows.Close()
		slices.Sort(seqs) // drawn in the insertion order
	}
	if _, err := tx.ExecContext(ctx, importSessionSQL, sessionID, len(msgs), b.firstUser, pq.Array(b.participants(userID))); err != nil {
		return fail("session", err)
	}
	if sum != nil {
		if sm := sum(epoch, seqs); sm != nil {
			facts, err := encodeLedger(*sm)
			if err != nil {
				return fail("summary", err)
			}
			var createdAt any
			if t, ok := store.NormalTime(sm.CreatedAt); ok && !t.IsZero() {
				createdAt = t
			}
			if _, err := tx.ExecContext(ctx, importSummarySQL, sessionID, epoch, text.Clean(sm.Narrative), facts, sm.UpToSeq, createdAt); err != nil {
				return fail("summary", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	var last int64
	if len(seqs) > 0 {
		last = seqs[len(seqs)-1]
	}
	return store.AppendResult{Total: len(msgs), LastSeq: last, Epoch: epoch}, nil
}

// SessionRef names a live session and its owner.
type SessionRef struct {
	SessionID string `db:"session_id"`
	UserID    string `db:"user_id"`
}

// liveSessionsSQL is one keyset page of every user's live sessions.
const liveSessionsSQL = `
SELECT session_id, user_id FROM strata_sessions
 WHERE deleted_at IS NULL AND session_id > $1
 ORDER BY session_id LIMIT $2`

// LiveSessions returns up to limit (1 to 10 000) live sessions of every
// user whose ids sort after afterID, in id order: pages over the whole
// store, for backups and moves (strata export --all). Start with
// afterID "" and continue from the last id returned.
func LiveSessions(ctx context.Context, d *sqlx.DB, afterID string, limit int) ([]SessionRef, error) {
	limit = min(max(limit, 1), 10_000)
	var out []SessionRef
	if err := d.SelectContext(ctx, &out, liveSessionsSQL, afterID, limit); err != nil {
		return nil, fmt.Errorf("db: list sessions: %w", classify(ctx, err))
	}
	return out, nil
}
