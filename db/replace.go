package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

var _ store.Replacer = (*MessageStore)(nil)

// replaceSQL starts a new incarnation of $1's live session when $2 owns it:
// the ownership check is the UPDATE's own condition, and the row lock it
// takes is held to the commit, so no append, delete or create of another
// caller slips in. The counters are reset; the messages follow. $3 is
// the new epoch (nextEpochSQL).
const replaceSQL = `
UPDATE strata_sessions
   SET epoch = $3, message_count = 0,
       first_user_message = NULL, participants = '{}', last_activity = now()
 WHERE session_id = $1 AND user_id = $2 AND deleted_at IS NULL
RETURNING epoch`

// nextEpochSQL draws a new epoch for replaceSQL ($3).
const nextEpochSQL = `SELECT nextval('strata_session_epoch_seq')`

// replaceClearSQL removes the old incarnation's messages, summary and
// catalogue document, after replaceSQL took the row lock.
const replaceClearSQL = `
WITH m AS (DELETE FROM strata_messages      WHERE session_id = $1),
     c AS (DELETE FROM strata_summaries     WHERE session_id = $1),
     j AS (DELETE FROM strata_journals      WHERE session_id = $1),
     r AS (DELETE FROM strata_journal_records WHERE session_id = $1)
DELETE FROM strata_session_index WHERE session_id = $1`

// replaceOwnerSQL reads the live session's owner when replaceSQL matched
// nothing, to tell store.ErrNotOwner from store.ErrNotFound.
const replaceOwnerSQL = `
SELECT user_id FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL`

// Replace implements store.Replacer in one transaction: every message is
// validated first; then the session is created for userID when it does not
// exist (createSQL), its row is locked and its ownership checked in one
// statement (replaceSQL, which also gives it a new epoch), the old
// messages, summary and catalogue document go, and msgs are appended
// (appendSQL). Another user's session returns memory.ErrNotOwner and
// nothing changes; so does any failure before the commit.
func (s *MessageStore) Replace(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	if !text.Storable(sessionID) {
		return store.AppendResult{}, fmt.Errorf("db: replace: %w: session id %s", store.ErrInvalidMessage, invalidID)
	}
	if !text.Storable(userID) {
		return store.AppendResult{}, fmt.Errorf("db: replace: %w: user id %s", store.ErrInvalidMessage, invalidID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("db: replace: %w", err)
	}
	fail := func(step string, err error) (store.AppendResult, error) {
		return store.AppendResult{}, fmt.Errorf("db: replace session %q: %s: %w", sessionID, step, classify(ctx, err))
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	var epoch int64
	if err := tx.QueryRowxContext(ctx, createSQL, sessionID, userID).Scan(&epoch); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fail("create", err)
	}
	// The new epoch is drawn by a statement of its own: Citus refuses a
	// volatile function (nextval) in an UPDATE of a distributed table.
	var next int64
	if err := tx.QueryRowxContext(ctx, nextEpochSQL).Scan(&next); err != nil {
		return fail("epoch", err)
	}
	err = tx.QueryRowxContext(ctx, replaceSQL, sessionID, userID, next).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		var owner string
		switch err := tx.QueryRowxContext(ctx, replaceOwnerSQL, sessionID).Scan(&owner); {
		case errors.Is(err, sql.ErrNoRows):
			// Deleted between the create and the lock.
			return store.AppendResult{}, fmt.Errorf("db: replace session %q: %w", sessionID, store.ErrNotFound)
		case err != nil:
			return fail("owner", err)
		}
		return store.AppendResult{}, fmt.Errorf("db: replace session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	if err != nil {
		return fail("lock", err)
	}
	if _, err := tx.ExecContext(ctx, replaceClearSQL, sessionID); err != nil {
		return fail("clear", err)
	}
	res := store.AppendResult{Epoch: epoch}
	if len(msgs) > 0 {
		var total, ep, last sql.NullInt64
		var owner sql.NullString
		err = tx.QueryRowContext(ctx, appendSQL, appendArgs(sessionID, userID, b)...).Scan(&total, &ep, &last, &owner, new(sql.NullInt64), new(sql.NullTime))
		if err != nil {
			return fail("append", err)
		}
		if !total.Valid {
			return fail("append", errors.New("the locked session row vanished"))
		}
		res = store.AppendResult{Total: int(total.Int64), LastSeq: last.Int64, Epoch: ep.Int64}
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return res, nil
}
