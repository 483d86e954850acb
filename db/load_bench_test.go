package db_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// loadSizes are the history lengths the load benchmarks compare.
var loadSizes = []int{100, 100_000}

// loadConfig is the configuration of the load benchmarks: hierarchical
// memory with the parity policy and the default windows.
func loadConfig() memory.Config {
	c := memory.DefaultConfig()
	c.Enabled = true
	return c
}

// loadRows is how many messages a load of loadConfig reads: the policy's
// window (the larger of the takeLast window and the verbatim window) plus
// the manager's alignment slack of 8. The raw tail baseline reads as many.
func loadRows() int {
	c := loadConfig()
	return max(2*c.MaxConversationTurns, c.RecentMessageCount) + 8
}

// rawTailSQL is the baseline of the load benchmarks: the newest messages
// of a session by one indexed query, with no ownership check, count or
// summary. Its LIMIT is written into the statement, as the store writes its
// own.
const rawTailSQL = `
SELECT seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at
  FROM strata_messages
 WHERE session_id = $1
 ORDER BY seq DESC
 LIMIT %d`

// loadFixture seeds one session per size, each with a stored summary
// covering everything before its verbatim window, and returns a manager
// over the db stores.
func loadFixture(b *testing.B) (*fixture, *memory.Manager) {
	b.Helper()
	f := newFixture(b)
	ctx := context.Background()
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		seedSession(b, ctx, f.d, session, n)
		k := loadConfig().RecentMessageCount
		t, err := f.messages.Tail(ctx, session, "bench", k+1)
		if err != nil {
			b.Fatal(err)
		}
		err = f.sums.Save(ctx, summary.Summary{SessionID: session, Epoch: t.Epoch, UpToSeq: t.Messages[0].Seq,
			Narrative: "The user asked about lorem ipsum; the assistant explained dolor sit amet.",
			Facts:     []summary.Fact{{Key: "topic", Value: "lorem ipsum", Category: summary.Entity}}})
		if err != nil {
			b.Fatal(err)
		}
	}
	m, err := memory.NewManager(f.messages, loadConfig(), memory.WithSummaries(f.sums, summary.NewExtractiveService()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	return f, m
}

// timed runs op b.N times, timing each call, and reports the median as
// the metric p50-ns.
func timed(b *testing.B, op func() error) {
	b.Helper()
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkRawTail is the baseline of BenchmarkLoad: one prepared indexed
// query for the newest messages of the session, scanned into messages.
func BenchmarkRawTail(b *testing.B) {
	f, _ := loadFixture(b)
	ctx := context.Background()
	st := rawTailStmt(b, ctx, f)
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			timed(b, func() error { return rawTail(ctx, st, session, loadRows()) })
		})
	}
}

// rawTailStmt prepares the baseline query (rawTailSQL for loadRows
// messages) on f's pool, closed when b ends.
func rawTailStmt(b *testing.B, ctx context.Context, f *fixture) *sqlx.Stmt {
	b.Helper()
	st, err := f.d.PreparexContext(ctx, fmt.Sprintf(rawTailSQL, loadRows()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

// rawTail runs the baseline query and scans every row.
func rawTail(ctx context.Context, st *sqlx.Stmt, session string, n int) error {
	rows, err := st.QueryContext(ctx, session)
	if err != nil {
		return err
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var (
			seq                               int64
			role, content, callID, name, user string
			calls, meta                       []byte
			at                                time.Time
		)
		if err := rows.Scan(&seq, &role, &content, &calls, &callID, &name, &meta, &user, &at); err != nil {
			return err
		}
		got++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("raw tail read %d rows, want %d", got, n)
	}
	return nil
}

// BenchmarkLoad measures Manager.Load over the db stores of sessions of
// 100 and 100 000 messages with a covering summary: the hierarchical
// history (summary blocks and verbatim window) from one Snapshot
// statement. Compare with BenchmarkRawTail (benchstat, or the p50-ns
// metric); the goal is at most 1.5 times the raw tail query.
// BenchmarkLoadVsRawTail compares the ways a load can find the store.
func BenchmarkLoad(b *testing.B) {
	_, m := loadFixture(b)
	ctx := context.Background()
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			timed(b, func() error {
				h, err := m.Load(ctx, session, "bench")
				if err == nil && h.Mode != "hierarchical" {
					err = fmt.Errorf("mode %s, want hierarchical", h.Mode)
				}
				return err
			})
		})
	}
}

// BenchmarkLoadVsRawTail times, call by call in turn (interleaved, so
// that the machine's load weighs on all alike), BenchmarkRawTail's
// prepared query and Manager.Load six ways: held is a repeated load of an
// unchanged session (this store read it before: one plain statement
// confirms the held tail and summary), loop an agent loop's load (the
// store appended a turn and saved a new summary, as a fold does, untimed,
// since its last load: the append extended its held tail, the plain
// statement sends the new summary), cold one that reads the whole
// tail (the first by this process; WithTailCache(0, 0)), each with
// prepared statements off (the default) and on (WithPreparedStatements).
// And, at the store level (SnapshotAfterSummary, the load's statement),
// a load after another replica appended a pair (untimed: tail=new, which
// gets those two messages) beside a cold one of the same session. It
// reports each median (µs) and its ratio to the raw tail query's.
func BenchmarkLoadVsRawTail(b *testing.B) {
	f, _ := loadFixture(b)
	ctx := context.Background()
	st := rawTailStmt(b, ctx, f)
	other := db.NewMessageStore(f.d)
	type variant struct {
		name   string
		before func(session string) error
		op     func(session string) error
	}
	load := func(opts ...db.Option) func(string) error {
		m, err := memory.NewManager(db.NewMessageStore(f.d, opts...), loadConfig(),
			memory.WithSummaries(f.sums, summary.NewExtractiveService()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close() })
		return func(session string) error {
			h, err := m.Load(ctx, session, "bench")
			if err == nil && h.Mode != "hierarchical" {
				err = fmt.Errorf("mode %s, want hierarchical", h.Mode)
			}
			return err
		}
	}
	snap := func(opts ...db.Option) func(string) error {
		ms := db.NewMessageStore(f.d, opts...)
		return func(session string) error {
			t, _, err := ms.SnapshotAfterSummary(ctx, session+"-new", "bench", loadRows())
			if err == nil && len(t.Messages) == 0 {
				err = errors.New("no message")
			}
			return err
		}
	}
	appendPair := func(session string) error {
		_, err := other.Append(ctx, session+"-new", "bench", user("another replica's question"), assistant("its answer"))
		return err
	}
	// loop is an agent loop's load: the store appended a turn and a fold
	// saved the summary covering all but the verbatim window, through the
	// same store, as the manager's background fold does after each turn
	// (untimed), since its last load: under the fold lease, with the
	// fold's journal record.
	loop := func(suffix string, opts ...db.Option) (before, op func(string) error) {
		ms := db.NewMessageStore(f.d, opts...)
		m, err := memory.NewManager(ms, loadConfig(), memory.WithSummaries(f.sums, summary.NewExtractiveService()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close() })
		before = func(session string) error {
			res, err := ms.Append(ctx, session+suffix, "bench", user("the next question"), assistant("its answer"))
			if err != nil {
				return err
			}
			release, save, ok, err := ms.TryLockFold(ctx, session+suffix, time.Minute)
			if err != nil || !ok {
				return fmt.Errorf("fold lease: %v, %w", ok, err)
			}
			defer release()
			rec := store.JournalRecord{Kind: "fold", Outcome: "saved", Trigger: "save"}
			jctx := store.WithJournalEdit(store.WithJournalRecord(ctx, rec, 200), func(j *store.Journal) { j.Add(rec, 200) })
			return save(jctx, summary.Summary{SessionID: session + suffix, Epoch: res.Epoch,
				UpToSeq:   res.LastSeq - int64(loadConfig().RecentMessageCount),
				Narrative: "The user asked about lorem ipsum; the assistant explained dolor sit amet."})
		}
		op = func(session string) error {
			h, err := m.Load(ctx, session+suffix, "bench")
			if err == nil && h.Mode != "hierarchical" {
				err = fmt.Errorf("mode %s, want hierarchical", h.Mode)
			}
			return err
		}
		return before, op
	}
	loopBefore, loopOp := loop("-loop")
	loopPBefore, loopPOp := loop("-loop-prepared", db.WithPreparedStatements())
	variants := []variant{
		{"raw", nil, func(session string) error { return rawTail(ctx, st, session, loadRows()) }},
		{"held", nil, load()},
		{"held-prepared", nil, load(db.WithPreparedStatements())},
		{"loop", loopBefore, loopOp},
		{"loop-prepared", loopPBefore, loopPOp},
		{"cold", nil, load(db.WithTailCache(0, 0))},
		{"cold-prepared", nil, load(db.WithTailCache(0, 0), db.WithPreparedStatements())},
		{"store-new", appendPair, snap()},
		{"store-new-prepared", appendPair, snap(db.WithPreparedStatements())},
		{"store-cold", nil, snap(db.WithTailCache(0, 0))},
		{"store-cold-prepared", nil, snap(db.WithTailCache(0, 0), db.WithPreparedStatements())},
	}
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		seedSession(b, ctx, f.d, session+"-new", n)
		for _, suffix := range []string{"-loop", "-loop-prepared"} {
			seedSession(b, ctx, f.d, session+suffix, n)
			t, err := f.messages.Tail(ctx, session+suffix, "bench", loadConfig().RecentMessageCount+1)
			if err != nil {
				b.Fatal(err)
			}
			err = f.sums.Save(ctx, summary.Summary{SessionID: session + suffix, Epoch: t.Epoch, UpToSeq: t.Messages[0].Seq,
				Narrative: "The user asked about lorem ipsum; the assistant explained dolor sit amet."})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ds := make([][]time.Duration, len(variants))
			for _, v := range variants { // warm: prepared, held
				if err := v.op(session); err != nil {
					b.Fatal(v.name, err)
				}
			}
			for b.Loop() {
				for i, v := range variants {
					if v.before != nil {
						if err := v.before(session); err != nil {
							b.Fatal(err)
						}
					}
					t0 := time.Now()
					if err := v.op(session); err != nil {
						b.Fatal(v.name, err)
					}
					ds[i] = append(ds[i], time.Since(t0))
				}
			}
			p50 := make([]time.Duration, len(variants))
			for i := range ds {
				slices.Sort(ds[i])
				p50[i] = ds[i][len(ds[i])/2]
			}
			for i, v := range variants {
				b.ReportMetric(float64(p50[i].Nanoseconds())/1e3, v.name+"-µs")
				if i > 0 {
					b.ReportMetric(float64(p50[i])/float64(p50[0]), v.name+"/raw")
				}
			}
		})
	}
}

// BenchmarkLoadTwoCalls is BenchmarkLoad with the summary store hidden
// behind a wrapper, so that the manager falls back to two calls (Tail,
// then the summary store's Get): what Snapshot saves.
func BenchmarkLoadTwoCalls(b *testing.B) {
	f, _ := loadFixture(b)
	ctx := context.Background()
	m, err := memory.NewManager(f.messages, loadConfig(), memory.WithSummaries(otherSummaryStore{f.sums}, summary.NewExtractiveService()))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			timed(b, func() error {
				h, err := m.Load(ctx, session, "bench")
				if err == nil && h.Mode != "hierarchical" {
					err = fmt.Errorf("mode %s, want hierarchical", h.Mode)
				}
				return err
			})
		})
	}
}

// otherSummaryStore hides a SummaryStore's identity from
// MessageStore.KeepsSummaries, as any summary store of another kind
// would.
type otherSummaryStore struct{ summary.Store }

// appendWorkers and appendSessions shape the append throughput benchmarks:
// 50 concurrent writers over 200 sessions.
const (
	appendWorkers  = 50
	appendSessions = 200
)

// appendFixture creates the sessions of the append throughput benchmarks
// on a pool sized like db.Open's.
func appendFixture(b *testing.B) *fixture {
	b.Helper()
	f := newFixture(b)
	f.d.SetMaxOpenConns(db.DefaultMaxOpenConns)
	f.d.SetMaxIdleConns(db.DefaultMaxIdleConns)
	ctx := context.Background()
	for i := range appendSessions {
		if err := f.messages.Create(ctx, fmt.Sprint("append-", i), "bench"); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// parallel runs op from appendWorkers goroutines (at least), each call on
// the next of the sessions, and reports turns per second.
func parallel(b *testing.B, op func(session string) error) {
	b.Helper()
	var next atomic.Uint64
	b.SetParallelism((appendWorkers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			session := fmt.Sprint("append-", next.Add(1)%appendSessions)
			if err := op(session); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// BenchmarkAppendParallel measures MessageStore.Append of a user/assistant
// pair from 50 workers over 200 sessions: one statement per turn.
// Compare with BenchmarkRawInsertTx, the bare write; the goal is at least
// 0.6 times its throughput on durable settings (BenchmarkRawAppendTx adds
// the session's counter to the raw transaction).
func BenchmarkAppendParallel(b *testing.B) {
	f := appendFixture(b)
	ctx := context.Background()
	q, a := user("what is the status of order #1234?"), assistant("It shipped yesterday and arrives on Friday.")
	parallel(b, func(session string) error {
		_, err := f.messages.Append(ctx, session, "bench", q, a)
		return err
	})
}

// rawAppendSQL is the baseline's two statements: the session's counter
// (with the owner in the condition) and the two rows.
const (
	rawCountSQL    = `UPDATE strata_sessions SET message_count = message_count + 2, last_activity = now() WHERE session_id = $1 AND user_id = $2`
	rawMessagesSQL = `INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ($1, 'user', $3, $2), ($1, 'assistant', $4, $2)`
)

// BenchmarkRawAppendTx is the baseline of BenchmarkAppendParallel: the
// same two-row write as a hand-written transaction (BEGIN, the session's
// counter, one two-row INSERT, COMMIT) with prepared statements, on the
// same driver and pool size.
func BenchmarkRawAppendTx(b *testing.B) {
	f := appendFixture(b)
	ctx := context.Background()
	count, err := f.d.PreparexContext(ctx, rawCountSQL)
	if err != nil {
		b.Fatal(err)
	}
	defer count.Close()
	ins, err := f.d.PreparexContext(ctx, rawMessagesSQL)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	parallel(b, func(session string) error { return rawAppendTx(ctx, f.d, count, ins, session) })
}

func rawAppendTx(ctx context.Context, d *sqlx.DB, count, ins *sqlx.Stmt, session string) error {
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var res sql.Result
	if res, err = tx.StmtxContext(ctx, count).ExecContext(ctx, session, "bench"); err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("session %s not updated", session)
	}
	if _, err := tx.StmtxContext(ctx, ins).ExecContext(ctx, session, "bench",
		"what is the status of order #1234?", "It shipped yesterday and arrives on Friday."); err != nil {
		return err
	}
	return tx.Commit()
}

// BenchmarkSnapshot measures MessageStore.Snapshot alone: the one
// statement under BenchmarkLoad, without the manager's assembly.
func BenchmarkSnapshot(b *testing.B) {
	f, _ := loadFixture(b)
	ctx := context.Background()
	for _, n := range loadSizes {
		session := fmt.Sprint("load-", n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			timed(b, func() error {
				t, s, err := f.messages.Snapshot(ctx, session, "bench", loadRows())
				if err == nil && (s == nil || len(t.Messages) != loadRows()) {
					err = fmt.Errorf("snapshot: %d messages, summary %v", len(t.Messages), s != nil)
				}
				return err
			})
		})
	}
}

// BenchmarkRawInsertTx is the bare baseline of BenchmarkAppendParallel:
// BEGIN, one two-row INSERT, COMMIT — the durable write alone, without the
// ownership check or the session's bookkeeping — on the same driver, pool
// and workers.
func BenchmarkRawInsertTx(b *testing.B) {
	f := appendFixture(b)
	ctx := context.Background()
	parallel(b, func(session string) error {
		tx, err := f.d.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, rawMessagesSQL, session, "bench",
			"what is the status of order #1234?", "It shipped yesterday and arrives on Friday."); err != nil {
			return err
		}
		return tx.Commit()
	})
}
