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
		parts = append(parts, `SELECT session_id FROM conversation_messages WHERE session_id > $1`)
	}
	if t.Summaries {
		parts = append(parts, `SELECT session_id FROM conversation_summaries WHERE session_id > $1`)
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

// ArcReactorImportOptions configures ImportArcReactor.
type ArcReactorImportOptions struct {
	// DryRun reads and checks every session, and reports what an import
	// would do, without writing anything.
	DryRun bool
	// Progress, when set, is called after each session with the number of
	// sessions done and the total.
	Progress func(done, total int)
}

// ArcReactorImport is what ImportArcReactor did (or, in a dry run, would
// do).
type ArcReactorImport struct {
	// Sessions is the number of arc-reactor sessions found.
	Sessions int
	// Imported sessions were created in Strata, with Messages messages
	// and Summaries summaries in all.
	Imported, Messages, Summaries int
	// Existing sessions were skipped: Strata already holds a session of
	// that id (imported by an earlier run, or created since).
	Existing int
	// NoMessages sessions have a summary but no message left in
	// arc-reactor: they have no owner and no history, and are skipped.
	NoMessages int
	// SeveralUsers sessions hold messages of more than one user_id (a
	// shared thread): their owner is the user of the first message.
	SeveralUsers int
	// UndecodableFacts counts facts of arc-reactor's facts_json that
	// could not be decoded; the session is imported without them.
	UndecodableFacts int
	// Failed are the sessions Strata refused (an invalid id, a message
	// over arc.reactor.memory.store.max-message-bytes, …), with why; the
	// others are imported.
	Failed []ArcReactorFailure
}

// ArcReactorFailure is a session ImportArcReactor could not import.
type ArcReactorFailure struct {
	SessionID string
	Err       error
}

// ImportArcReactor imports arc-reactor's conversations — its
// conversation_messages and conversation_summaries tables in the
// connection's current schema, which it only reads, never changes — into
// mgr, one session at a time: each becomes a memory.Snapshot imported with
// mgr.Import, so a session is created, as its owner, with its messages and
// its summary in one transaction (on PostgreSQL stores), and no fold runs
// before its summary is stored. A schema without arc-reactor's tables
// imports nothing.
//
// A session's messages keep arc-reactor's id order, roles (user,
// assistant, system; a tool row becomes a tool result named "tool", as
// arc-reactor replays it) and timestamps (its timestamp column). Its owner
// is the user_id of its first message ("anonymous" before arc-reactor
// stored user ids). Its summary keeps the narrative and the facts
// (arc-reactor's Jackson JSON, extractedAt as an ISO-8601 string or epoch
// seconds). arc-reactor's summarized_up_to counts the messages folded
// into the summary from the oldest; the cursor is set on the message at
// that position when the session holds that many, else on none (0): no
// message is ever hidden behind a summary that does not cover it, and the
// facts and narrative are shown and carried into the session's next fold.
//
// It is safe to run again and to resume after an interruption: a session
// Strata already holds is skipped and counted in Existing. A session Strata
// refuses (see ArcReactorImport.Failed) does not stop the others; any
// other error (the database, ctx) stops the import and is returned with
// what was done so far.
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
	maxBytes := mgr.Config().MaxMessageBytes
	done := 0
	after := ""
	for {
		var page []string
		if err := d.SelectContext(ctx, &page, t.sessionsSQL(false), after, arcReactorPageSize); err != nil {
			return res, fmt.Errorf("db: import arc-reactor: list sessions: %w", classify(ctx, err))
		}
		for _, id := range page {
			if err := importArcReactorSession(ctx, d, t, mgr, id, maxBytes, opts.DryRun, &res); err != nil {
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

// importArcReactorSession imports one session and records the outcome in
// res. It returns an error only for what stops the import.
func importArcReactorSession(ctx context.Context, d *sqlx.DB, t arcReactorTables, mgr *memory.Manager, id string,
	maxBytes int, dryRun bool, res *ArcReactorImport) error {
	snap, info, err := readArcReactorSession(ctx, d, t, id)
	if err != nil {
		return err
	}
	res.UndecodableFacts += info.badFacts
	if len(snap.Messages) == 0 {
		res.NoMessages++
		return nil
	}
	if info.severalUsers {
		res.SeveralUsers++
	}
	if dryRun {
		if err := snap.Validate(maxBytes); err != nil {
			res.Failed = append(res.Failed, ArcReactorFailure{SessionID: id, Err: err})
			return nil
		}
		_, err := mgr.Count(ctx, id, snap.UserID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err == nil, errors.Is(err, memory.ErrNotOwner):
			res.Existing++
			return nil
		default:
			return fmt.Errorf("db: import arc-reactor session %q: %w", id, err)
		}
	} else {
		err := mgr.Import(ctx, snap)
		switch {
		case err == nil:
		case errors.Is(err, store.ErrSessionExists):
			res.Existing++
			return nil
		case errors.Is(err, store.ErrInvalidMessage), errors.Is(err, store.ErrMessageTooLarge):
			res.Failed = append(res.Failed, ArcReactorFailure{SessionID: id, Err: err})
			return nil
		default:
			return fmt.Errorf("db: import arc-reactor session %q: %w", id, err)
		}
	}
	res.Imported++
	res.Messages += len(snap.Messages)
	if snap.Summary != nil {
		res.Summaries++
	}
	return nil
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
	badFacts     int
	severalUsers bool
}

// readArcReactorSession reads one session in one read-only, repeatable-read
// transaction (its messages and summary as of one moment) and returns it
// as a snapshot.
func readArcReactorSession(ctx context.Context, d *sqlx.DB, t arcReactorTables, id string) (*memory.Snapshot, arcReactorInfo, error) {
	var info arcReactorInfo
	fail := func(err error) (*memory.Snapshot, arcReactorInfo, error) {
		return nil, info, fmt.Errorf("db: import arc-reactor: read session %q: %w", id, classify(ctx, err))
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
	for i, r := range rows {
		if i == 0 && strings.TrimSpace(r.UserID) != "" {
			snap.UserID = r.UserID
		}
		if r.UserID != rows[0].UserID {
			info.severalUsers = true
		}
		m := snapshot.Message{Seq: r.ID, Role: arcReactorRole(r.Role), Content: r.Content}
		switch {
		case r.Timestamp.Valid && r.Timestamp.Int64 > 0:
			m.CreatedAt = time.UnixMilli(r.Timestamp.Int64).UTC()
		case r.CreatedAt.Valid:
			m.CreatedAt = r.CreatedAt.Time.UTC()
		}
		if m.Role == string(store.RoleTool) {
			m.Name = "tool"
		}
		snap.Messages = append(snap.Messages, m)
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
			sm.CreatedAt = s.CreatedAt.Time.UTC()
		}
		if s.UpdatedAt.Valid {
			sm.UpdatedAt = s.UpdatedAt.Time.UTC()
		}
		if strings.TrimSpace(sm.Narrative) != "" || len(sm.Facts) > 0 {
			snap.Summary = sm
		}
	}
	return snap, info, nil
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
