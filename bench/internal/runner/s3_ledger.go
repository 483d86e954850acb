package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// ledgerTailSQL is the baseline of the full-ledger comparison: the newest
// 10 messages of a session by one indexed query, nothing else.
const ledgerTailSQL = `
SELECT seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at
  FROM strata_messages
 WHERE session_id = $1
 ORDER BY seq DESC
 LIMIT 10`

// runFullLedger compares, on PostgreSQL, LoadHistory of a long session
// whose summary holds a full ledger with one indexed 10-row tail query, on
// a freshly created database right after the session was written and after
// ANALYZE, directly and through the pooler when the run has one.
func runFullLedger(ctx context.Context, r *runner, out *sectionOut) error {
	cfg := parityConfig()
	n := r.p.ledgerMessages
	out.printf("\n### Full ledger, fresh database, direct and through PgBouncer\n\n")
	out.printf("What a long conversation looks like: one session of %s messages, appended through `MessageStore.Append`, whose stored summary holds a full ledger (%d facts with their provenance, a narrative of about %d tokens, the caps) and covers everything before the verbatim window. Each row is a database created for it (`CREATE DATABASE`, migrated), with autovacuum kept off its tables so that nothing analyzes them while the *fresh* rows are measured (checked afterwards); the *analyzed* rows follow an `ANALYZE`. `LoadHistory` (hierarchical, parity policy) and its baseline, one indexed query for the newest 10 messages on the same pool, run call by call in turn (%d warm-up rounds, then at least %d rounds and %s). Through PgBouncer: transaction mode, `ignore_startup_parameters = extra_float_digits` only, the schema migrated over the direct URL. **Goal: `LoadHistory` p50 ≤ 1.5 × the tail query's.**\n\n",
		fmtInt(n), dbtest.FullLedgerFacts, summary.DefaultMaxNarrativeTokens, r.p.loadWarm, r.p.loadMinOps, r.p.loadMinTime)
	var tbl [][]string
	for _, via := range []string{"direct", "PgBouncer"} {
		if via == "PgBouncer" && r.opts.PoolerURL == "" {
			out.printf("> **PgBouncer: skipped** — no pooler URL (`-pgbouncer-url`, default `$STRATA_PGBOUNCER_URL`, which `scripts/with-postgres.sh` sets when it starts one).\n\n")
			continue
		}
		r.progress("  full ledger: %s, seeding %s messages", via, fmtInt(n))
		bd, err := r.newDatabase(ctx, "ledger")
		if err != nil {
			out.printf("> **%s: skipped** — the scenario needs a database of its own: %v\n\n", via, err)
			continue
		}
		rows, err := func() ([][]string, error) {
			defer bd.drop()
			url := bd.direct
			if via == "PgBouncer" {
				url = bd.pooled
			}
			return measureFullLedger(ctx, r, out, bd.direct, url, via, cfg, n)
		}()
		if err != nil {
			return fmt.Errorf("full ledger, %s: %w", via, err)
		}
		tbl = append(tbl, rows...)
	}
	out.printf("%s", r.env.provenance(true))
	out.printf("%s\n", mdTable([]string{"connection", "database", "`LoadHistory` p50", "tail query p50", "ratio of p50s", "`LoadHistory` p99"}, tbl))
	return nil
}

// measureFullLedger seeds the session on the database of direct (reached
// through url) and measures it fresh, then analyzed; it returns the table
// rows and writes the headlines.
func measureFullLedger(ctx context.Context, r *runner, so *sectionOut, direct, url, via string, cfg memory.Config, n int) ([][]string, error) {
	admin, err := db.Open(ctx, direct)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	for _, tbl := range []string{"strata_sessions", "strata_messages", "strata_summaries"} {
		if _, err := admin.ExecContext(ctx, "ALTER TABLE "+tbl+" SET (autovacuum_enabled = false)"); err != nil {
			return nil, err
		}
	}
	d, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ms := db.NewMessageStore(d, db.WithLogger(r.quiet))
	sums := db.NewSummaryStore(d, db.WithLogger(r.quiet))
	const session = "ledger"
	if err := dbtest.SeedFullLedger(ctx, ms, sums, session, benchUser, n, cfg.RecentMessageCount); err != nil {
		return nil, err
	}
	m, err := r.newManager(ms, sums, summary.NewExtractiveService(), cfg)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var rows [][]string
	for _, state := range []string{"fresh", "analyzed"} {
		if state == "analyzed" {
			if _, err := admin.ExecContext(ctx, "ANALYZE"); err != nil {
				return nil, err
			}
		}
		r.progress("  full ledger: %s, %s database", via, state)
		load, tail, err := loadAgainstTail(ctx, r, m, d, session)
		if err != nil {
			return nil, err
		}
		if state == "fresh" {
			var analyzed bool
			if err := admin.GetContext(ctx, &analyzed, `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL
				FROM pg_stat_user_tables WHERE relname = 'strata_messages'`); err != nil {
				return nil, err
			}
			if analyzed {
				return nil, fmt.Errorf("strata_messages was analyzed during the fresh measurement")
			}
		}
		rt := ratio(float64(load.pct(50)), float64(tail.pct(50)))
		rows = append(rows, []string{via, state, fmtDur(load.pct(50)), fmtDur(tail.pct(50)), fmtRatio(rt), fmtDur(load.pct(99))})
		so.headline("Full-ledger load (§3, PostgreSQL%s, %s, %s database): `LoadHistory` p50 of a %s-message session with %d facts and a narrative at its cap %s = %s one indexed 10-row tail query (%s; goal ≤ 1.5×).",
			durableLabel(r), via, state, fmtInt(n), dbtest.FullLedgerFacts, fmtDur(load.pct(50)), fmtRatio(rt), fmtDur(tail.pct(50)))
	}
	if st := m.Stats(); st.SummarizerCalls != 0 || st.Fallbacks != 0 {
		return nil, fmt.Errorf("stats %+v: the summarizer ran or a load fell back while timing", st)
	}
	return rows, nil
}

// loadAgainstTail times loads of session and tail queries, call by call in
// turn.
func loadAgainstTail(ctx context.Context, r *runner, m *memory.Manager, d *sqlx.DB, session string) (load, tail samples, err error) {
	loadOnce := func() error {
		h, err := m.Load(ctx, session, benchUser)
		if err == nil && (h.Mode != "hierarchical" || h.Summary == nil || len(h.Summary.Facts) != dbtest.FullLedgerFacts) {
			err = fmt.Errorf("load: mode %s, summary %v", h.Mode, h.Summary != nil)
		}
		return err
	}
	for range r.p.loadWarm {
		if err := loadOnce(); err != nil {
			return nil, nil, err
		}
		if err := rawTail10(ctx, d, session); err != nil {
			return nil, nil, err
		}
	}
	began := time.Now()
	for k := 0; k < r.p.loadMinOps || time.Since(began) < r.p.loadMinTime; k++ {
		t0 := time.Now()
		if err := loadOnce(); err != nil {
			return nil, nil, err
		}
		load = append(load, time.Since(t0))
		t0 = time.Now()
		if err := rawTail10(ctx, d, session); err != nil {
			return nil, nil, err
		}
		tail = append(tail, time.Since(t0))
	}
	return load, tail, nil
}

// rawTail10 runs ledgerTailSQL and checks that it read 10 rows.
func rawTail10(ctx context.Context, d *sqlx.DB, session string) error {
	rows, err := d.QueryContext(ctx, ledgerTailSQL, session)
	if err != nil {
		return err
	}
	return scanTail(rows, 10)
}
