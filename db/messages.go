package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
)

// MessageStore is the PostgreSQL memory.MessageStore over strata_sessions
// and strata_messages. It also implements memory.FoldLocker (see
// TryLockFold). It is safe for concurrent use, within one process and
// across processes sharing the database.
//
// Every method checks the caller's ownership in the same statement as the
// work it guards, or, for Append and Delete, in a transaction that holds
// the session's row lock from the check to the commit; no owner is ever
// looked up first and acted on later.
type MessageStore struct {
	d   *sqlx.DB
	opt options
}

var (
	_ memory.MessageStore = (*MessageStore)(nil)
	_ memory.FoldLocker   = (*MessageStore)(nil)
)

// NewMessageStore returns a message store over d, whose schema must have
// been migrated (Migrate). The store never closes d.
func NewMessageStore(d *sqlx.DB, opts ...Option) memory.MessageStore {
	return &MessageStore{d: d, opt: buildOptions(opts)}
}

// firstUserMessageMax caps, in characters, the copy of a session's first
// user message kept in strata_sessions for session listings.
const firstUserMessageMax = 500

// invalidID is the error detail for an id PostgreSQL cannot store.
const invalidID = "is not valid UTF-8 or contains a NUL byte"

// createSQL makes an empty session owned by $2: a new row, or the revival
// of a deleted session's tombstone with a new epoch. A live session
// returns no row, whoever owns it. The epoch of a new row comes from the
// column default (the epoch sequence); a revived row takes the one drawn
// for the proposed row (EXCLUDED.epoch), so it is new as well.
const createSQL = `
INSERT INTO strata_sessions AS s (session_id, user_id, created_at, last_activity)
VALUES ($1, $2, clock_timestamp(), clock_timestamp())
ON CONFLICT (session_id) DO UPDATE
   SET user_id = EXCLUDED.user_id, epoch = EXCLUDED.epoch, deleted_at = NULL,
       message_count = 0, first_user_message = NULL,
       created_at = EXCLUDED.created_at, last_activity = EXCLUDED.last_activity
 WHERE s.deleted_at IS NOT NULL
RETURNING epoch`

// Create implements memory.MessageStore: one statement creates the
// session or, when the id is in use, returns memory.ErrSessionExists. The
// id of a deleted session is free again; its new incarnation gets a new
// epoch.
func (s *MessageStore) Create(ctx context.Context, sessionID, userID string) error {
	if !validID(sessionID) {
		return fmt.Errorf("db: create session: %w: session id %s", memory.ErrInvalidMessage, invalidID)
	}
	if !validID(userID) {
		return fmt.Errorf("db: create session: %w: user id %s", memory.ErrInvalidMessage, invalidID)
	}
	var epoch int64
	err := s.d.QueryRowxContext(ctx, createSQL, sessionID, userID).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("db: create session %q: %w", sessionID, memory.ErrSessionExists)
	}
	if err != nil {
		return fmt.Errorf("db: create session %q: %w", sessionID, classify(ctx, err))
	}
	return nil
}

// appendSessionSQL claims, revives or locks the session row for an append
// by $2 of $3 messages, and returns the count after the append and the
// epoch. A missing session is created owned by $2; a deleted one (a
// tombstone) is revived owned by $2 with a new epoch and fresh counters;
// a live one is updated only when $2 owns it. In every case the row is
// then locked until the transaction ends, which serializes appends to one
// session across processes and keeps a concurrent Delete out. No row
// comes back when another user owns the live session.
//
// last_activity is the time the row is written (clock_timestamp, after
// the lock was taken), so it never goes back for a session; an append of
// no messages leaves it alone.
const appendSessionSQL = `
INSERT INTO strata_sessions AS s
       (session_id, user_id, message_count, first_user_message, created_at, last_activity)
VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp())
ON CONFLICT (session_id) DO UPDATE
   SET user_id            = EXCLUDED.user_id,
       epoch              = CASE WHEN s.deleted_at IS NULL THEN s.epoch ELSE EXCLUDED.epoch END,
       message_count      = CASE WHEN s.deleted_at IS NULL THEN s.message_count ELSE 0 END
                            + EXCLUDED.message_count,
       first_user_message = CASE WHEN s.deleted_at IS NULL
                                 THEN COALESCE(s.first_user_message, EXCLUDED.first_user_message)
                                 ELSE EXCLUDED.first_user_message END,
       created_at         = CASE WHEN s.deleted_at IS NULL THEN s.created_at ELSE EXCLUDED.created_at END,
       last_activity      = CASE WHEN s.deleted_at IS NULL AND EXCLUDED.message_count = 0
                                 THEN s.last_activity ELSE EXCLUDED.last_activity END,
       deleted_at         = NULL
 WHERE s.user_id = EXCLUDED.user_id OR s.deleted_at IS NOT NULL
RETURNING message_count, epoch`

// appendMessagesSQL inserts the whole batch in one statement. seq defaults
// to the global sequence and is drawn in ord order, after the session row
// lock above was taken. Every message of the batch gets the statement's
// start time, which follows the lock as well.
const appendMessagesSQL = `
WITH ins AS (
    INSERT INTO strata_messages
           (session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
    SELECT $1, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
           b.name, NULLIF(b.metadata, '')::jsonb, $2, statement_timestamp()
      FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           WITH ORDINALITY AS b(role, content, tool_calls, tool_call_id, name, metadata, ord)
     ORDER BY b.ord
    RETURNING seq
)
SELECT max(seq) FROM ins`

// Append implements memory.MessageStore. The batch is written in one
// transaction: the session row is claimed (created, or revived after a
// delete, owned by the caller) or locked with the ownership check in the
// same statement (appendSessionSQL), every message is inserted by one
// statement and the session's count is updated, or nothing is. With no
// messages the single claiming statement runs alone. Invalid messages
// (see memory.Message.Validate) return memory.ErrInvalidMessage and
// another user's session memory.ErrNotOwner, both wrapped, storing
// nothing. Seq, UserID and CreatedAt of msgs are ignored: the store
// assigns them.
func (s *MessageStore) Append(ctx context.Context, sessionID, userID string, msgs ...memory.Message) (memory.AppendResult, error) {
	if !validID(sessionID) {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w: session id %s", memory.ErrInvalidMessage, invalidID)
	}
	if !validID(userID) {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w: user id %s", memory.ErrInvalidMessage, invalidID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w", err)
	}
	fail := func(step string, err error) (memory.AppendResult, error) {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: %s: %w", sessionID, step, classify(ctx, err))
	}
	notOwner := func() (memory.AppendResult, error) {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}

	var total, epoch int64
	if len(msgs) == 0 {
		err := s.d.QueryRowxContext(ctx, appendSessionSQL, sessionID, userID, 0, nil).Scan(&total, &epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return notOwner()
		}
		if err != nil {
			return fail("claim session", err)
		}
		return memory.AppendResult{Total: int(total), Epoch: epoch}, nil
	}

	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	err = tx.QueryRowxContext(ctx, appendSessionSQL, sessionID, userID, len(msgs), b.firstUser).Scan(&total, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return notOwner()
	}
	if err != nil {
		return fail("lock session", err)
	}
	var last sql.NullInt64
	err = tx.QueryRowxContext(ctx, appendMessagesSQL, sessionID, userID,
		pq.Array(b.roles), pq.Array(b.contents), pq.Array(b.toolCalls),
		pq.Array(b.toolCallIDs), pq.Array(b.names), pq.Array(b.metadata)).Scan(&last)
	if err != nil {
		return fail("insert messages", err)
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return memory.AppendResult{Total: int(total), LastSeq: last.Int64, Epoch: epoch}, nil
}

// batch holds one Append's messages as parallel column arrays, the shape
// unnest wants.
type batch struct {
	roles, contents, toolCalls, toolCallIDs, names, metadata []string
	firstUser                                                sql.NullString
}

func newBatch(msgs []memory.Message) (*batch, error) {
	n := len(msgs)
	b := &batch{
		roles: make([]string, n), contents: make([]string, n), toolCalls: make([]string, n),
		toolCallIDs: make([]string, n), names: make([]string, n), metadata: make([]string, n),
	}
	for i, m := range msgs {
		if err := m.Validate(0); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		b.roles[i] = string(m.Role)
		b.contents[i] = m.Content
		b.toolCallIDs[i] = m.ToolCallID
		b.names[i] = m.Name
		if len(m.ToolCalls) > 0 {
			raw, err := json.Marshal(toToolCallsJSON(m.ToolCalls))
			if err != nil {
				return nil, fmt.Errorf("message %d: tool calls: %w", i, err)
			}
			b.toolCalls[i] = string(raw)
		}
		if len(m.Metadata) > 0 {
			raw, err := json.Marshal(m.Metadata)
			if err != nil {
				return nil, fmt.Errorf("message %d: metadata: %w", i, err)
			}
			b.metadata[i] = string(raw)
		}
		if m.Role == memory.RoleUser && !b.firstUser.Valid {
			b.firstUser = sql.NullString{String: truncateRunes(m.Content, firstUserMessageMax), Valid: true}
		}
	}
	return b, nil
}

// truncateRunes returns the first n characters of s.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// messageColumns are the strata_messages columns every message read
// selects, in the order of messageRow's fields.
const messageColumns = `seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at`

// tailSQL reads the session's owner, count and epoch and, only when $3
// owns it, its newest $2 messages: one statement, one snapshot, so the
// ownership decision and the messages read cannot disagree. The lateral
// subquery walks the (session_id, seq) primary key backwards and stops
// after $2 rows, so its cost does not grow with the session's history;
// for another user it is not run at all (the owner test is a one-time
// filter). A session without messages in range yields one row of NULL
// message columns; a missing or deleted session yields no row.
const tailSQL = `
SELECT s.user_id AS owner, s.message_count, s.epoch, m.seq, m.role, m.content, m.tool_calls,
       m.tool_call_id, m.name, m.metadata, m.user_id, m.created_at
  FROM strata_sessions s
  LEFT JOIN LATERAL (
        SELECT ` + messageColumns + `
          FROM strata_messages
         WHERE session_id = $1 AND s.user_id = $3
         ORDER BY seq DESC
         LIMIT $2
       ) m ON true
 WHERE s.session_id = $1 AND s.deleted_at IS NULL`

// Tail implements memory.MessageStore with a single indexed query that
// checks ownership and reads only the n newest messages.
func (s *MessageStore) Tail(ctx context.Context, sessionID, userID string, n int) (memory.Tail, error) {
	if !validID(sessionID) {
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, memory.ErrNotFound)
	}
	rows, err := s.d.QueryContext(ctx, tailSQL, sessionID, max(n, 0), userID)
	if err != nil {
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, classify(ctx, err))
	}
	defer rows.Close()
	var (
		out   memory.Tail
		owner string
		found bool
	)
	for rows.Next() {
		var total int64
		var r messageRow
		if err := rows.Scan(&owner, &total, &out.Epoch, &r.Seq, &r.Role, &r.Content, &r.ToolCalls, &r.ToolCallID,
			&r.Name, &r.Metadata, &r.UserID, &r.CreatedAt); err != nil {
			return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, classify(ctx, err))
		}
		found = true
		out.Total = int(total)
		if !r.Seq.Valid {
			continue // the session has no message in range, or is not the caller's
		}
		m, err := r.message()
		if err != nil {
			return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, err)
		}
		out.Messages = append(out.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, classify(ctx, err))
	}
	switch {
	case !found:
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, memory.ErrNotFound)
	case owner != userID:
		return memory.Tail{}, fmt.Errorf("db: tail of session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	// Newest first from the index; the contract wants oldest first.
	slices.Reverse(out.Messages)
	return out, nil
}

// rangeSQL reads the session's owner and, only when $5 owns it, its
// messages $2 < seq <= $3, oldest first, by a forward range scan of the
// (session_id, seq) primary key; one statement, like tailSQL. LIMIT NULL
// means no limit. A missing or deleted session yields no row.
const rangeSQL = `
SELECT s.user_id AS owner, m.seq, m.role, m.content, m.tool_calls, m.tool_call_id,
       m.name, m.metadata, m.user_id, m.created_at
  FROM strata_sessions s
  LEFT JOIN LATERAL (
        SELECT ` + messageColumns + `
          FROM strata_messages
         WHERE session_id = $1 AND s.user_id = $5 AND seq > $2 AND seq <= $3
         ORDER BY seq
         LIMIT $4
       ) m ON true
 WHERE s.session_id = $1 AND s.deleted_at IS NULL
 ORDER BY m.seq`

// Range implements memory.MessageStore with a single indexed query that
// checks ownership and reads the range.
func (s *MessageStore) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]memory.Message, error) {
	if !validID(sessionID) {
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, memory.ErrNotFound)
	}
	var lim sql.NullInt64
	if limit > 0 {
		lim = sql.NullInt64{Int64: int64(limit), Valid: true}
	}
	var rows []struct {
		Owner string `db:"owner"`
		messageRow
	}
	if err := s.d.SelectContext(ctx, &rows, rangeSQL, sessionID, afterSeq, throughSeq, lim, userID); err != nil {
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, classify(ctx, err))
	}
	switch {
	case len(rows) == 0:
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, memory.ErrNotFound)
	case rows[0].Owner != userID:
		return nil, fmt.Errorf("db: range of session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	var out []memory.Message
	for _, r := range rows {
		if !r.Seq.Valid {
			continue // no message in range
		}
		m, err := r.message()
		if err != nil {
			return nil, fmt.Errorf("db: range of session %q: %w", sessionID, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// messageRow is one strata_messages row as scanned. Columns are nullable
// because the reads' outer joins may produce a row without a message.
type messageRow struct {
	Seq        sql.NullInt64  `db:"seq"`
	Role       sql.NullString `db:"role"`
	Content    sql.NullString `db:"content"`
	ToolCalls  []byte         `db:"tool_calls"`
	ToolCallID sql.NullString `db:"tool_call_id"`
	Name       sql.NullString `db:"name"`
	Metadata   []byte         `db:"metadata"`
	UserID     sql.NullString `db:"user_id"`
	CreatedAt  sql.NullTime   `db:"created_at"`
}

func (r messageRow) message() (memory.Message, error) {
	m := memory.Message{
		Seq:        r.Seq.Int64,
		Role:       parseRole(r.Role.String),
		Content:    r.Content.String,
		ToolCallID: r.ToolCallID.String,
		Name:       r.Name.String,
		UserID:     r.UserID.String,
		CreatedAt:  r.CreatedAt.Time,
	}
	if len(r.ToolCalls) > 0 {
		var tcs []toolCallJSON
		if err := json.Unmarshal(r.ToolCalls, &tcs); err != nil {
			return memory.Message{}, fmt.Errorf("message %d: tool calls: %w", m.Seq, err)
		}
		m.ToolCalls = fromToolCallsJSON(tcs)
	}
	if len(r.Metadata) > 0 {
		var md map[string]string
		if err := json.Unmarshal(r.Metadata, &md); err != nil {
			return memory.Message{}, fmt.Errorf("message %d: metadata: %w", m.Seq, err)
		}
		if len(md) > 0 {
			m.Metadata = md
		}
	}
	return m, nil
}

// parseRole maps a stored role to a memory.Role; unknown strings (which
// the table's CHECK constraint keeps out) read as memory.RoleUser.
func parseRole(s string) memory.Role {
	switch r := memory.Role(s); r {
	case memory.RoleUser, memory.RoleAssistant, memory.RoleSystem, memory.RoleTool:
		return r
	}
	return memory.RoleUser
}

// deleteLockSQL locks the live session row and reads its owner. Holding
// the lock until the commit, the deletion waits for an in-flight append,
// create or summary save of the session, and those that come later find
// the tombstone.
const deleteLockSQL = `
SELECT user_id FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL FOR UPDATE`

// deleteSessionSQL turns the locked session into a tombstone: its
// messages, its summary and its catalogue document go, and the row loses
// its owner and counters but keeps the id and the epoch, so that a summary
// save for the deleted incarnation can still tell it is gone. It runs
// after the lock, in a fresh snapshot that includes whatever committed
// while the lock was awaited. Fold leases are left alone: a fold still
// running keeps its lease until it releases it or the lease expires.
const deleteSessionSQL = `
WITH m AS (DELETE FROM strata_messages        WHERE session_id = $1),
     c AS (DELETE FROM conversation_summaries WHERE session_id = $1),
     x AS (DELETE FROM strata_session_index   WHERE session_id = $1)
UPDATE strata_sessions
   SET user_id = NULL, deleted_at = clock_timestamp(), message_count = 0,
       first_user_message = NULL, last_activity = clock_timestamp()
 WHERE session_id = $1`

// Delete implements memory.MessageStore in one transaction: the session
// row is locked and its owner checked (deleteLockSQL), then the session
// becomes a tombstone and its messages, summary and catalogue document are
// removed (deleteSessionSQL). A missing or already deleted session returns
// memory.ErrNotFound, another user's memory.ErrNotOwner, and nothing
// changes. A summary save that finishes afterwards, on any replica,
// writes nothing (see SummaryStore.Save).
func (s *MessageStore) Delete(ctx context.Context, sessionID, userID string) error {
	if !validID(sessionID) {
		return fmt.Errorf("db: delete session %q: %w", sessionID, memory.ErrNotFound)
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: delete session %q: begin: %w", sessionID, classify(ctx, err))
	}
	defer func() { _ = tx.Rollback() }()
	var owner string
	err = tx.QueryRowxContext(ctx, deleteLockSQL, sessionID).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("db: delete session %q: %w", sessionID, memory.ErrNotFound)
	case err != nil:
		return fmt.Errorf("db: delete session %q: lock: %w", sessionID, classify(ctx, err))
	case owner != userID:
		return fmt.Errorf("db: delete session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	if _, err := tx.ExecContext(ctx, deleteSessionSQL, sessionID); err != nil {
		return fmt.Errorf("db: delete session %q: %w", sessionID, classify(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: delete session %q: commit: %w", sessionID, classify(ctx, err))
	}
	return nil
}

// sessionsSQL lists a user's live sessions, most recent activity first,
// from strata_sessions_user_activity_idx; total counts all of them.
// Tombstones have no owner, so user_id = $1 never matches one.
const sessionsSQL = `
SELECT session_id, user_id, message_count, first_user_message,
       created_at, last_activity, count(*) OVER () AS total
  FROM strata_sessions
 WHERE user_id = $1 AND deleted_at IS NULL
 ORDER BY last_activity DESC, session_id
 LIMIT $2 OFFSET $3`

// emptyPreview is the preview of a session without a user message, as the
// reference shows it.
const emptyPreview = "Empty conversation"

// previewRunes is how many characters of the first user message a listing
// preview keeps before appending "...".
const previewRunes = 50

// Sessions implements memory.MessageStore: userID's sessions, empty ones
// included, most recently active first, from strata_sessions alone (one
// indexed query). limit <= 0 means no limit; a negative offset counts as
// 0. total is the number of the user's sessions, whatever the page.
func (s *MessageStore) Sessions(ctx context.Context, userID string, limit, offset int) (page []memory.SessionInfo, total int, err error) {
	rows, total, err := listSessions[sessionRow](ctx, s.d, sessionsSQL, userID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: sessions of user %q: %w", userID, classify(ctx, err))
	}
	for _, r := range rows {
		page = append(page, r.info())
	}
	return page, total, nil
}

// sessionRow is one row of a session listing; listing queries return these
// columns (and may add their own).
type sessionRow struct {
	SessionID        string         `db:"session_id"`
	UserID           string         `db:"user_id"`
	MessageCount     int64          `db:"message_count"`
	FirstUserMessage sql.NullString `db:"first_user_message"`
	CreatedAt        time.Time      `db:"created_at"`
	LastActivity     time.Time      `db:"last_activity"`
	Total            int64          `db:"total"`
}

func (r sessionRow) info() memory.SessionInfo {
	preview := emptyPreview
	if r.FirstUserMessage.Valid {
		preview = truncateRunes(r.FirstUserMessage.String, previewRunes)
		if len(preview) < len(r.FirstUserMessage.String) {
			preview += "..."
		}
	}
	return memory.SessionInfo{SessionID: r.SessionID, UserID: r.UserID, MessageCount: int(r.MessageCount),
		CreatedAt: r.CreatedAt, LastActivity: r.LastActivity, Preview: preview}
}

// listSessions runs a listing query taking ($1 user, $2 limit or NULL, $3
// offset) whose rows embed sessionRow, and returns the page with the user's
// total number of live sessions (counted separately when the page is past
// the end, where count(*) OVER () has no row to ride on).
func listSessions[R interface{ total() int64 }](ctx context.Context, d *sqlx.DB, query, userID string, limit, offset int) ([]R, int, error) {
	if !validID(userID) {
		return nil, 0, nil
	}
	var lim sql.NullInt64
	if limit > 0 {
		lim = sql.NullInt64{Int64: int64(limit), Valid: true}
	}
	var rows []R
	if err := d.SelectContext(ctx, &rows, query, userID, lim, max(offset, 0)); err != nil {
		return nil, 0, err
	}
	if len(rows) > 0 {
		return rows, int(rows[0].total()), nil
	}
	const countSQL = `SELECT count(*) FROM strata_sessions WHERE user_id = $1 AND deleted_at IS NULL`
	var n int64
	if err := d.GetContext(ctx, &n, countSQL, userID); err != nil {
		return nil, 0, err
	}
	return nil, int(n), nil
}

func (r sessionRow) total() int64 { return r.Total }

// toolCallJSON is the stored form of one llms.ToolCall, the OpenAI shape
// {"id","type","function":{"name","arguments"}}. llms.ToolCall's own JSON
// methods do not round-trip (its UnmarshalJSON drops the function), so the
// store never uses them.
type toolCallJSON struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *functionJSON `json:"function,omitempty"`
}

type functionJSON struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func toToolCallsJSON(tcs []llms.ToolCall) []toolCallJSON {
	out := make([]toolCallJSON, len(tcs))
	for i, tc := range tcs {
		out[i] = toolCallJSON{ID: tc.ID, Type: tc.Type}
		if tc.FunctionCall != nil {
			out[i].Function = &functionJSON{Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments}
		}
	}
	return out
}

func fromToolCallsJSON(tcs []toolCallJSON) []llms.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]llms.ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = llms.ToolCall{ID: tc.ID, Type: tc.Type}
		if tc.Function != nil {
			out[i].FunctionCall = &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	return out
}
