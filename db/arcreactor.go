package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// arc-reactor's tables, as its JDBC stores write them, in the connection's
// current schema: conversation_messages (its migrations V1, V4: id
// BIGSERIAL, session_id, role, content, timestamp in epoch milliseconds,
// created_at, user_id default 'anonymous'; a session's history is ordered
// by id) and conversation_summaries (V20: session_id, narrative,
// facts_json, summarized_up_to, created_at, updated_at). Strata's own
// tables are named strata_*; its conversation_summaries of before schema
// version 5 had up_to_seq instead of summarized_up_to, so the columns tell
// the two apart.

// arcReactorTablesSQL says which of arc-reactor's tables the current
// schema holds, and whether its messages carry user_id (added by V4).
const arcReactorTablesSQL = `
SELECT EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'conversation_messages'
                  AND column_name = 'role') AS messages,
       EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'conversation_messages'
                  AND column_name = 'user_id') AS user_ids,
       EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'conversation_summaries'
                  AND column_name = 'summarized_up_to') AS summaries`

// arcReactorPageSize is how many session ids one read of the list fetches.
const arcReactorPageSize = 500

type arcReactorTables struct {
	Messages  bool `db:"messages"`
	UserIDs   bool `db:"user_ids"`
	Summaries bool `db:"summaries"`
}

func (t arcReactorTables) any() bool { return t.Messages || t.Summaries }

// sessionsSQL is the query of the arc-reactor sessions after $1, in id
// order, $2 at most; count is true for their count.
func (t arcReactorTables) sessionsSQL(count bool) string {
	var parts []string
	if t.Messages {
		parts = append(parts, `SELECT DISTINCT session_id FROM conversation_messages WHERE session_id > $1`)
	}
	if t.Summaries {
		parts = append(parts, `SELECT DISTINCT session_id FROM conversation_summaries WHERE session_id > $1`)
	}
	union := strings.Join(parts, " UNION ")
	if count {
		return `SELECT count(*) FROM (` + union + `) s`
	}
	return `SELECT session_id FROM (` + union + `) s ORDER BY session_id LIMIT $2`
}

func findArcReactorTables(ctx context.Context, q sqlx.QueryerContext) (arcReactorTables, error) {
	var t arcReactorTables
	if err := sqlx.GetContext(ctx, q, &t, arcReactorTablesSQL); err != nil {
		return t, fmt.Errorf("db: find arc-reactor's tables: %w", classify(ctx, err))
	}
	return t, nil
}

// ArcReactorSessions counts the conversations held by arc-reactor's tables
// (conversation_messages and conversation_summaries) in the connection's
// current schema: what ImportArcReactor would consider. It returns 0 when
// the schema holds neither table. It only reads.
func ArcReactorSessions(ctx context.Context, d *sqlx.DB) (int, error) {
	t, err := findArcReactorTables(ctx, d)
	if err != nil || !t.any() {
		return 0, err
	}
	var n int
	if err := d.GetContext(ctx, &n, t.sessionsSQL(true), ""); err != nil {
		return 0, fmt.Errorf("db: count arc-reactor's sessions: %w", classify(ctx, err))
	}
	return n, nil
}

// Metadata keys of the messages ImportArcReactor creates: the id of the
// conversation_messages row a message came from, and the user_id arc-reactor
// recorded for it (its author: in a shared thread, not necessarily the
// session's owner).
const (
	MetadataArcReactorID   = "arc_reactor_id"
	MetadataArcReactorUser = "arc_reactor_user_id"
)

// ArcReactorImportOptions configures ImportArcReactor.
type ArcReactorImportOptions struct {
	// DryRun reads and checks every session, and reports what an import
	// would do, without writing anything.
	DryRun bool
	// Progress, when set, is called after each session with the number of
	// sessions done and the total.
	Progress func(done, total int)
	// TimeZone is the zone of the wall-clock times arc-reactor wrote in
	// its TIMESTAMP (without time zone) columns — the summaries'
	// created_at and updated_at, and a message's created_at when its
	// epoch-millisecond timestamp is missing: arc-reactor's JVM writes
	// them in the JVM's default zone. nil is UTC. Message times taken
	// from the timestamp column are instants and need no zone.
	TimeZone *time.Location
}

// ArcReactorImport is what ImportArcReactor did (or, in a dry run, would
// do).
type ArcReactorImport struct {
	// Sessions is the number of arc-reactor sessions found.
	Sessions int
	// Imported sessions were created in Strata, with Messages messages
	// and Summaries summaries in all.
	Imported, Messages, Summaries int
	// Updated are the sessions an earlier run imported that received
	// arc-reactor's messages written since (its rows with a greater id),
	// with how many each.
	Updated []ArcReactorUpdate
	// Current counts the sessions an earlier run imported that have no
	// newer message in arc-reactor.
	Current int
	// Rehomed are the sessions an earlier run imported under their first
	// author that are now shared (their id has one of the configured
	// shared-session prefixes): they were moved to the shared owner.
	Rehomed []string
	// Existing counts the sessions skipped because Strata holds a session
	// of that id that was not imported from arc-reactor (created in
	// Strata); Strata's history is left as it is.
	Existing int
	// Deleted counts the sessions an earlier run imported that were
	// deleted in Strata since: they are not created again, and a session
	// created anew in Strata under the id receives none of their rows.
	Deleted int
	// NoMessages sessions have a summary but no message left in
	// arc-reactor: they have no owner and no history, and are skipped.
	NoMessages int
	// SeveralUsers are the sessions holding messages of more than one
	// user_id (threads several people wrote in).
	SeveralUsers []ArcReactorMixed
	// UndecodableFacts counts facts of arc-reactor's facts_json that
	// could not be decoded; the session is imported without them.
	UndecodableFacts int
	// Failed are the sessions Strata refused (an invalid id, a message
	// over arc.reactor.memory.store.max-message-bytes, a session held by
	// another owner than arc-reactor's, …), with why; the others are
	// imported.
	Failed []ArcReactorFailure
}

// ArcReactorUpdate is a session that received arc-reactor's newer
// messages.
type ArcReactorUpdate struct {
	SessionID string
	Added     int
}

// ArcReactorMixed is an arc-reactor session written by several users.
type ArcReactorMixed struct {
	SessionID string
	// Users are its user_ids, in the order they first wrote.
	Users []string
	// Shared: its id has a shared-session prefix, so it is imported as a
	// shared session, which every author reads; otherwise it belongs to
	// Users[0].
	Shared bool
}

// ArcReactorFailure is a session ImportArcReactor could not import.
type ArcReactorFailure struct {
	SessionID string
	Err       error
}

// ImportArcReactor imports arc-reactor's conversations — its
// conversation_messages and conversation_summaries tables in the
// connection's current schema, which it only reads, never changes — into
// mgr, whose stores must be PostgreSQL stores on d (Strata's tables beside
// arc-reactor's), one session at a time. A schema without arc-reactor's
// tables imports nothing.
//
// A session Strata does not hold yet becomes a memory.Snapshot imported
// with mgr.Import: created, as its owner, with its messages and its
// summary in one transaction, and no fold runs before its summary is
// stored. Its messages keep arc-reactor's id order, roles (user,
// assistant, system; a tool row becomes a tool result named "tool", as
// arc-reactor replays it) and timestamps (its timestamp column), and
// carry their row id and author as metadata (MetadataArcReactorID,
// MetadataArcReactorUser). Its owner is the user_id of its first message
// ("anonymous" before arc-reactor stored user ids), or the shared owner
// when its id has one of mgr's shared-session prefixes. Its summary keeps
// the narrative and the facts (arc-reactor's Jackson JSON, extractedAt as
// an ISO-8601 string or epoch seconds). arc-reactor's summarized_up_to
// counts the messages folded into the summary from the oldest; the cursor
// is set on the message at that position when the session holds that
// many, else on none (0): no message is ever hidden behind a summary that
// does not cover it.
//
// It is incremental and safe to run again, while arc-reactor still runs
// (a cut-over): the newest arc-reactor row id imported is recorded per
// session (table strata_arc_reactor_imports), and a later run appends to
// the session, in one transaction, exactly the rows with a greater id, in
// order — none twice, and none erased in Strata since. A session imported
// under its first author before its id was declared shared is moved to the
// shared owner in the same transaction. arc-reactor's later summaries are
// not imported into a session Strata already holds: Strata folds the new
// messages itself. A session deleted in Strata after its import is not
// created again, nor fed if it is created anew under its id (Deleted); one
// created in Strata, not imported, is left alone (Existing). A session Strata refuses (see ArcReactorImport.Failed) does
// not stop the others; any other error (the database, ctx) stops the
// import and is returned with what was done so far: run it again to
// resume.
func ImportArcReactor(ctx context.Context, d *sqlx.DB, mgr *memory.Manager, opts ArcReactorImportOptions) (ArcReactorImport, error) {
	var res ArcReactorImport
	if mgr == nil {
		return res, errors.New("db: import arc-reactor: nil manager")
	}
	t, err := findArcReactorTables(ctx, d)
	if err != nil || !t.any() {
		return res, err
	}
	if res.Sessions, err = ArcReactorSessions(ctx, d); err != nil {
		return res, err
	}
	imp := arcImporter{d: d, t: t, mgr: mgr, opts: opts, cfg: mgr.Config(), res: &res}
	if err := d.GetContext(ctx, &imp.participants, participantsColumnSQL); err != nil {
		return res, fmt.Errorf("db: import arc-reactor: %w", classify(ctx, err))
	}
	if imp.opts.TimeZone == nil {
		imp.opts.TimeZone = time.UTC
	}
	done := 0
	after := ""
	for {
		var page []string
		if err := d.SelectContext(ctx, &page, t.sessionsSQL(false), after, arcReactorPageSize); err != nil {
			return res, fmt.Errorf("db: import arc-reactor: list sessions: %w", classify(ctx, err))
		}
		for _, id := range page {
			if err := imp.session(ctx, id); err != nil {
				return res, err
			}
			done++
			if opts.Progress != nil {
				opts.Progress(done, max(res.Sessions, done))
			}
		}
		if len(page) < arcReactorPageSize {
			return res, nil
		}
		after = page[len(page)-1]
	}
}

// arcImporter is one run of ImportArcReactor.
type arcImporter struct {
	d    *sqlx.DB
	t    arcReactorTables
	mgr  *memory.Manager
	cfg  memory.Config
	opts ArcReactorImportOptions
	res  *ArcReactorImport
	// participants: strata_sessions records the participants of shared
	// sessions (a participants column), which arcAuthors keeps.
	participants bool
}

// participantsColumnSQL says whether strata_sessions has a participants
// column: the authors of a shared session other than its owner.
const participantsColumnSQL = `
SELECT EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'strata_sessions'
                  AND column_name = 'participants')`

// arcAuthorsSQL makes the authors arc-reactor recorded
// (MetadataArcReactorUser) the user_id of a shared session's imported
// messages: Strata records the user writing in a shared session, not its
// owner.
const arcAuthorsSQL = `
UPDATE strata_messages SET user_id = metadata->>'arc_reactor_user_id'
 WHERE session_id = $1 AND coalesce(metadata->>'arc_reactor_user_id', '') <> ''
   AND user_id IS DISTINCT FROM metadata->>'arc_reactor_user_id'`

// arcRewrittenSQL records that a session's stored messages were
// rewritten (arcAuthorsSQL), as an erasure does.
const arcRewrittenSQL = `UPDATE strata_sessions SET erasures = erasures + 1 WHERE session_id = $1`

// arcParticipantsSQL adds a shared session's authors other than its
// owner to its participants, first writers first, up to 64 in all.
const arcParticipantsSQL = `
UPDATE strata_sessions s
   SET participants = (s.participants || ARRAY(
           SELECT x.a FROM (SELECT m.user_id AS a, min(m.seq) AS first FROM strata_messages m
                             WHERE m.session_id = $1 AND m.user_id <> s.user_id GROUP BY m.user_id) x
            WHERE x.a <> ALL (s.participants) ORDER BY x.first))[1:64]
 WHERE s.session_id = $1 AND s.deleted_at IS NULL`

// arcAuthors gives a shared session's imported messages their authors
// and, where the schema records them, its participants.
func (a *arcImporter) arcAuthors(ctx context.Context, q sqlx.ExecerContext, id string) error {
	if _, err := q.ExecContext(ctx, arcAuthorsSQL, id); err != nil {
		return err
	}
	// Stored messages were rewritten: the session's stamp changes after
	// the rewrite, so a tail a MessageStore read before it is read again
	// (see tailCache). On every call, so that a run that failed here is
	// repaired by the next.
	if _, err := q.ExecContext(ctx, arcRewrittenSQL, id); err != nil {
		return err
	}
	if !a.participants {
		return nil
	}
	_, err := q.ExecContext(ctx, arcParticipantsSQL, id)
	return err
}

// arcState is what Strata holds of an arc-reactor session: whether a live
// session of that id exists and whose it is, and the newest arc-reactor
// row id imported into it (0: none recorded).
type arcState struct {
	Owner    sql.NullString `db:"owner"`
	Live     bool           `db:"live"`
	Recorded bool           `db:"recorded"`
	LastArc  int64          `db:"last_arc_id"`
	// Recreated: the record names another incarnation than the live
	// session's (deleted and created anew in Strata since the import).
	Recreated bool `db:"recreated"`
}

// arcStateSQL reads a session's arcState; the last imported row id is the
// recorded one, else the greatest arc_reactor_id metadata of its messages
// (an import interrupted between the session's creation and the record).
const arcStateSQL = `
SELECT s.user_id AS owner, s.session_id IS NOT NULL AS live, i.session_id IS NOT NULL AS recorded,
       COALESCE(s.epoch <> i.epoch, false) AS recreated,
       COALESCE(i.last_arc_id,
                CASE WHEN s.session_id IS NOT NULL THEN
                     (SELECT max((m.metadata->>'arc_reactor_id')::bigint) FROM strata_messages m
                       WHERE m.session_id = $1 AND m.metadata->>'arc_reactor_id' ~ '^[0-9]{1,18}$')
                END, 0) AS last_arc_id
  FROM (SELECT $1::text AS id) x
  LEFT JOIN strata_sessions s ON s.session_id = x.id AND s.deleted_at IS NULL
  LEFT JOIN strata_arc_reactor_imports i ON i.session_id = x.id`

// recordArcSQL records the newest arc-reactor row id imported into the
// live session $1, with its incarnation; it never lowers the id of the
// same incarnation, and replaces the record of an earlier one.
const recordArcSQL = `
INSERT INTO strata_arc_reactor_imports AS i (session_id, last_arc_id, epoch)
SELECT $1, $2, s.epoch FROM strata_sessions s WHERE s.session_id = $1 AND s.deleted_at IS NULL
ON CONFLICT (session_id) DO UPDATE
   SET last_arc_id = CASE WHEN i.epoch = EXCLUDED.epoch THEN GREATEST(i.last_arc_id, EXCLUDED.last_arc_id)
                          ELSE EXCLUDED.last_arc_id END,
       epoch = EXCLUDED.epoch, updated_at = EXCLUDED.updated_at`

// session imports one session and records the outcome in res. It returns
// an error only for what stops the import.
func (a *arcImporter) session(ctx context.Context, id string) error {
	snap, rows, info, err := readArcReactorSession(ctx, a.d, a.t, id, a.opts.TimeZone)
	if err != nil {
		return err
	}
	a.res.UndecodableFacts += info.badFacts
	if len(snap.Messages) == 0 {
		a.res.NoMessages++
		return nil
	}
	want := owner.Of(a.cfg.SharedSessionPrefixes, id, snap.UserID)
	if len(info.users) > 1 {
		a.res.SeveralUsers = append(a.res.SeveralUsers, ArcReactorMixed{SessionID: id, Users: info.users, Shared: want == owner.Shared})
	}
	fail := func(err error) error {
		a.res.Failed = append(a.res.Failed, ArcReactorFailure{SessionID: id, Err: err})
		return nil
	}
	// Twice at most: a session created in Strata between the read of its
	// state and the import is handled as an existing one.
	for range 2 {
		st, err := a.state(ctx, id, rows)
		if err != nil {
			return err
		}
		switch {
		case st.Recorded && (!st.Live || st.Recreated):
			a.res.Deleted++
			return nil
		case st.Live && st.LastArc == 0:
			a.res.Existing++
			return nil
		case st.Live:
			return a.update(ctx, id, snap.UserID, want, st, rows)
		}
		// New in Strata.
		if err := snap.Validate(a.cfg.MaxMessageBytes); err != nil {
			return fail(err)
		}
		if !a.opts.DryRun {
			err := a.mgr.Import(ctx, snap)
			switch {
			case errors.Is(err, store.ErrSessionExists):
				continue
			case errors.Is(err, store.ErrInvalidMessage), errors.Is(err, store.ErrMessageTooLarge):
				return fail(err)
			case err != nil:
				return fmt.Errorf("db: import arc-reactor session %q: %w", id, err)
			}
			if _, err := a.d.ExecContext(ctx, recordArcSQL, id, rows[len(rows)-1].ID); err != nil {
				return fmt.Errorf("db: import arc-reactor session %q: record: %w", id, classify(ctx, err))
			}
			// A shared thread's messages are its authors' (repaired by
			// the next run if this fails).
			if want == owner.Shared {
				if err := a.arcAuthors(ctx, a.d, id); err != nil {
					return fmt.Errorf("db: import arc-reactor session %q: authors: %w", id, classify(ctx, err))
				}
			}
		}
		a.res.Imported++
		a.res.Messages += len(snap.Messages)
		if snap.Summary != nil {
			a.res.Summaries++
		}
		return nil
	}
	return fail(fmt.Errorf("%w: created in Strata during the import; run it again", store.ErrSessionExists))
}

// state reads what Strata holds of session id. A live session with no
// record of an import whose messages are exactly arc-reactor's first
// rows, in order (imported by a version of Strata that kept no record),
// is taken as imported up to the last of them.
func (a *arcImporter) state(ctx context.Context, id string, rows []arcReactorMessage) (arcState, error) {
	var st arcState
	if err := a.d.GetContext(ctx, &st, arcStateSQL, id); err != nil {
		return st, fmt.Errorf("db: import arc-reactor session %q: %w", id, classify(ctx, err))
	}
	if !st.Live || st.LastArc > 0 {
		return st, nil
	}
	var held []struct {
		Role    string `db:"role"`
		Content string `db:"content"`
	}
	if err := a.d.SelectContext(ctx, &held, `SELECT role, content FROM strata_messages WHERE session_id = $1 ORDER BY seq LIMIT $2`,
		id, len(rows)+1); err != nil {
		return st, fmt.Errorf("db: import arc-reactor session %q: %w", id, classify(ctx, err))
	}
	if len(held) == 0 || len(held) > len(rows) {
		return st, nil
	}
	for i, h := range held {
		if h.Role != arcReactorRole(rows[i].Role) || h.Content != rows[i].Content {
			return st, nil
		}
	}
	st.LastArc = rows[len(held)-1].ID
	return st, nil
}

// update brings a session an earlier run imported up to date: re-homed
// when it is now shared, and arc-reactor's rows after the last imported
// one appended, in one transaction.
func (a *arcImporter) update(ctx context.Context, id, first, want string, st arcState, rows []arcReactorMessage) error {
	rehome := st.Owner.String != want
	if rehome && (want != owner.Shared || st.Owner.String != owner.User(first)) {
		a.res.Failed = append(a.res.Failed, ArcReactorFailure{SessionID: id, Err: fmt.Errorf(
			"%w: Strata's session belongs to %q, arc-reactor's to %q", memory.ErrNotOwner, st.Owner.String, want)})
		return nil
	}
	var added int
	if a.opts.DryRun {
		for _, r := range rows {
			if r.ID > st.LastArc {
				added++
			}
		}
	} else {
		var err error
		if added, rehome, err = a.appendNewer(ctx, id, st, want, rows); err != nil {
			var fe *arcRefused
			if errors.As(err, &fe) {
				a.res.Failed = append(a.res.Failed, ArcReactorFailure{SessionID: id, Err: fe.err})
				return nil
			}
			return err
		}
	}
	if rehome {
		a.res.Rehomed = append(a.res.Rehomed, id)
	}
	if added > 0 {
		a.res.Updated = append(a.res.Updated, ArcReactorUpdate{SessionID: id, Added: added})
	} else {
		a.res.Current++
	}
	return nil
}

// arcRefused is a session update Strata refused (not an outage).
type arcRefused struct{ err error }

func (e *arcRefused) Error() string { return e.err.Error() }

// appendNewer appends, in one transaction, the rows after the session's last
// imported one, under the lock of its import record and of its session
// row, so that two runs never both append a row: it re-reads the last
// imported id under the lock. It moves the session to want when it is
// its first author's. It returns how many rows it appended and whether it
// re-homed the session.
func (a *arcImporter) appendNewer(ctx context.Context, id string, st arcState, want string, rows []arcReactorMessage) (int, bool, error) {
	fail := func(what string, err error) (int, bool, error) {
		return 0, false, fmt.Errorf("db: import arc-reactor session %q: %s: %w", id, what, classify(ctx, err))
	}
	tx, err := a.d.BeginTxx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO strata_arc_reactor_imports (session_id, last_arc_id, epoch)
		SELECT $1, $2, epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL
		ON CONFLICT (session_id) DO NOTHING`, id, st.LastArc); err != nil {
		return fail("record", err)
	}
	var rec struct {
		Last  int64 `db:"last_arc_id"`
		Epoch int64 `db:"epoch"`
	}
	if err := tx.GetContext(ctx, &rec, `SELECT last_arc_id, epoch FROM strata_arc_reactor_imports WHERE session_id = $1 FOR UPDATE`, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, &arcRefused{fmt.Errorf("%w: deleted in Strata during the import", store.ErrNotFound)}
		}
		return fail("record", err)
	}
	last := rec.Last
	var held struct {
		Owner sql.NullString `db:"user_id"`
		Epoch int64          `db:"epoch"`
	}
	err = tx.GetContext(ctx, &held, `SELECT user_id, epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL FOR UPDATE`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && held.Epoch != rec.Epoch:
		return 0, false, &arcRefused{fmt.Errorf("%w: deleted in Strata during the import", store.ErrNotFound)}
	case err != nil:
		return fail("session", err)
	}
	rehome := held.Owner.String != want
	if rehome {
		if held.Owner.String != st.Owner.String {
			return 0, false, &arcRefused{fmt.Errorf("%w: its owner changed during the import", memory.ErrNotOwner)}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE strata_sessions SET user_id = $2 WHERE session_id = $1 AND deleted_at IS NULL`, id, want); err != nil {
			return fail("re-home", err)
		}
	}
	var msgs []store.Message
	for _, r := range rows {
		if r.ID > last {
			msgs = append(msgs, arcMessage(r, a.opts.TimeZone).Stored())
		}
	}
	if len(msgs) > 0 {
		for i := range msgs {
			if err := msgs[i].Validate(a.cfg.MaxMessageBytes); err != nil {
				return 0, false, &arcRefused{fmt.Errorf("message of arc-reactor row %s: %w", msgs[i].Metadata[MetadataArcReactorID], err)}
			}
		}
		b, err := newBatch(msgs)
		if err != nil {
			return 0, false, &arcRefused{err}
		}
		created := make([]string, len(msgs))
		for i, m := range msgs {
			if !m.CreatedAt.IsZero() {
				created[i] = m.CreatedAt.UTC().Format(time.RFC3339Nano)
			}
		}
		authors := make([]string, len(msgs))
		for i, m := range msgs {
			authors[i] = want
			if u := m.Metadata[MetadataArcReactorUser]; want == owner.Shared && u != "" {
				authors[i] = u
			}
		}
		// The messages are numbered as an import numbers them: from the
		// session's counter, raised under its row lock (importMessagesSQL).
		if _, err := tx.ExecContext(ctx, importMessagesSQL, id, want,
			pq.Array(b.roles), pq.Array(b.contents), pq.Array(b.toolCalls),
			pq.Array(b.toolCallIDs), pq.Array(b.names), pq.Array(b.metadata), pq.Array(created), pq.Array(authors)); err != nil {
			return fail("messages", err)
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE strata_sessions s
			   SET message_count = s.message_count + $2, first_user_message = COALESCE(s.first_user_message, $3),
			       last_activity = GREATEST(s.last_activity, $4::timestamptz)
			 WHERE s.session_id = $1`, id, len(msgs), b.firstUser, nullTime(msgs[len(msgs)-1].CreatedAt)); err != nil {
			return fail("session", err)
		}
		if _, err := tx.ExecContext(ctx, recordArcSQL, id, rows[len(rows)-1].ID); err != nil {
			return fail("record", err)
		}
	}
	if want == owner.Shared {
		if err := a.arcAuthors(ctx, tx, id); err != nil {
			return fail("authors", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return len(msgs), rehome, nil
}

type arcReactorMessage struct {
	ID        int64         `db:"id"`
	Role      string        `db:"role"`
	Content   string        `db:"content"`
	Timestamp sql.NullInt64 `db:"ts"`
	CreatedAt sql.NullTime  `db:"created_at"`
	UserID    string        `db:"user_id"`
}

type arcReactorSummary struct {
	Narrative      string       `db:"narrative"`
	FactsJSON      []byte       `db:"facts_json"`
	SummarizedUpTo int64        `db:"summarized_up_to"`
	CreatedAt      sql.NullTime `db:"created_at"`
	UpdatedAt      sql.NullTime `db:"updated_at"`
}

type arcReactorInfo struct {
	badFacts int
	users    []string // the session's user_ids, in the order they first wrote
}

// nullTime is t, or NULL when zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// inZone is the instant of the wall-clock time t (as read from a
// TIMESTAMP without time zone) in loc.
func inZone(t time.Time, loc *time.Location) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc).UTC()
}

// readArcReactorSession reads one session in one read-only, repeatable-read
// transaction (its messages and summary as of one moment) and returns it
// as a snapshot, with its rows in id order. Wall-clock times are read in
// tz.
func readArcReactorSession(ctx context.Context, d *sqlx.DB, t arcReactorTables, id string, tz *time.Location) (*memory.Snapshot, []arcReactorMessage, arcReactorInfo, error) {
	var info arcReactorInfo
	fail := func(err error) (*memory.Snapshot, []arcReactorMessage, arcReactorInfo, error) {
		return nil, nil, info, fmt.Errorf("db: import arc-reactor: read session %q: %w", id, classify(ctx, err))
	}
	tx, err := d.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = tx.Rollback() }()
	var rows []arcReactorMessage
	if t.Messages {
		user := `'anonymous'`
		if t.UserIDs {
			user = `coalesce(user_id, 'anonymous')`
		}
		q := `SELECT id, role, content, "timestamp" AS ts, created_at, ` + user + ` AS user_id
		        FROM conversation_messages WHERE session_id = $1 ORDER BY id`
		if err := tx.SelectContext(ctx, &rows, q, id); err != nil {
			return fail(err)
		}
	}
	var sums []arcReactorSummary
	if t.Summaries {
		if err := tx.SelectContext(ctx, &sums, `
			SELECT narrative, facts_json, summarized_up_to, created_at, updated_at
			  FROM conversation_summaries WHERE session_id = $1`, id); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}

	snap := &memory.Snapshot{Version: snapshot.Version, SessionID: id, UserID: store.AnonymousUser,
		Messages: make([]snapshot.Message, 0, len(rows))}
	seen := map[string]bool{}
	for i, r := range rows {
		if i == 0 && strings.TrimSpace(r.UserID) != "" {
			snap.UserID = r.UserID
		}
		if !seen[r.UserID] {
			seen[r.UserID] = true
			info.users = append(info.users, r.UserID)
		}
		snap.Messages = append(snap.Messages, arcMessage(r, tz))
	}
	if len(sums) == 1 {
		s := sums[0]
		facts, bad := decodeArcReactorFacts(s.FactsJSON)
		info.badFacts = bad
		sm := &snapshot.Summary{Narrative: text.Clean(s.Narrative), Facts: facts}
		if k := s.SummarizedUpTo; k > 0 && k <= int64(len(rows)) {
			sm.UpToSeq = rows[k-1].ID
		}
		if s.CreatedAt.Valid {
			sm.CreatedAt = inZone(s.CreatedAt.Time, tz)
		}
		if s.UpdatedAt.Valid {
			sm.UpdatedAt = inZone(s.UpdatedAt.Time, tz)
		}
		if strings.TrimSpace(sm.Narrative) != "" || len(sm.Facts) > 0 {
			snap.Summary = sm
		}
	}
	return snap, rows, info, nil
}

// arcMessage is one conversation_messages row as a snapshot message:
// its role as arc-reactor reads it, its time from the timestamp column
// (epoch milliseconds), else from created_at read in tz, and its row id
// and author as metadata.
func arcMessage(r arcReactorMessage, tz *time.Location) snapshot.Message {
	m := snapshot.Message{Seq: r.ID, Role: arcReactorRole(r.Role), Content: r.Content,
		Metadata: map[string]string{MetadataArcReactorID: strconv.FormatInt(r.ID, 10), MetadataArcReactorUser: r.UserID}}
	switch {
	case r.Timestamp.Valid && r.Timestamp.Int64 > 0:
		m.CreatedAt = time.UnixMilli(r.Timestamp.Int64).UTC()
	case r.CreatedAt.Valid:
		m.CreatedAt = inZone(r.CreatedAt.Time, tz)
	}
	if m.Role == string(store.RoleTool) {
		m.Name = "tool"
	}
	return m
}

// arcReactorRole maps a role of conversation_messages as arc-reactor reads
// it: case-insensitive, anything unknown a user message.
func arcReactorRole(r string) string {
	switch strings.ToLower(strings.TrimSpace(r)) {
	case "assistant":
		return string(store.RoleAssistant)
	case "system":
		return string(store.RoleSystem)
	case "tool":
		return string(store.RoleTool)
	}
	return string(store.RoleUser)
}

// decodeArcReactorFacts decodes arc-reactor's facts_json, a Jackson array
// of {"key", "value", "category", "extractedAt"}: unknown fields ignored,
// a missing or unknown category GENERAL, extractedAt an ISO-8601 string
// or a number of epoch seconds (Jackson's timestamps), text made valid
// UTF-8 without NUL bytes. It returns the facts and how many elements
// could not be decoded (not an object, no key).
func decodeArcReactorFacts(raw []byte) ([]snapshot.Fact, int) {
	var elems []json.RawMessage
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return nil, 0
	}
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, 1
	}
	var facts []snapshot.Fact
	bad := 0
	for _, e := range elems {
		var f struct {
			Key         any             `json:"key"`
			Value       any             `json:"value"`
			Category    string          `json:"category"`
			ExtractedAt json.RawMessage `json:"extractedAt"`
		}
		if err := json.Unmarshal(e, &f); err != nil {
			bad++
			continue
		}
		key, value := text.Clean(jsonText(f.Key)), text.Clean(jsonText(f.Value))
		if strings.TrimSpace(key) == "" {
			bad++
			continue
		}
		sf := snapshot.Fact{Key: key, Value: value, Category: string(summary.ParseCategory(f.Category))}
		if t, ok := jacksonInstant(f.ExtractedAt); ok {
			sf.ExtractedAt = t
		}
		facts = append(facts, sf)
	}
	return facts, bad
}

// jsonText is a JSON scalar as text ("" for null and non-scalars).
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// jacksonInstant decodes a java.time.Instant as Jackson writes it: an
// ISO-8601 string, or epoch seconds with a fraction.
func jacksonInstant(raw json.RawMessage) (time.Time, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		return t.UTC(), err == nil
	}
	// A number: seconds, and up to nine digits of fraction.
	secs, frac, _ := strings.Cut(strings.TrimSpace(string(raw)), ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || sec <= 0 || sec > 1<<40 || len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
		return time.Time{}, false
	}
	ns := int64(0)
	if frac != "" {
		ns, _ = strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	}
	return time.Unix(sec, ns).UTC(), true
}
