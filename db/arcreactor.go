package db

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// arcReactorTableSQL reports whether the current schema holds arc-reactor's
// summary table: conversation_summaries with its summarized_up_to column
// (Strata's own table of that name, before version 5, had up_to_seq).
const arcReactorTableSQL = `
SELECT EXISTS (
    SELECT 1 FROM information_schema.columns
     WHERE table_schema = current_schema()
       AND table_name = 'conversation_summaries'
       AND column_name = 'summarized_up_to')`

// arcReactorPageSQL reads arc-reactor's summaries in pages, by session id.
const arcReactorPageSQL = `
SELECT session_id, narrative, facts_json, summarized_up_to
  FROM conversation_summaries
 WHERE session_id > $1
 ORDER BY session_id
 LIMIT $2`

// importArcReactorSQL copies one arc-reactor summary ($1 session, $2
// narrative, $3 facts, $4 summarized_up_to) into strata_summaries, in one
// statement: the live session is read and locked FOR KEY SHARE (a
// concurrent Delete waits, as for a summary save), the cursor is the seq of
// its $4-th oldest message (0 when $4 <= 0 or the session holds fewer
// messages), and an existing summary is never replaced.
const importArcReactorSQL = `
WITH s AS MATERIALIZED (
    SELECT session_id, epoch
      FROM strata_sessions
     WHERE session_id = $1 AND deleted_at IS NULL
       FOR KEY SHARE
)
INSERT INTO strata_summaries
       (session_id, epoch, narrative, facts_json, up_to_seq, version, created_at, updated_at)
SELECT s.session_id, s.epoch, $2::text, $3::jsonb,
       CASE WHEN $4::bigint > 0 THEN coalesce((
           SELECT m.seq FROM strata_messages m
            WHERE m.session_id = $1
            ORDER BY m.seq
           OFFSET greatest($4::bigint - 1, 0) LIMIT 1), 0)
       ELSE 0 END,
       1, now(), now()
  FROM s
ON CONFLICT (session_id) DO NOTHING
RETURNING 1`

// importPageSize is how many arc-reactor summaries one read fetches.
const importPageSize = 500

type arcReactorRow struct {
	SessionID      string `db:"session_id"`
	Narrative      string `db:"narrative"`
	FactsJSON      []byte `db:"facts_json"`
	SummarizedUpTo int64  `db:"summarized_up_to"`
}

// ArcReactorSummaries counts the summaries in arc-reactor's
// conversation_summaries table in the connection's current schema: what
// ImportArcReactorSummaries would consider. It returns 0 when the schema
// has no such table.
func ArcReactorSummaries(ctx context.Context, d *sqlx.DB) (int, error) {
	var exists bool
	if err := d.GetContext(ctx, &exists, arcReactorTableSQL); err != nil {
		return 0, fmt.Errorf("db: find arc-reactor summaries: %w", classify(ctx, err))
	}
	if !exists {
		return 0, nil
	}
	var n int
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM conversation_summaries`); err != nil {
		return 0, fmt.Errorf("db: count arc-reactor summaries: %w", classify(ctx, err))
	}
	return n, nil
}

// ImportArcReactorSummaries copies arc-reactor's summaries (its
// conversation_summaries table, in the connection's current schema, which
// it only reads) into Strata's, and returns how many it imported. A schema
// without that table imports nothing and returns 0, nil. Run it after
// Migrate. Running it again imports nothing twice.
//
// Each summary goes to the live Strata session of the same id, for that
// session's current epoch. Summaries of sessions Strata does not hold, and
// of sessions that already have a Strata summary, are skipped: an import
// never replaces a summary.
//
// The cursor: arc-reactor's summarized_up_to counts the messages folded
// into the summary, from the oldest of the session; Strata's cursor is the
// seq of the last message folded. The import sets it to the seq of the
// session's summarized_up_to-th oldest message, the same position, when
// the session holds that many messages. Otherwise (the session holds fewer
// messages, or summarized_up_to is 0 or negative) the positions cannot
// correspond and the cursor is 0: nothing is marked as folded, so no
// message is ever hidden behind a summary that does not cover it; the
// imported facts and narrative are shown and carried into the session's
// next fold. Facts are decoded as the summary store decodes its own (the
// same JSON shape); undecodable facts are dropped.
func ImportArcReactorSummaries(ctx context.Context, d *sqlx.DB) (n int, err error) {
	var exists bool
	if err := d.GetContext(ctx, &exists, arcReactorTableSQL); err != nil {
		return 0, fmt.Errorf("db: import arc-reactor summaries: %w", classify(ctx, err))
	}
	if !exists {
		return 0, nil
	}
	after := ""
	for {
		var page []arcReactorRow
		if err := d.SelectContext(ctx, &page, arcReactorPageSQL, after, importPageSize); err != nil {
			return n, fmt.Errorf("db: import arc-reactor summaries: read: %w", classify(ctx, err))
		}
		for _, r := range page {
			ok, err := importArcReactorSummary(ctx, d, r)
			if err != nil {
				return n, fmt.Errorf("db: import arc-reactor summary of session %q: %w", r.SessionID, err)
			}
			if ok {
				n++
			}
		}
		if len(page) < importPageSize {
			return n, nil
		}
		after = page[len(page)-1].SessionID
	}
}

// importArcReactorSummary imports one summary and reports whether it was
// written.
func importArcReactorSummary(ctx context.Context, d *sqlx.DB, r arcReactorRow) (bool, error) {
	if !validID(r.SessionID) {
		return false, nil
	}
	facts, _ := decodeFacts(r.FactsJSON) // the decodable facts
	encoded, err := encodeFacts(facts)
	if err != nil {
		return false, err
	}
	rows, err := d.QueryContext(ctx, importArcReactorSQL, r.SessionID, cleanText(r.Narrative), encoded, r.SummarizedUpTo)
	if err != nil {
		return false, classify(ctx, err)
	}
	defer rows.Close()
	wrote := rows.Next()
	if err := rows.Err(); err != nil {
		return false, classify(ctx, err)
	}
	return wrote, nil
}
