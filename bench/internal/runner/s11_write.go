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
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
)

// rawCountSQL and rawMessagesSQL are the baseline write of section 11: the
// session's counter, with the owner in the condition, and one two-row
// INSERT, in a hand-written transaction.
const (
	rawCountSQL    = `UPDATE strata_sessions SET message_count = message_count + 2, last_activity = now() WHERE session_id = $1 AND user_id = $2`
	rawMessagesSQL = `INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ($1, 'user', $3, $2), ($1, 'assistant', $4, $2)`
)

// rawWriter is the raw-SQL baseline: statements in a hand-written
// transaction, unprepared (on a pool made by db.Open each is one round
// trip), so that the same code runs through a transaction-mode pooler.
type rawWriter struct {
	d *sqlx.DB
	// counter adds the session's counter update (owner in the condition)
	// before the INSERT; without it the transaction is the bare two-row
	// insert.
	counter bool
}

// turn writes one user/assistant pair: BEGIN, [counter,] INSERT, COMMIT.
func (w *rawWriter) turn(ctx context.Context, session, userText, assistantText string) error {
	tx, err := w.d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if w.counter {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, rawCountSQL, session, benchUser); err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("session %s: not found", session)
		}
	}
	if _, err := tx.ExecContext(ctx, rawMessagesSQL, session, benchUser, userText, assistantText); err != nil {
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
	direct, err := runWriteConfigs(ctx, r, pg.url, "direct", pairs, true)
	if err != nil {
		return err
	}
	workers, sessions := r.p.concWorkers, r.p.concSessions
	out.printf("\n### Append throughput on PostgreSQL\n\n")
	out.printf("%d workers append user/assistant pairs (LoCoMo texts) round robin over %d sessions created beforehand, through one pool with `db.Open`'s defaults (%d connections), in %d interleaved rounds of %s turns each: the baseline, the bare two-row insert transaction (BEGIN; one two-row INSERT; COMMIT — the durable write alone); the same with the session's counter update (owner in the condition) before the INSERT; `db.MessageStore.Append` (one statement: owner check, row lock, counter and rows); and `Manager.SaveTurn` over it (summaries off). The raw transactions' statements are unprepared, one round trip each (lib/pq's binary_parameters, as `db.Open` sets it). Every message is counted in the database afterwards. The same without the counter variant and `SaveTurn` runs through PgBouncer (transaction mode) on a database of its own when the run has one. **Goal: `Append` ≥ 0.6 × the bare insert transaction's throughput on durable settings (aim: 0.8 ×).**\n\n",
		workers, sessions, db.DefaultMaxOpenConns, writeRounds, fmtInt(writeTurnsPerRound(r)))
	out.printf("%s", r.env.provenance(true))
	tbl := writeTable("direct", direct)
	out.headline("Append throughput (§11, PostgreSQL%s, %d workers, %d sessions): `MessageStore.Append` %s turns/s = %s the bare two-row insert transaction (%s turns/s; goal ≥ 0.6×); with the session counter the raw transaction makes %s; `SaveTurn` %s.",
		durableLabel(r), workers, sessions, fmtFloat(direct[2].run.tps()), fmtRatio(ratio(direct[2].run.tps(), direct[0].run.tps())),
		fmtFloat(direct[0].run.tps()), fmtRatio(ratio(direct[1].run.tps(), direct[0].run.tps())), fmtRatio(ratio(direct[3].run.tps(), direct[0].run.tps())))
	if r.opts.PoolerURL == "" {
		out.printf("%s\n", mdTable(writeHeaders, tbl))
		out.printf("> **PgBouncer: skipped** — no pooler URL (`-pgbouncer-url`, default `$STRATA_PGBOUNCER_URL`).\n")
		return nil
	}
	bd, err := r.newDatabase(ctx, "writes")
	if err != nil {
		out.printf("%s\n", mdTable(writeHeaders, tbl))
		out.printf("> **PgBouncer: skipped** — the pooled run needs a database of its own: %v\n", err)
		return nil
	}
	defer bd.drop()
	pooled, err := runWriteConfigs(ctx, r, bd.pooled, "PgBouncer", pairs, false)
	if err != nil {
		return err
	}
	tbl = append(tbl, writeTable("PgBouncer", pooled)...)
	out.printf("%s\n", mdTable(writeHeaders, tbl))
	out.headline("Append throughput through PgBouncer (§11, transaction mode%s): `MessageStore.Append` %s turns/s = %s the bare two-row insert transaction through the same pooler (%s turns/s).",
		durableLabel(r), fmtFloat(pooled[1].run.tps()), fmtRatio(ratio(pooled[1].run.tps(), pooled[0].run.tps())), fmtFloat(pooled[0].run.tps()))
	return nil
}

// writeRounds is how many interleaved rounds section 11 runs.
const writeRounds = 3

func writeTurnsPerRound(r *runner) int {
	return max(r.p.concSessions*r.p.concTurns/writeRounds, r.p.concWorkers)
}

var writeHeaders = []string{"connection", "write", "turns/s", "÷ bare insert transaction", "p50 per turn", "p99 per turn"}

// writeResult is one configuration's outcome.
type writeResult struct {
	name string
	run  writeRun
}

// writeTable renders results, the first being the baseline.
func writeTable(via string, res []writeResult) [][]string {
	var tbl [][]string
	base := res[0].run.tps()
	for _, w := range res {
		tbl = append(tbl, []string{via, w.name, fmtFloat(w.run.tps()), fmtRatio(ratio(w.run.tps(), base)), fmtDur(w.run.lat.pct(50)), fmtDur(w.run.lat.pct(99))})
	}
	return tbl
}

// runWriteConfigs measures the writes on a pool of url (db.Open's
// defaults) over fresh sessions, the bare insert transaction first; all
// adds the counter variant and SaveTurn. It checks every message was
// stored.
func runWriteConfigs(ctx context.Context, r *runner, url, via string, pairs [][2]string, all bool) ([]writeResult, error) {
	d, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ms := db.NewMessageStore(d, db.WithLogger(r.quiet))
	mgr, err := r.newManager(ms, nil, nil, takeLastConfig())
	if err != nil {
		return nil, err
	}
	defer mgr.Close()
	bare, counted := &rawWriter{d: d}, &rawWriter{d: d, counter: true}

	workers, sessions := r.p.concWorkers, r.p.concSessions
	// The raw transactions write sessions of their own: their INSERT
	// takes seq from the column's global sequence, which Strata's
	// per-session counters do not follow.
	const prefix, rawPrefix = "s11-", "s11-raw-"
	for s := range sessions {
		for _, p := range []string{prefix, rawPrefix} {
			if err := ms.Create(ctx, fmt.Sprint(p, s), benchUser); err != nil {
				return nil, err
			}
		}
	}
	type config struct {
		name   string
		fn     func(session, u, a string) error
		prefix string
	}
	appendFn := func(s, u, a string) error {
		_, err := ms.Append(ctx, s, benchUser, store.Message{Role: store.RoleUser, Content: u}, store.Message{Role: store.RoleAssistant, Content: a})
		return err
	}
	configs := []config{{"bare two-row insert transaction (baseline)", func(s, u, a string) error { return bare.turn(ctx, s, u, a) }, rawPrefix}}
	if all {
		configs = append(configs, config{"raw transaction with the session counter", func(s, u, a string) error { return counted.turn(ctx, s, u, a) }, rawPrefix})
	}
	configs = append(configs, config{"`MessageStore.Append` (one statement)", appendFn, prefix})
	if all {
		configs = append(configs, config{"`Manager.SaveTurn`, summaries off", func(s, u, a string) error { return mgr.SaveTurn(ctx, s, benchUser, u, a) }, prefix})
	}
	turnsPerRound := writeTurnsPerRound(r)
	res := make([]writeResult, len(configs))
	for round := range writeRounds {
		for i, c := range configs {
			if round == 0 {
				r.progress("  writes (%s): %s, %d workers over %d sessions", via, c.name, workers, sessions)
			}
			w, err := writeWorkers(workers, sessions, turnsPerRound, c.prefix, pairs, c.fn)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", via, c.name, err)
			}
			res[i].name = c.name
			res[i].run.turns += w.turns
			res[i].run.wall += w.wall
			res[i].run.lat = append(res[i].run.lat, w.lat...)
		}
	}
	var stored int
	want := len(configs) * writeRounds * turnsPerRound * 2
	if err := d.GetContext(ctx, &stored, `SELECT count(*) FROM strata_messages WHERE session_id LIKE 's11-%'`); err != nil {
		return nil, err
	}
	if stored != want {
		return nil, fmt.Errorf("%s: %d messages stored, want %d", via, stored, want)
	}
	return res, nil
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
	// Empty sessions, all of one user: the store's bounds are raised to hold
	// them (by default a user keeps at most 1 000, evicting their own oldest).
	ms := memstore.New(memstore.WithMaxSessions(sessions), memstore.WithMaxSessionsPerUser(sessions))
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
	perSession := float64(int64(heap())-int64(before)) / sessions
	runtime.KeepAlive(ms)

	// Messages, 100 per session, content strings allocated beforehand so
	// that only the store's own bytes count; the content is reported apart.
	store2 := memstore.New(memstore.WithMaxSessions(perMsgN/100), memstore.WithMaxSessionsPerUser(perMsgN/100))
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
	perMsg := float64(int64(heap())-int64(before)) / perMsgN
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
