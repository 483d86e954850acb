package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// fullLedgerMessages is the length of the realistic long session.
const fullLedgerMessages = 20_000

// tail10SQL is the baseline of BenchmarkFullLedgerLoad: the newest 10
// messages of a session by one indexed query, nothing else.
const tail10SQL = `
SELECT seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at
  FROM strata_messages
 WHERE session_id = $1
 ORDER BY seq DESC
 LIMIT 10`

// BenchmarkFullLedgerLoad measures Manager.Load (hierarchical, parity) of
// a 20 000-message session whose summary holds a full ledger (100 facts,
// a narrative at its cap), call by call interleaved with its baseline, one
// indexed tail query of 10 rows on the same pool: on a freshly created
// database right after the session was written (autovacuum kept off its
// tables, so nothing has analyzed them: checked), then after ANALYZE;
// directly and through PgBouncer in transaction mode (skipped without
// one). It reports the medians, that of the load's statement
// (MessageStore.SnapshotAfterSummary) alone too, and the ratio load/tail
// (goal ≤ 1.5); directly, also the load of a manager whose store prepares
// its statements (WithPreparedStatements) and its ratio to the tail query.
// The loads after the first find the session's tail held (WithTailCache).
func BenchmarkFullLedgerLoad(b *testing.B) {
	for _, via := range []string{"direct", "pgbouncer"} {
		b.Run(via, func(b *testing.B) {
			var p dbtest.Pooled
			url := ""
			if via == "pgbouncer" {
				p = dbtest.NewPooled(b)
				url = p.PooledURL
			} else {
				p = dbtest.NewDatabase(b)
				url = p.DirectURL
			}
			ctx := context.Background()
			admin := dbtest.Open(b, p.DirectURL)
			for _, tbl := range []string{"strata_sessions", "strata_messages", "strata_summaries"} {
				if _, err := admin.ExecContext(ctx, "ALTER TABLE "+tbl+" SET (autovacuum_enabled = false)"); err != nil {
					b.Fatal(err)
				}
			}
			d := dbtest.Open(b, url)
			ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
			cfg := loadConfig()
			if err := dbtest.SeedFullLedger(ctx, ms, sums, "ledger", "bench", fullLedgerMessages, cfg.RecentMessageCount); err != nil {
				b.Fatal(err)
			}
			m, err := memory.NewManager(ms, cfg, memory.WithSummaries(sums, summary.NewExtractiveService()))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			// Directly, also a manager whose store prepares its statements
			// (db.WithPreparedStatements, which PgBouncer 1.20 and earlier
			// in transaction mode cannot carry).
			var mp *memory.Manager
			if via == "direct" {
				if mp, err = memory.NewManager(db.NewMessageStore(d, db.WithPreparedStatements()), cfg,
					memory.WithSummaries(sums, summary.NewExtractiveService())); err != nil {
					b.Fatal(err)
				}
				defer mp.Close()
			}
			for _, state := range []string{"fresh", "analyzed"} {
				if state == "analyzed" {
					if _, err := admin.ExecContext(ctx, "ANALYZE"); err != nil {
						b.Fatal(err)
					}
				}
				b.Run(state, func(b *testing.B) {
					load, snap, tail, prep := loadVsTail(b, ctx, m, ms, d, mp)
					if state == "fresh" {
						var analyzed bool
						if err := admin.GetContext(ctx, &analyzed, `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL
							FROM pg_stat_user_tables WHERE relname = 'strata_messages'`); err != nil {
							b.Fatal(err)
						} else if analyzed {
							b.Fatal("strata_messages was analyzed: the measurement is not of a fresh database")
						}
					}
					b.ReportMetric(float64(load.Microseconds()), "load-p50-µs")
					b.ReportMetric(float64(tail.Microseconds()), "tail-p50-µs")
					b.ReportMetric(float64(snap.Microseconds()), "snapshot-p50-µs")
					b.ReportMetric(float64(load)/float64(tail), "load/tail")
					if mp != nil {
						b.ReportMetric(float64(prep.Microseconds()), "load-prepared-p50-µs")
						b.ReportMetric(float64(prep)/float64(tail), "load-prepared/tail")
					}
				})
			}
			if st := m.Stats(); st.SummarizerCalls != 0 || st.Fallbacks != 0 {
				b.Fatalf("stats %+v: the summarizer ran or a load fell back while timing", st)
			}
		})
	}
}

// loadVsTail times b.N loads of the "ledger" session, as many
// MessageStore.SnapshotAfterSummary calls (the load's one statement,
// without the manager's assembly) and as many tail queries, call by call in turn, and
// returns the three medians.
func loadVsTail(b *testing.B, ctx context.Context, m *memory.Manager, ms *db.MessageStore, d *sqlx.DB, mp *memory.Manager) (load, snap, tail, prep time.Duration) {
	b.Helper()
	var loads, snaps, tails, preps []time.Duration
	tailOnce := func() error {
		rows, err := d.QueryContext(ctx, tail10SQL, "ledger")
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var r struct {
				seq                               int64
				role, content, callID, name, user string
				calls, meta                       []byte
				at                                time.Time
			}
			if err := rows.Scan(&r.seq, &r.role, &r.content, &r.calls, &r.callID, &r.name, &r.meta, &r.user, &r.at); err != nil {
				return err
			}
			n++
		}
		if n != 10 {
			return fmt.Errorf("tail read %d rows", n)
		}
		return rows.Err()
	}
	for b.Loop() {
		t0 := time.Now()
		h, err := m.Load(ctx, "ledger", "bench")
		loads = append(loads, time.Since(t0))
		if err == nil && (h.Mode != "hierarchical" || h.Summary == nil || len(h.Summary.Facts) != dbtest.FullLedgerFacts) {
			err = fmt.Errorf("load: mode %s, summary %v", h.Mode, h.Summary != nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if _, _, err := ms.SnapshotAfterSummary(ctx, "ledger", "bench", loadRows()); err != nil {
			b.Fatal(err)
		}
		snaps = append(snaps, time.Since(t0))
		t0 = time.Now()
		if err := tailOnce(); err != nil {
			b.Fatal(err)
		}
		tails = append(tails, time.Since(t0))
		if mp != nil {
			t0 = time.Now()
			if _, err := mp.Load(ctx, "ledger", "bench"); err != nil {
				b.Fatal(err)
			}
			preps = append(preps, time.Since(t0))
		}
	}
	for _, ds := range [][]time.Duration{loads, snaps, tails, preps} {
		slices.Sort(ds)
	}
	if len(preps) > 0 {
		prep = preps[len(preps)/2]
	}
	return loads[len(loads)/2], snaps[len(snaps)/2], tails[len(tails)/2], prep
}
