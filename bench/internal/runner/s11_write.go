package runner

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// rawCountSQL and rawMessagesSQL are the baseline write of section 11: the
// session's counter, with the owner in the condition, and one two-row
// INSERT, in a hand-written transaction.
const (
	rawCountSQL    = `UPDATE strata_sessions SET message_count = message_count + 2, last_activity = now() WHERE session_id = $1 AND user_id = $2`
	rawMessagesSQL = `INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ($1, 'user', $3, $2), ($1, 'assistant', $4, $2)`
)

// rawWriter is the raw-SQL baseline: prepared statements in a transaction.
type rawWriter struct {
	d          *sqlx.DB
	count, ins *sqlx.Stmt
}

func newRawWriter(ctx context.Context, d *sqlx.DB) (*rawWriter, error) {
	count, err := d.PreparexContext(ctx, rawCountSQL)
	if err != nil {
		return nil, err
	}
	ins, err := d.PreparexContext(ctx, rawMessagesSQL)
	if err != nil {
		_ = count.Close()
		return nil, err
	}
	return &rawWriter{d: d, count: count, ins: ins}, nil
}

func (w *rawWriter) close() { _ = w.count.Close(); _ = w.ins.Close() }

// turn writes one user/assistant pair: BEGIN, counter, INSERT, COMMIT.
func (w *rawWriter) turn(ctx context.Context, session, userText, assistantText string) error {
	tx, err := w.d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var res sql.Result
	if res, err = tx.StmtxContext(ctx, w.count).ExecContext(ctx, session, benchUser); err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("session %s: not found", session)
	}
	if _, err := tx.StmtxContext(ctx, w.ins).ExecContext(ctx, session, benchUser, userText, assistantText); err != nil {
		return err
	}
	return tx.Commit()
}

// writeRun is one configuration's outcome in section 11.
type writeRun struct {
	turns int
	wall  time.Duration
	lat   samples
}

func (w writeRun) tps() float64 { return float64(w.turns) / w.wall.Seconds() }

// writeWorkers runs turns turns from workers goroutines over sessions,
// round robin, and times each.
func writeWorkers(workers, sessions, turns int, prefix string, pairs [][2]string, fn func(session, u, a string) error) (writeRun, error) {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first error
		run   = writeRun{turns: turns}
		wg    sync.WaitGroup
	)
	began := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat samples
			for {
				k := int(next.Add(1)) - 1
				if k >= turns {
					break
				}
				p := pairs[k%len(pairs)]
				t0 := time.Now()
				if err := fn(fmt.Sprintf("%s%d", prefix, k%sessions), p[0], p[1]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			run.lat = append(run.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	run.wall = time.Since(began)
	return run, first
}

func runWrites(ctx context.Context, r *runner, out *sectionOut) error {
	if err := runInMemoryFootprint(r, out); err != nil {
		return err
	}
	pg, err := r.postgres(ctx)
	if err != nil {
		out.printf("> %s\n", pgSkipNote(err))
		return nil
	}
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	pairs := locomo.Pairs()
	d, err := pg.pool(ctx) // db.Open's defaults
	if err != nil {
		return err
	}
	defer d.Close()
	ms := db.NewMessageStore(d, db.WithLogger(r.quiet))
	mgr, err := r.newManager(ms, nil, nil, takeLastConfig())
	if err != nil {
		return err
	}
	defer mgr.Close()
	raw, err := newRawWriter(ctx, d)
	if err != nil {
		return err
	}
	defer raw.close()

	workers, sessions := r.p.concWorkers, r.p.concSessions
	const prefix = "s11-"
	for s := range sessions {
		if err := ms.Create(ctx, fmt.Sprint(prefix, s), benchUser); err != nil {
			return err
		}
	}
	type config struct {
		name string
		fn   func(session, u, a string) error
	}
	configs := []config{
		{"raw SQL transaction (baseline)", func(s, u, a string) error { return raw.turn(ctx, s, u, a) }},
		{"`MessageStore.Append` (one statement)", func(s, u, a string) error {
			_, err := ms.Append(ctx, s, benchUser, store.Message{Role: store.RoleUser, Content: u}, store.Message{Role: store.RoleAssistant, Content: a})
			return err
		}},
		{"`Manager.SaveTurn`, summaries off", func(s, u, a string) error { return mgr.SaveTurn(ctx, s, benchUser, u, a) }},
	}
	const rounds = 3
	turnsPerRound := max(r.p.concSessions*r.p.concTurns/rounds, workers)
	runs := make([]writeRun, len(configs))
	for round := range rounds {
		for i, c := range configs {
			if round == 0 {
				r.progress("  writes: %s, %d workers over %d sessions", c.name, workers, sessions)
			}
			w, err := writeWorkers(workers, sessions, turnsPerRound, prefix, pairs, c.fn)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			runs[i].turns += w.turns
			runs[i].wall += w.wall
			runs[i].lat = append(runs[i].lat, w.lat...)
		}
	}
	var stored, want int
	want = len(configs) * rounds * turnsPerRound * 2
	if err := d.GetContext(ctx, &stored, `SELECT count(*) FROM strata_messages WHERE session_id LIKE 's11-%'`); err != nil {
		return err
	}
	if stored != want {
		return fmt.Errorf("%d messages stored, want %d", stored, want)
	}

	out.printf("\n### Append throughput on PostgreSQL\n\n")
	out.printf("%d workers append user/assistant pairs (LoCoMo texts) round robin over %d sessions created beforehand, through one pool with `db.Open`'s defaults (%d connections): the same two-row write three ways, in %d interleaved rounds of %s turns each — a hand-written transaction with prepared statements (BEGIN; the session's counter, owner in the condition; one two-row INSERT; COMMIT), `db.MessageStore.Append` (one statement: owner check, row lock, counter and rows), and `Manager.SaveTurn` over it (summaries off). Every message is counted in the database afterwards (%s stored, as expected). **Goal: `Append` ≥ 0.6 × the raw transaction's throughput on durable settings.**\n\n",
		workers, sessions, db.DefaultMaxOpenConns, rounds, fmtInt(turnsPerRound), fmtInt(stored))
	out.printf("%s", r.env.provenance(true))
	var tbl [][]string
	base := runs[0].tps()
	for i, c := range configs {
		w := runs[i]
		tbl = append(tbl, []string{c.name, fmtFloat(w.tps()), fmtRatio(ratio(w.tps(), base)), fmtDur(w.lat.pct(50)), fmtDur(w.lat.pct(99))})
	}
	out.printf("%s\n", mdTable([]string{"write", "turns/s", "÷ raw transaction", "p50 per turn", "p99 per turn"}, tbl))
	out.headline("Append throughput (§11, PostgreSQL%s, %d workers, %d sessions): `MessageStore.Append` %s turns/s = %s the same two-row raw SQL transaction (%s turns/s; goal ≥ 0.6×); `SaveTurn` %s.",
		durableLabel(r), workers, sessions, fmtFloat(runs[1].tps()), fmtRatio(ratio(runs[1].tps(), base)), fmtFloat(base), fmtRatio(ratio(runs[2].tps(), base)))
	return nil
}

// runInMemoryFootprint measures the in-memory store's heap per stored
// message and per empty session.
func runInMemoryFootprint(r *runner, out *sectionOut) error {
	ctx := context.Background()
	const (
		sessions = 10_000
		perMsgN  = 100_000
		msgLen   = 200
	)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// Empty sessions.
	ms := memory.NewInMemoryStore()
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("fp-session-%06d", i)
	}
	before := heap()
	for _, id := range ids {
		if err := ms.Create(ctx, id, benchUser); err != nil {
			return err
		}
	}
	perSession := float64(heap()-before) / sessions
	runtime.KeepAlive(ms)

	// Messages, 100 per session, content strings allocated beforehand so
	// that only the store's own bytes count; the content is reported apart.
	store2 := memory.NewInMemoryStore()
	texts := make([]string, perMsgN)
	for i := range texts {
		texts[i] = fmt.Sprintf("%06d %s", i, strings.Repeat("x", msgLen-7))
	}
	for s := range perMsgN / 100 {
		if err := store2.Create(ctx, fmt.Sprintf("fp-%04d", s), benchUser); err != nil {
			return err
		}
	}
	before = heap()
	for s := range perMsgN / 100 {
		msgs := make([]store.Message, 100)
		for j := range msgs {
			role := store.RoleUser
			if j%2 == 1 {
				role = store.RoleAssistant
			}
			msgs[j] = store.Message{Role: role, Content: texts[s*100+j]}
		}
		if _, err := store2.Append(ctx, fmt.Sprintf("fp-%04d", s), benchUser, msgs...); err != nil {
			return err
		}
	}
	perMsg := float64(heap()-before) / perMsgN
	runtime.KeepAlive(store2)
	runtime.KeepAlive(texts)

	out.printf("\n### In-memory store footprint\n\n")
	out.printf("Go heap (`runtime.MemStats.HeapAlloc` after two GCs) of `memory.NewInMemoryStore`: %s empty sessions created, then %s messages of %d bytes appended in batches of 100 to %s sessions. The message texts are allocated before the measurement, so *per message* is the store's own cost beyond the text it keeps a reference to (a caller whose strings die after the append adds their length).\n\n",
		fmtInt(sessions), fmtInt(perMsgN), msgLen, fmtInt(perMsgN/100))
	out.printf("%s", r.env.provenance(false))
	out.printf("%s\n", mdTable([]string{"", "bytes"}, [][]string{
		{"per empty session", fmt.Sprintf("%.0f", perSession)},
		{"per stored message (beyond its text)", fmt.Sprintf("%.0f", perMsg)},
	}))
	out.headline("In-memory store (§11): %.0f bytes per empty session and %.0f bytes per stored message beyond its text.", perSession, perMsg)
	return nil
}
