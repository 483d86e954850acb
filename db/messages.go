package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// MessageStore is the PostgreSQL store over strata_sessions,
// strata_messages and strata_summaries: it implements the whole storage
// contract, store.Store — messages, each session's summary beside them,
// and the fold lease (TryLockFold). A manager given it and
// NewSummaryStore on the same pool uses it alone (KeepsSummaries). It is
// safe for concurrent use, within one process and across processes
// sharing the database.
//
// Every method checks the caller's ownership in the same statement as the
// work it guards, or, for Delete, in a transaction that holds the
// session's row lock from the check to the commit; no owner is ever
// looked up first and acted on later. The reads of the load path (Tail,
// Snapshot) are one statement and, on a pool made by Open, one round trip
// each; a load of a session whose tail the store holds receives only what
// was stored since (see WithTailCache). By default no statement is
// prepared under a name: every one works through a connection pooler in
// transaction mode (see Open); WithPreparedStatements prepares the load and
// the append, for direct connections.
type MessageStore struct {
	d     *sqlx.DB
	opt   options
	cache *summaryCache // the summaries Snapshot read last
	tails *tailCache    // the tails the loads read last
	stmts *statements   // the prepared statements (WithPreparedStatements)
	// held counts the loads answered from the held tail (loadHeld) and
	// extended the appends added to it (extendTail), for the tests.
	held, extended atomic.Int64
}

var (
	_ memory.MessageStore = (*MessageStore)(nil)
	_ store.Store         = (*MessageStore)(nil)
)

// NewMessageStore returns a message store over d, whose schema must have
// been migrated (Migrate). The store never closes d.
func NewMessageStore(d *sqlx.DB, opts ...Option) *MessageStore {
	o := buildOptions(opts)
	return &MessageStore{d: d, opt: o, cache: newSummaryCache(o.summaryCached),
		tails: newTailCache(o.tailCached, o.tailBytes), stmts: newStatements(d, o.prepared)}
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
       message_count = 0, first_user_message = NULL, participants = '{}',
       created_at = EXCLUDED.created_at, last_activity = EXCLUDED.last_activity
 WHERE s.deleted_at IS NOT NULL
RETURNING epoch`

// Create implements memory.MessageStore: one statement creates the
// session or, when the id is in use, returns store.ErrSessionExists. The
// id of a deleted session is free again; its new incarnation gets a new
// epoch.
func (s *MessageStore) Create(ctx context.Context, sessionID, userID string) error {
	if !text.Storable(sessionID) {
		return fmt.Errorf("db: create session: %w: session id %s", store.ErrInvalidMessage, invalidID)
	}
	if !text.Storable(userID) {
		return fmt.Errorf("db: create session: %w: user id %s", store.ErrInvalidMessage, invalidID)
	}
	var epoch int64
	err := s.d.QueryRowxContext(ctx, createSQL, sessionID, userID).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("db: create session %q: %w", sessionID, store.ErrSessionExists)
	}
	if err != nil {
		return fmt.Errorf("db: create session %q: %w", sessionID, classify(ctx, err))
	}
	return nil
}

// appendSQL appends a batch of messages ($3.. column arrays, $9 first
// user message, $10 batch size) to the live session $1 as $2, in one
// statement, hence one implicit transaction and one round trip. It calls
// the function strata_append (migration 7), whose one statement PL/pgSQL
// plans once per server connection rather than on every call (the planning
// cost about as much as the statement's own work); the function holds
// exactly this statement:
//
//   - s updates the session row only when $2 owns it and it is live: the
//     ownership check is the UPDATE's own condition. The update takes the
//     row lock, held until the statement commits, which serializes appends
//     to one session across processes and keeps a concurrent Delete out.
//     A writer that had to wait for the lock re-checks the condition on
//     the row as the lock holder left it (PostgreSQL's EvalPlanQual), so
//     an append that waited for a delete finds the tombstone and stores
//     nothing.
//   - s also raises the session's seq counter (seq_counter, migration 11)
//     by the batch size, and ins inserts the batch only for the row s
//     returned (it joins s), numbered in batch order after the counter's
//     previous value: a session's seqs are dense, increase in commit order
//     and are never reused for its id (the counter survives a delete).
//     created_at is the time each row is formed, after the lock, so it
//     never goes back within a session either.
//   - The result row has the count after the append and the epoch, both
//     from s, the last seq, and, only when s updated nothing, the live
//     session's owner as the statement's snapshot saw it (NULL: missing or
//     deleted), which tells ErrNotFound from ErrNotOwner; then (migration
//     18) the session's erasures and the time the messages were stored,
//     with which the store adds them to the tail it holds (see
//     cachedTail.extended).
const appendSQL = `SELECT total, epoch, last_seq, owner, erasures, created_at FROM strata_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// maxParticipants bounds the participants recorded per session (see
// store.ParticipantLister): the first 64 authors other than its owner.
const maxParticipants = 64

// appendArgs are appendSQL's arguments for b, appended by userID.
func appendArgs(sessionID, userID string, b *batch) []any {
	return []any{sessionID, userID,
		pq.Array(b.roles), pq.Array(b.contents), pq.Array(b.toolCalls),
		pq.Array(b.toolCallIDs), pq.Array(b.names), pq.Array(b.metadata), pq.Array(b.authors),
		b.firstUser, len(b.roles), pq.Array(b.participants(userID)), maxParticipants}
}

// countSQL reads a live session's owner, count and epoch: the answer of an
// append of no messages.
const countSQL = `
SELECT user_id, message_count, epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL`

// Append implements memory.MessageStore in one statement (appendSQL): the
// ownership check, the session row's lock and counters and the insertion
// of every message happen together, or nothing does. A missing or deleted
// session returns store.ErrNotFound (only Create creates sessions),
// another user's memory.ErrNotOwner; invalid messages (see
// store.Message.Validate) and ids PostgreSQL cannot store return
// store.ErrInvalidMessage; all wrapped,
// storing nothing. With no messages Append only reads the session's count
// and epoch, changing nothing. Seq and CreatedAt of msgs are ignored: the
// store assigns them. A message's UserID is its author (userID when
// empty); authors other than userID become the session's participants
// (store.ParticipantLister), in the same statement.
func (s *MessageStore) Append(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	if !text.Storable(sessionID) {
		return store.AppendResult{}, fmt.Errorf("db: append: %w: session id %s", store.ErrInvalidMessage, invalidID)
	}
	if !text.Storable(userID) {
		return store.AppendResult{}, fmt.Errorf("db: append: %w: user id %s", store.ErrInvalidMessage, invalidID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("db: append: %w", err)
	}
	fail := func(err error) (store.AppendResult, error) {
		return store.AppendResult{}, fmt.Errorf("db: append to session %q: %w", sessionID, classify(ctx, err))
	}
	missing := func(owner sql.NullString) (store.AppendResult, error) {
		if owner.Valid && owner.String != userID {
			return store.AppendResult{}, fmt.Errorf("db: append to session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
		}
		// Missing, deleted, or deleted while the append waited for its lock.
		return store.AppendResult{}, fmt.Errorf("db: append to session %q: %w", sessionID, store.ErrNotFound)
	}

	if len(msgs) == 0 {
		var owner sql.NullString
		var total, epoch int64
		err := s.d.QueryRowxContext(ctx, countSQL, sessionID).Scan(&owner, &total, &epoch)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return missing(sql.NullString{})
		case err != nil:
			return fail(err)
		case owner.String != userID:
			return missing(owner)
		}
		return store.AppendResult{Total: int(total), Epoch: epoch}, nil
	}

	// On a connection of its own: database/sql re-runs a statement on
	// another connection when the driver reports the first one broken, which
	// lib/pq also does when the connection drops after the server committed;
	// re-running an append would store it twice. On a *sql.Conn it is never
	// re-run: a broken connection is an error (ErrUnavailable) and the
	// caller decides. The statement is one round trip and one commit,
	// unnamed (lib/pq's binary_parameters): not a named statement (see
	// namedStmt), whose literals a server would log with any refusal of
	// it, and an append's are the conversation's text.
	var (
		total, epoch, last, erasures sql.NullInt64
		owner                        sql.NullString
		at                           sql.NullTime
	)
	if p := s.stmts.append; p != nil {
		// Prepared (WithPreparedStatements): on the pool, by a Stmt that
		// onceArg keeps from running twice.
		st, err := p.get(ctx)
		if err != nil {
			return fail(err)
		}
		args := appendArgs(sessionID, userID, b)
		args[0] = &onceArg{v: sessionID}
		err = st.QueryRowContext(ctx, args...).Scan(&total, &epoch, &last, &owner, &erasures, &at)
		if errors.Is(err, errNotRerun) {
			err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		if err != nil {
			return fail(err)
		}
	} else {
		conn, err := s.d.Conn(ctx)
		if err != nil {
			return fail(err)
		}
		defer conn.Close()
		err = conn.QueryRowContext(ctx, appendSQL, appendArgs(sessionID, userID, b)...).Scan(&total, &epoch, &last, &owner, &erasures, &at)
		if err != nil {
			return fail(err)
		}
	}
	if !total.Valid {
		return missing(owner)
	}
	if erasures.Valid && at.Valid {
		s.extendTail(sessionID, userID, b, epoch.Int64, erasures.Int64, last.Int64, at.Time)
	}
	return store.AppendResult{Total: int(total.Int64), LastSeq: last.Int64, Epoch: epoch.Int64}, nil
}

// extendTail adds the messages of b, which an append by userID stored as
// seqs up to last at the time at, to the tail the store holds for the
// session when they follow it: same epoch and erasures, and the held
// counter is the one the append raised (no other writer stored a message
// in between). The added messages are what a load reads back: the
// author as stored, the stored time, and the tool calls and metadata as
// decoded from the JSON the statement stored. Otherwise the held tail is
// left as it is: the next load checks it against the session in any case.
func (s *MessageStore) extendTail(sessionID, userID string, b *batch, epoch, erasures, last int64, at time.Time) {
	held := s.tails.get(sessionID)
	n := int64(len(b.roles))
	if held == nil || held.epoch != epoch || held.erasures != erasures || held.counter != last-n {
		return
	}
	added := make([]store.Message, len(b.roles))
	for i := range added {
		r := messageRow{
			Seq:        sql.NullInt64{Int64: last - n + 1 + int64(i), Valid: true},
			Role:       sql.NullString{String: b.roles[i], Valid: true},
			Content:    sql.NullString{String: b.contents[i], Valid: true},
			ToolCallID: sql.NullString{String: b.toolCallIDs[i], Valid: true},
			Name:       sql.NullString{String: b.names[i], Valid: true},
			UserID:     sql.NullString{String: cmp.Or(b.authors[i], userID), Valid: true},
			CreatedAt:  sql.NullTime{Time: at, Valid: true},
		}
		if b.toolCalls[i] != "" {
			r.ToolCalls = []byte(b.toolCalls[i])
		}
		if b.metadata[i] != "" {
			r.Metadata = []byte(b.metadata[i])
		}
		m, err := r.message()
		if err != nil {
			s.tails.swap(sessionID, held, nil)
			return
		}
		added[i] = m
	}
	if t := held.extended(last, added); t != nil && s.tails.swap(sessionID, held, t) {
		s.extended.Add(1)
	}
}

// batch holds one Append's messages as parallel column arrays, the shape
// unnest wants.
type batch struct {
	roles, contents, toolCalls, toolCallIDs, names, metadata []string
	authors                                                  []string // "" for the owner
	firstUser                                                sql.NullString
}

// participants are the batch's authors other than owner, first writers
// first, at most maxParticipants (never nil).
func (b *batch) participants(owner string) []string {
	out := []string{}
	for _, a := range b.authors {
		if a != "" && a != owner && len(out) < maxParticipants && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func newBatch(msgs []store.Message) (*batch, error) {
	n := len(msgs)
	b := &batch{
		roles: make([]string, n), contents: make([]string, n), toolCalls: make([]string, n),
		toolCallIDs: make([]string, n), names: make([]string, n), metadata: make([]string, n),
		authors: make([]string, n),
	}
	for i, m := range msgs {
		if err := m.Validate(0); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		b.roles[i] = string(m.Role)
		b.contents[i] = m.Content
		b.toolCallIDs[i] = m.ToolCallID
		b.names[i] = m.Name
		if !text.Storable(m.UserID) {
			return nil, fmt.Errorf("message %d: %w: user id %s", i, store.ErrInvalidMessage, invalidID)
		}
		b.authors[i] = m.UserID
		var err error
		if b.toolCalls[i], err = msgjson.EncodeToolCalls(m.ToolCalls); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if b.metadata[i], err = msgjson.EncodeMetadata(m.Metadata); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Role == store.RoleUser && !b.firstUser.Valid {
			b.firstUser = sql.NullString{String: text.Cut(m.Content, firstUserMessageMax), Valid: true}
		}
	}
	return b, nil
}

// messageColumns are the strata_messages columns every message read
// selects, in the order of messageRow's fields.
const messageColumns = `seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at`

// loadSQL is the load path's one statement: a call of strata_tail
// (migration 19) with ($1 session, $2 user, $3 the number of newest messages
// to read, $4 after: only those after the summary's cursor when the summary
// belongs to the session's epoch, $5 whether to read the summary, $6..$8
// the epoch, version and updated_at of the summary the caller already
// holds, or NULL (see summaryCache), $9..$13 the stamp of the tail the
// caller already holds, or NULL (see tailCache)). The function's one
// statement reads the live session's owner, count, epoch, seq counter,
// erasures and summary_writes and, only when $2 owns it, its summary's
// identity and cursor, with its narrative and facts only when $5 and it is
// not the held one (then same is true), and its
// newest messages, by a backward walk of the (session_id, seq) primary key
// that stops after $3 rows (or at the cursor, or at the held tail: since
// is then the seq the rows follow, and no row is sent when nothing was
// stored after it): one statement, one snapshot, one round trip, so the
// ownership decision, the messages and the summary cannot disagree, and
// the cost does not grow with the session's history. The first row is the
// session's (owner set, message columns NULL), the others are messages
// (owner NULL). A missing or deleted session yields no row. PL/pgSQL plans
// the statement once per server connection, with the planner held to
// index scans, so the plan reads only the rows it returns even on a
// database nothing has analyzed yet.
const loadSQL = `SELECT * FROM strata_tail($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// loadStmt is loadSQL as a statement each server connection keeps
// prepared (see namedStmt): without WithPreparedStatements, a load is not
// parsed or planned again on a server connection that ran one before.
var loadStmt = newNamedStmt(loadSQL, "text", "text", "int", "boolean", "boolean", "bigint", "bigint", "timestamptz",
	"bigint", "bigint", "bigint", "bigint", "int")

// Tail implements memory.MessageStore with one statement (loadSQL, without
// the summary) that checks ownership and reads only the n newest messages.
func (s *MessageStore) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	t, _, err := s.load(ctx, "tail", false, false, sessionID, userID, n)
	return t, err
}

// KeepsSummaries reports whether sums is a SummaryStore of this package
// on the same pool (same database, same schema): the summaries this store
// keeps beside its sessions. store.Compose then uses the message store
// alone.
func (s *MessageStore) KeepsSummaries(sums store.SummaryStore) bool {
	ss, ok := sums.(*SummaryStore)
	return ok && ss.d == s.d
}

// Summary implements store.Store: the session's stored summary, as
// SummaryStore.Get reads it.
func (s *MessageStore) Summary(ctx context.Context, sessionID string) (*summary.Summary, error) {
	return s.summaries().Get(ctx, sessionID)
}

// SaveSummary implements store.Store with one guarded statement, as
// SummaryStore.Save.
func (s *MessageStore) SaveSummary(ctx context.Context, sm summary.Summary) error {
	return s.summaries().Save(ctx, sm)
}

// summaries is the summary store on the message store's pool and options.
func (s *MessageStore) summaries() *SummaryStore { return &SummaryStore{d: s.d, opt: s.opt} }

// Snapshot implements store.Store: Tail's result and the
// session's stored summary (nil when none), read by one
// statement (loadSQL), so the ownership decision, the messages and the
// summary come from one snapshot. The summary is returned whatever its
// epoch; the caller compares it with the tail's. Facts that cannot be
// decoded are dropped with a logged warning, as SummaryStore.Get does.
func (s *MessageStore) Snapshot(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	return s.load(ctx, "snapshot", false, true, sessionID, userID, n)
}

// SnapshotAfterSummary is Snapshot reading only the messages after the
// summary's cursor: Messages are the newest n of the session's messages
// with Seq above the returned summary's UpToSeq when that summary has the
// session's epoch (Tail.Epoch), else the newest n of all, as Snapshot's.
// Total counts all of them. Ownership, messages and summary come from one
// statement, as for Snapshot. It implements store.Store: a load then
// reads the messages its summary does not cover and no older ones.
func (s *MessageStore) SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	return s.load(ctx, "snapshot", true, true, sessionID, userID, n)
}

// load runs loadSQL for n messages (after: only those after the
// summary's cursor; withSummary: with the summary); op names the call in
// errors.
func (s *MessageStore) load(ctx context.Context, op string, after, withSummary bool, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	fail := func(err error) (store.Tail, *summary.Summary, error) {
		return store.Tail{}, nil, fmt.Errorf("db: %s of session %q: %w", op, sessionID, err)
	}
	if !text.Storable(sessionID) {
		return fail(store.ErrNotFound)
	}
	n = max(n, 0)
	var (
		known                    *cachedSummary
		knownEpoch, knownVersion sql.NullInt64
		knownUpdated             sql.NullTime
		held                     = s.tails.get(sessionID)
		heldStamp                [5]sql.NullInt64 // epoch, counter, erasures, after, limit
	)
	if withSummary {
		known = s.cache.get(sessionID)
	}
	if known != nil {
		knownEpoch = sql.NullInt64{Int64: known.epoch, Valid: true}
		knownVersion = sql.NullInt64{Int64: known.version, Valid: true}
		knownUpdated = sql.NullTime{Time: known.updatedAt, Valid: true}
	}
	if held != nil {
		t, sm, hit, err := s.loadHeld(ctx, op, after, withSummary, sessionID, userID, n, held, known)
		if hit || err != nil {
			return t, sm, err
		}
		for i, v := range [5]int64{held.epoch, held.counter, held.erasures, held.after, held.limit} {
			heldStamp[i] = sql.NullInt64{Int64: v, Valid: true}
		}
	}
	args := []any{sessionID, userID, n, after, withSummary, knownEpoch, knownVersion, knownUpdated,
		heldStamp[0], heldStamp[1], heldStamp[2], heldStamp[3], heldStamp[4]}
	var rows *sql.Rows
	var err error
	if s.stmts.load != nil {
		rows, err = s.query(ctx, s.stmts.load, loadSQL, args...)
	} else {
		var release func()
		rows, release, err = loadStmt.query(ctx, s.d, args)
		if err == nil {
			defer release() // after rows.Close
		}
	}
	if err != nil {
		return fail(classify(ctx, err))
	}
	defer rows.Close()
	type stampCols struct {
		Counter, Erasures, After, Since, Writes sql.NullInt64
	}
	var (
		out   = store.Tail{Messages: make([]store.Message, 0, min(n, 256))}
		owner sql.NullString
		sr    loadSummaryCols // from the session row
		stamp stampCols       // from the session row
		found bool
		// Scanned into, row after row: Scan overwrites every column and
		// copies what it keeps (the bytes of []byte columns included).
		rowOwner     sql.NullString
		total, epoch sql.NullInt64
		r            messageRow
		row          loadSummaryCols
		rowStamp     stampCols
	)
	for rows.Next() {
		if err := rows.Scan(&rowOwner, &total, &epoch, &rowStamp.Counter, &rowStamp.Erasures, &rowStamp.After, &rowStamp.Since,
			&r.Seq, &r.Role, &r.Content, &r.ToolCalls, &r.ToolCallID,
			&r.Name, &r.Metadata, &r.UserID, &r.CreatedAt,
			&row.Epoch, &row.Narrative, &row.Facts, &row.UpToSeq, &row.Version, &row.CreatedAt, &row.UpdatedAt, &row.Same,
			&rowStamp.Writes); err != nil {
			return fail(classify(ctx, err))
		}
		if rowOwner.Valid { // the session row
			found, owner, sr, stamp = true, rowOwner, row, rowStamp
			out.Total, out.Epoch = int(total.Int64), epoch.Int64
			continue
		}
		m, err := r.message()
		if err != nil {
			return fail(err)
		}
		out.Messages = append(out.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(ctx, err))
	}
	switch {
	case !found:
		s.tails.drop(sessionID)
		return fail(store.ErrNotFound)
	case owner.String != userID:
		return store.Tail{}, nil, fmt.Errorf("db: %s of session %q as %q: %w", op, sessionID, userID, memory.ErrNotOwner)
	}
	if stamp.Since.Valid && (held == nil || stamp.Since.Int64 != held.counter) {
		return fail(errors.New("the database confirmed a tail this store does not hold"))
	}
	slices.SortFunc(out.Messages, func(a, b store.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	s.keepTail(sessionID, held, &out, tailStamp{epoch: out.Epoch, counter: stamp.Counter.Int64, erasures: stamp.Erasures.Int64,
		writes: stamp.Writes.Int64, sum: identOf(&sr)}, stamp.After.Int64, stamp.Since, n)
	if len(out.Messages) == 0 {
		out.Messages = nil // no message, or none in range
	}
	if !withSummary || !sr.UpToSeq.Valid {
		return out, nil, nil
	}
	return out, s.summaryOf(ctx, sessionID, known, &sr), nil
}

// heldSQL is the first statement of a load of a session whose tail the
// store holds (see loadHeld): the live session's owner, count and stamp
// (epoch, seq counter, erasures, summary_writes) by the strata_sessions
// primary key. The stamp covers the summary too (see cachedTail), so the
// summary's row is not read. Plain SQL, no function: one primary-key
// lookup, which PostgreSQL plans in a few microseconds and Citus routes to
// one shard by its fast path. A missing or deleted session yields no row.
const heldSQL = `
SELECT user_id, message_count, epoch, seq_counter, erasures, summary_writes
  FROM strata_sessions
 WHERE session_id = $1 AND deleted_at IS NULL`

// heldStmt is heldSQL as a statement each server connection keeps
// prepared (see namedStmt): without WithPreparedStatements, a held load's
// check is not parsed or planned again on a server connection that ran
// it before, through a transaction-mode pooler too.
var heldStmt = newNamedStmt(heldSQL, "text")

// loadHeld answers a load (see load) from held, the tail the store holds
// for the session, and known, the summary it holds, when heldSQL shows
// that they are still the stored ones: the session's epoch, seq counter,
// erasures and summary_writes are held's (no message was stored, erased or
// replaced, and no summary saved or deleted, since it was read; see
// cachedTail), the load's cursor and limit are within held's, and, when
// the load wants the summary and held's read found one, known is that
// summary. The result then comes from one statement's snapshot (heldSQL's,
// which also decides ownership) and data that snapshot proves current;
// hit is false otherwise, and the caller reads the session by loadSQL,
// whose own snapshot gives the whole result. A missing session returns
// store.ErrNotFound, another user's memory.ErrNotOwner, as loadSQL's
// answer does.
func (s *MessageStore) loadHeld(ctx context.Context, op string, after, withSummary bool, sessionID, userID string, n int,
	held *cachedTail, known *cachedSummary) (t store.Tail, sm *summary.Summary, hit bool, err error) {
	var (
		owner                                   sql.NullString
		total, epoch, counter, erasures, writes int64
	)
	dest := []any{&owner, &total, &epoch, &counter, &erasures, &writes}
	if p := s.stmts.held; p != nil {
		st, perr := p.get(ctx)
		if perr != nil {
			return t, nil, false, fmt.Errorf("db: %s of session %q: %w", op, sessionID, classify(ctx, perr))
		}
		err = st.QueryRowContext(ctx, sessionID).Scan(dest...)
	} else {
		err = heldStmt.queryRow(ctx, s.d, []any{sessionID}, dest...)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		s.tails.drop(sessionID)
		return t, nil, false, fmt.Errorf("db: %s of session %q: %w", op, sessionID, store.ErrNotFound)
	case err != nil:
		return t, nil, false, fmt.Errorf("db: %s of session %q: %w", op, sessionID, classify(ctx, err))
	case owner.String != userID:
		return t, nil, false, fmt.Errorf("db: %s of session %q as %q: %w", op, sessionID, userID, memory.ErrNotOwner)
	}
	var cursor int64
	if after {
		cursor = held.sum.cursor(epoch)
	}
	if held.counter != counter {
		// An append that committed before this statement's snapshot may
		// have extended the entry since it was taken (its writer goes on
		// while a fold plans): the snapshot checks whichever is held now.
		if now := s.tails.get(sessionID); now != nil && now.counter == counter {
			held = now
		}
	}
	if held.epoch != epoch || held.counter != counter || held.erasures != erasures || held.writes != writes ||
		held.after > cursor || int64(n) > held.limit {
		return t, nil, false, nil
	}
	withSummary = withSummary && held.sum.ok
	if withSummary && !known.is(held.sum) {
		return t, nil, false, nil // the summary is not the one held: loadSQL sends it
	}
	s.held.Add(1)
	t = store.Tail{Total: int(total), Epoch: epoch}
	if base := held.newest(cursor, n); len(base) > 0 {
		t.Messages = make([]store.Message, len(base))
		for i, m := range base {
			t.Messages[i] = m.Clone()
		}
	}
	if !withSummary {
		return t, nil, true, nil
	}
	return t, known.summary(sessionID, held.sum), true, nil
}

// loadSummaryCols are the summary columns of a load's answer (loadSQL's):
// Narrative and Facts are NULL when Same, the summary the caller holds.
type loadSummaryCols struct {
	Epoch, UpToSeq, Version sql.NullInt64
	Narrative               sql.NullString
	Facts                   []byte
	CreatedAt, UpdatedAt    sql.NullTime
	Same                    sql.NullBool
}

// summaryOf is the summary a load read (sr), from known, the one the
// store holds, when it is the same, else decoded from sr and then held.
// Facts that cannot be decoded are dropped with a logged warning, as
// SummaryStore.Get does.
func (s *MessageStore) summaryOf(ctx context.Context, sessionID string, known *cachedSummary, sr *loadSummaryCols) *summary.Summary {
	var cs *cachedSummary
	if sr.Same.Bool && known != nil {
		cs = known // unchanged since this store read it: not sent, not decoded
	} else {
		l, ferr := decodeLedger(sr.Facts)
		if ferr != nil {
			s.opt.logger.WarnContext(ctx, "db: facts of a stored summary could not be decoded; dropping them",
				"session_id", sessionID, "kept", len(l.facts), "error", ferr)
		}
		cs = &cachedSummary{epoch: sr.Epoch.Int64, version: sr.Version.Int64, updatedAt: sr.UpdatedAt.Time,
			narrative: sr.Narrative.String, ledger: l}
		s.cache.put(sessionID, cs)
	}
	return cs.summary(sessionID, identOf(sr))
}

// keepTail completes out, whose messages are the rows of a load that
// asked for n messages, from held, the tail the load named, when the
// database confirmed it (since: the rows are the messages stored after
// since, held's counter), and caches the result, read after the cursor
// after, with its stamp st. An unchanged tail keeps its entry.
func (s *MessageStore) keepTail(sessionID string, held *cachedTail, out *store.Tail, st tailStamp, after int64, since sql.NullInt64, n int) {
	fresh := out.Messages
	var base []store.Message // shared with the cache
	if since.Valid {
		base = held.newest(after, n-len(fresh))
		out.Messages = make([]store.Message, 0, len(base)+len(fresh))
		for _, m := range base {
			out.Messages = append(out.Messages, m.Clone())
		}
		out.Messages = append(out.Messages, fresh...)
		// held, followed by the rows when they are all the messages
		// stored since (as an append extends it), with the new stamp:
		// it keeps its own cursor and limit, which may answer more loads
		// than this one's.
		next := held
		if len(fresh) > 0 {
			added := make([]store.Message, len(fresh))
			for i, m := range fresh {
				added[i] = m.Clone()
			}
			next = held.extended(st.counter, added)
		}
		switch {
		case next == held && held.writes == st.writes && held.sum.equal(st.sum):
			return // nothing new: held still answers this load
		case next != nil && n > 0:
			s.tails.putRead(sessionID, next.restamped(st.writes, st.sum))
			return
		}
	}
	if n <= 0 {
		return
	}
	kept := make([]store.Message, 0, len(base)+len(fresh))
	kept = append(kept, base...)
	for _, m := range fresh {
		kept = append(kept, m.Clone())
	}
	s.tails.putRead(sessionID, newCachedTail(kept, st, after, n))
}

// rangeSQL reads the session's owner and, only when $5 owns it, its
// messages $2 < seq <= $3, oldest first, by a forward range scan of the
// (session_id, seq) primary key; one statement, like loadSQL. LIMIT NULL
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
func (s *MessageStore) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]store.Message, error) {
	if !text.Storable(sessionID) {
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, store.ErrNotFound)
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
		return nil, fmt.Errorf("db: range of session %q: %w", sessionID, store.ErrNotFound)
	case rows[0].Owner != userID:
		return nil, fmt.Errorf("db: range of session %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	var out []store.Message
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

func (r messageRow) message() (store.Message, error) {
	m := store.Message{
		Seq:        r.Seq.Int64,
		Role:       parseRole(r.Role.String),
		Content:    r.Content.String,
		ToolCallID: r.ToolCallID.String,
		Name:       r.Name.String,
		UserID:     r.UserID.String,
		CreatedAt:  keptTime(r.CreatedAt.Time),
	}
	var err error
	if m.ToolCalls, err = msgjson.DecodeToolCalls(r.ToolCalls); err != nil {
		return store.Message{}, fmt.Errorf("message %d: %w", m.Seq, err)
	}
	if m.Metadata, err = msgjson.DecodeMetadata(r.Metadata); err != nil {
		return store.Message{}, fmt.Errorf("message %d: %w", m.Seq, err)
	}
	return m, nil
}

// parseRole maps a stored role to a store.Role; unknown strings (which
// the table's CHECK constraint keeps out) read as store.RoleUser.
func parseRole(s string) store.Role {
	switch r := store.Role(s); r {
	case store.RoleUser, store.RoleAssistant, store.RoleSystem, store.RoleTool:
		return r
	}
	return store.RoleUser
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
     c AS (DELETE FROM strata_summaries       WHERE session_id = $1),
     x AS (DELETE FROM strata_session_index   WHERE session_id = $1),
     j AS (DELETE FROM strata_journals        WHERE session_id = $1),
     r AS (DELETE FROM strata_journal_records WHERE session_id = $1)
UPDATE strata_sessions
   SET user_id = NULL, deleted_at = now(), message_count = 0,
       first_user_message = NULL, participants = '{}', last_activity = now()
 WHERE session_id = $1`

// Delete implements memory.MessageStore in one transaction: the session
// row is locked and its owner checked (deleteLockSQL), then the session
// becomes a tombstone and its messages, summary and catalogue document are
// removed (deleteSessionSQL). A missing or already deleted session returns
// store.ErrNotFound, another user's memory.ErrNotOwner, and nothing
// changes. A summary save that finishes afterwards, on any replica,
// writes nothing (see SummaryStore.Save).
func (s *MessageStore) Delete(ctx context.Context, sessionID, userID string) error {
	if !text.Storable(sessionID) {
		return fmt.Errorf("db: delete session %q: %w", sessionID, store.ErrNotFound)
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
		return fmt.Errorf("db: delete session %q: %w", sessionID, store.ErrNotFound)
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
	s.cache.drop(sessionID)
	s.tails.drop(sessionID)
	return nil
}

// sessionsSQL lists a user's live sessions, most recent activity first:
// strata_sessions_user_idx finds them and they are sorted by last_activity
// (which is not indexed, so that appends update the session row in place,
// as HOT updates); the cost grows with the user's number of sessions, not
// with anyone else's. total counts all of them.
// Tombstones have no owner, so user_id = $1 never matches one.
const sessionsSQL = `
SELECT session_id, user_id, message_count, first_user_message,
       created_at, last_activity, count(*) OVER () AS total
  FROM strata_sessions
 WHERE user_id = $1 AND deleted_at IS NULL
 ORDER BY last_activity DESC, session_id
 LIMIT $2 OFFSET $3`

// Sessions implements memory.MessageStore: userID's sessions, empty ones
// included, most recently active first, from strata_sessions alone (one
// indexed query). limit <= 0 means no limit; a negative offset counts as
// 0. total is the number of the user's sessions, whatever the page.
func (s *MessageStore) Sessions(ctx context.Context, userID string, limit, offset int) (page []store.SessionInfo, total int, err error) {
	rows, total, err := listSessions[sessionRow](ctx, s.d, sessionsSQL, userID, "", limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: sessions of user %q: %w", userID, classify(ctx, err))
	}
	for _, r := range rows {
		page = append(page, r.info())
	}
	return page, total, nil
}

// participantSessionsSQL is sessionsSQL for the sessions of $1 that $4
// wrote in.
const participantSessionsSQL = `
SELECT session_id, user_id, message_count, first_user_message,
       created_at, last_activity, count(*) OVER () AS total
  FROM strata_sessions
 WHERE user_id = $1 AND participants @> ARRAY[$4::text] AND deleted_at IS NULL
 ORDER BY last_activity DESC, session_id
 LIMIT $2 OFFSET $3`

var _ store.ParticipantLister = (*MessageStore)(nil)

// ParticipantSessions implements store.ParticipantLister in one query, in
// the order of Sessions. At most 64 participants are recorded per
// session, the first to write.
func (s *MessageStore) ParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) (page []store.SessionInfo, total int, err error) {
	if participant == "" || participant == ownerID {
		return nil, 0, nil
	}
	rows, total, err := listSessions[sessionRow](ctx, s.d, participantSessionsSQL, ownerID, participant, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: sessions of %q with %q: %w", ownerID, participant, classify(ctx, err))
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

func (r sessionRow) info() store.SessionInfo {
	preview := text.Preview(r.FirstUserMessage.String, r.FirstUserMessage.Valid)
	return store.SessionInfo{SessionID: r.SessionID, UserID: r.UserID, MessageCount: int(r.MessageCount),
		CreatedAt: keptTime(r.CreatedAt), LastActivity: keptTime(r.LastActivity), Preview: preview}
}

// listSessions runs a listing query taking ($1 user, $2 limit or NULL, $3
// offset, and $4 participant when participant is not "") whose rows embed
// sessionRow, and returns the page with the total number of live sessions
// listed (counted separately when the page is past the end, where
// count(*) OVER () has no row to ride on).
func listSessions[R interface{ total() int64 }](ctx context.Context, d *sqlx.DB, query, userID, participant string, limit, offset int) ([]R, int, error) {
	if !text.Storable(userID) || !text.Storable(participant) {
		return nil, 0, nil
	}
	var lim sql.NullInt64
	if limit > 0 {
		lim = sql.NullInt64{Int64: int64(limit), Valid: true}
	}
	args := []any{userID, lim, max(offset, 0)}
	countSQL, countArgs := `SELECT count(*) FROM strata_sessions WHERE user_id = $1 AND deleted_at IS NULL`, []any{userID}
	if participant != "" {
		args = append(args, participant)
		countSQL = `SELECT count(*) FROM strata_sessions WHERE user_id = $1 AND participants @> ARRAY[$2::text] AND deleted_at IS NULL`
		countArgs = append(countArgs, participant)
	}
	var rows []R
	if err := d.SelectContext(ctx, &rows, query, args...); err != nil {
		return nil, 0, err
	}
	if len(rows) > 0 {
		return rows, int(rows[0].total()), nil
	}
	var n int64
	if err := d.GetContext(ctx, &n, countSQL, countArgs...); err != nil {
		return nil, 0, err
	}
	return nil, int(n), nil
}

func (r sessionRow) total() int64 { return r.Total }

// keptTime is a time read from the database as the stores keep times
// (store.NormalTime): a row written before times outside the years 1 to
// 9999 were refused gives the nearest time inside them, which JSON can
// write, rather than break every read of its session.
func keptTime(t time.Time) time.Time {
	n, _ := store.NormalTime(t)
	return n
}
