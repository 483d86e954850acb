package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
)

// MessageStore is the PostgreSQL memory.MessageStore. It also implements
// memory.FoldLocker (see TryLockFold) and memory.SessionLister. It is safe for concurrent use, within
// one process and across processes sharing the database.
type MessageStore struct {
	d   *sqlx.DB
	opt options
}

var (
	_ memory.MessageStore  = (*MessageStore)(nil)
	_ memory.FoldLocker    = (*MessageStore)(nil)
	_ memory.SessionLister = (*MessageStore)(nil)
)

// NewMessageStore returns a message store over d, whose schema must have
// been migrated (Migrate). The store never closes d.
func NewMessageStore(d *sqlx.DB, opts ...Option) memory.MessageStore {
	return newMessageStore(d, opts...)
}

func newMessageStore(d *sqlx.DB, opts ...Option) *MessageStore {
	return &MessageStore{d: d, opt: buildOptions(opts)}
}

// firstUserMessageMax caps, in characters, the copy of a session's first
// user message kept in strata_sessions for session listings.
const firstUserMessageMax = 500

// appendSessionSQL creates the session row owned by $2, or — when it exists
// and $2 owns it — adds the batch to its count. Either way the row is now
// locked until the transaction ends, which serializes appends to one
// session across processes. No row comes back when another user owns the
// session.
const appendSessionSQL = `
INSERT INTO strata_sessions AS s (session_id, user_id, message_count, first_user_message)
VALUES ($1, $2, $3, $4)
ON CONFLICT (session_id) DO UPDATE
   SET message_count      = s.message_count + EXCLUDED.message_count,
       last_activity      = now(),
       first_user_message = COALESCE(s.first_user_message, EXCLUDED.first_user_message)
 WHERE s.user_id = EXCLUDED.user_id
RETURNING message_count`

// appendMessagesSQL inserts the whole batch in one statement. seq defaults
// to the global sequence and is drawn in ord order, after the session row
// lock above was taken.
const appendMessagesSQL = `
WITH ins AS (
    INSERT INTO strata_messages
           (session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id)
    SELECT $1, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
           b.name, NULLIF(b.metadata, '')::jsonb, $2
      FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           WITH ORDINALITY AS b(role, content, tool_calls, tool_call_id, name, metadata, ord)
     ORDER BY b.ord
    RETURNING seq
)
SELECT max(seq) FROM ins`

// ownerSQL reads a session's owner without locking.
const ownerSQL = `SELECT user_id FROM strata_sessions WHERE session_id = $1`

// Append implements memory.MessageStore. The batch is written in one
// transaction: the session row (created if needed, owned by its first
// writer) is locked, ownership is checked in SQL, every message is inserted
// by one statement and the session's count is updated, or nothing is.
// Invalid messages (see memory.Message.Validate) return
// memory.ErrInvalidMessage and another user's session memory.ErrNotOwner,
// both wrapped, storing nothing. Seq, UserID and CreatedAt of msgs are
// ignored: the store assigns them.
func (s *MessageStore) Append(ctx context.Context, sessionID, userID string, msgs ...memory.Message) (memory.AppendResult, error) {
	if !validID(sessionID) {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w: session id is not valid UTF-8 or contains a NUL byte", memory.ErrInvalidMessage)
	}
	if !validID(userID) {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w: user id is not valid UTF-8 or contains a NUL byte", memory.ErrInvalidMessage)
	}
	if len(msgs) == 0 {
		return s.appendNothing(ctx, sessionID, userID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append: %w", err)
	}

	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: begin: %w", sessionID, err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	var total int64
	err = tx.QueryRowxContext(ctx, appendSessionSQL, sessionID, userID, len(msgs), b.firstUser).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	if err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: lock session: %w", sessionID, err)
	}
	var last sql.NullInt64
	err = tx.QueryRowxContext(ctx, appendMessagesSQL, sessionID, userID,
		pq.Array(b.roles), pq.Array(b.contents), pq.Array(b.toolCalls),
		pq.Array(b.toolCallIDs), pq.Array(b.names), pq.Array(b.metadata)).Scan(&last)
	if err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: insert messages: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: commit: %w", sessionID, err)
	}
	return memory.AppendResult{Total: int(total), LastSeq: last.Int64}, nil
}

// appendNothing answers an empty Append: nothing is written, the session's
// current count is reported, and another user's session is still refused.
func (s *MessageStore) appendNothing(ctx context.Context, sessionID, userID string) (memory.AppendResult, error) {
	const q = `SELECT user_id, message_count FROM strata_sessions WHERE session_id = $1`
	var owner string
	var total int64
	err := s.d.QueryRowxContext(ctx, q, sessionID).Scan(&owner, &total)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return memory.AppendResult{}, nil
	case err != nil:
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q: %w", sessionID, err)
	case owner != userID:
		return memory.AppendResult{}, fmt.Errorf("db: append to session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	return memory.AppendResult{Total: int(total)}, nil
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

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// Owner implements memory.MessageStore: the session's first writer, or ""
// when the session is unknown.
func (s *MessageStore) Owner(ctx context.Context, sessionID string) (string, error) {
	if !validID(sessionID) {
		return "", nil
	}
	var owner string
	err := s.d.QueryRowxContext(ctx, ownerSQL, sessionID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("db: owner of session %q: %w", sessionID, err)
	}
	return owner, nil
}

// messageColumns are the columns every message read selects, in the order
// scanMessage expects.
const messageColumns = `seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at`

// tailSQL reads the count and the newest $2 messages in one statement (one
// snapshot, one round trip). It walks the (session_id, seq) primary key
// backwards and stops after $2 rows, so its cost does not grow with the
// session's history. A session without messages in range yields one row
// of NULL message columns; an unknown session yields no row.
const tailSQL = `
SELECT s.message_count, m.seq, m.role, m.content, m.tool_calls, m.tool_call_id,
       m.name, m.metadata, m.user_id, m.created_at
  FROM strata_sessions s
  LEFT JOIN LATERAL (
        SELECT ` + messageColumns + `
          FROM strata_messages
         WHERE session_id = $1
         ORDER BY seq DESC
         LIMIT $2
       ) m ON true
 WHERE s.session_id = $1`

// Tail implements memory.MessageStore with a single indexed query that
// reads only the n newest messages.
func (s *MessageStore) Tail(ctx context.Context, sessionID string, n int) (memory.Tail, error) {
	if !validID(sessionID) {
		return memory.Tail{}, nil
	}
	if n < 0 {
		n = 0
	}
	rows, err := s.d.QueryContext(ctx, tailSQL, sessionID, n)
	if err != nil {
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, err)
	}
	defer rows.Close()
	var out memory.Tail
	for rows.Next() {
		var total int64
		var r messageRow
		if err := rows.Scan(&total, &r.Seq, &r.Role, &r.Content, &r.ToolCalls, &r.ToolCallID,
			&r.Name, &r.Metadata, &r.UserID, &r.CreatedAt); err != nil {
			return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, err)
		}
		out.Total = int(total)
		if !r.Seq.Valid {
			continue // the session has no message in range
		}
		m, err := r.message()
		if err != nil {
			return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, err)
		}
		out.Messages = append(out.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return memory.Tail{}, fmt.Errorf("db: tail of session %q: %w", sessionID, err)
	}
	// Newest first from the index; the contract wants oldest first.
	for i, j := 0, len(out.Messages)-1; i < j; i, j = i+1, j-1 {
		out.Messages[i], out.Messages[j] = out.Messages[j], out.Messages[i]
	}
	return out, nil
}

// rangeSQL reads messages afterSeq < seq <= throughSeq, oldest first, by a
// forward range scan of the (session_id, seq) primary key. LIMIT NULL means
// no limit.
const rangeSQL = `
SELECT ` + messageColumns + `
  FROM strata_messages
 WHERE session_id = $1 AND seq > $2 AND seq <= $3
 ORDER BY seq
 LIMIT $4`

// Range implements memory.MessageStore.
func (s *MessageStore) Range(ctx context.Context, sessionID string, afterSeq, throughSeq int64, limit int) ([]memory.Message, error) {
	if !validID(sessionID) || throughSeq <= afterSeq {
		return nil, nil
	}
	var lim sql.NullInt64
	if limit > 0 {
		lim = sql.NullInt64{Int64: int64(limit), Valid: true}
	}
	var rows []messageRow
	if err := s.d.SelectContext(ctx, &rows, rangeSQL, sessionID, afterSeq, throughSeq, lim); err != nil {
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]memory.Message, len(rows))
	for i, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, fmt.Errorf("db: range of session %q: %w", sessionID, err)
		}
		out[i] = m
	}
	return out, nil
}

// messageRow is one strata_messages row as scanned. Columns are nullable
// because Tail's outer join may produce a row without a message.
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
		Role:       memory.ParseRole(r.Role.String),
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

// deleteSessionLockSQL locks the session row first, so the deletion waits
// for an in-flight append or summary save of the session and those that
// come later see the session gone.
const deleteSessionLockSQL = `SELECT 1 FROM strata_sessions WHERE session_id = $1 FOR UPDATE`

// deleteSessionSQL removes everything stored for the session. It runs
// after the lock, in a fresh snapshot that includes whatever committed
// while the lock was awaited.
const deleteSessionSQL = `
WITH m AS (DELETE FROM strata_messages        WHERE session_id = $1),
     c AS (DELETE FROM conversation_summaries WHERE session_id = $1),
     l AS (DELETE FROM strata_fold_leases     WHERE session_id = $1)
DELETE FROM strata_sessions WHERE session_id = $1`

// Delete implements memory.MessageStore: the session's messages, its
// summary, its fold lease and its ownership go in one transaction. A
// summary save that finishes afterwards writes nothing, because the message
// at its cursor is gone (and seq numbers are never reused).
func (s *MessageStore) Delete(ctx context.Context, sessionID string) error {
	if !validID(sessionID) {
		return nil
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: delete session %q: begin: %w", sessionID, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, deleteSessionLockSQL, sessionID); err != nil {
		return fmt.Errorf("db: delete session %q: lock: %w", sessionID, err)
	}
	if _, err := tx.ExecContext(ctx, deleteSessionSQL, sessionID); err != nil {
		return fmt.Errorf("db: delete session %q: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: delete session %q: commit: %w", sessionID, err)
	}
	return nil
}

// sessionsSQL lists a user's sessions, most recent activity first, from
// strata_sessions_user_activity_idx; total counts all of them.
const sessionsSQL = `
SELECT session_id, user_id, message_count, first_user_message,
       created_at, last_activity, count(*) OVER () AS total
  FROM strata_sessions
 WHERE user_id = $1
 ORDER BY last_activity DESC, session_id
 LIMIT $2 OFFSET $3`

// emptyPreview is the preview of a session without a user message, as the
// reference shows it.
const emptyPreview = "Empty conversation"

// Sessions implements memory.SessionLister: userID's sessions, most
// recently active first, from strata_sessions alone (one indexed query).
// limit <= 0 means no limit; a negative offset counts as 0. total is the
// number of the user's sessions, whatever the page.
func (s *MessageStore) Sessions(ctx context.Context, userID string, limit, offset int) (page []memory.SessionInfo, total int, err error) {
	rows, total, err := listSessions[sessionRow](ctx, s.d, sessionsSQL, userID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: sessions of user %q: %w", userID, err)
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
		preview = memory.Preview(r.FirstUserMessage.String)
	}
	return memory.SessionInfo{SessionID: r.SessionID, UserID: r.UserID, MessageCount: int(r.MessageCount),
		CreatedAt: r.CreatedAt, LastActivity: r.LastActivity, Preview: preview}
}

// listSessions runs a listing query taking ($1 user, $2 limit or NULL, $3
// offset) whose rows embed sessionRow, and returns the page with the user's
// total number of sessions (counted separately when the page is past the
// end, where count(*) OVER () has no row to ride on).
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
	const countSQL = `SELECT count(*) FROM strata_sessions WHERE user_id = $1`
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
