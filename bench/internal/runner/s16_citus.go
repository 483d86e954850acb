package runner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Section 16 runs Strata on a Citus cluster (a coordinator and workers,
// Strata's tables distributed by session id: db.Distribute) beside plain
// PostgreSQL on the same machine, interleaved, both durable: loads and
// appends as ratios to plain PostgreSQL, and the plans Citus makes for
// the statements Strata sends, each checked to run on one shard.

// citusRounds is how many interleaved rounds each part measures.
const citusRounds = 3

// citusSkipNote is the section's one line without a Citus coordinator.
const citusSkipNote = "Citus: skipped (no Citus coordinator: CITUS_URL is unset; `make bench` starts a local three-node cluster with scripts/with-citus.sh when the citus extension is installed)"

// citusTarget is one of the two databases the section compares.
type citusTarget struct {
	name string
	d    *sqlx.DB
}

func runCitus(ctx context.Context, r *runner, out *sectionOut) error {
	if strings.TrimSpace(r.opts.CitusURL) == "" {
		out.printf("> %s\n", citusSkipNote)
		return nil
	}
	if strings.TrimSpace(r.opts.DatabaseURL) == "" {
		out.printf("> Citus: skipped (%s: the ratios need plain PostgreSQL beside Citus)\n", errNoPostgres)
		return nil
	}
	pg, err := r.postgres(ctx)
	if err != nil {
		return err
	}
	cz, err := openCitus(ctx, r.opts.CitusURL)
	if err != nil {
		return fmt.Errorf("citus: %w", err)
	}
	defer cz.close()
	var version, workers, fsync, sync string
	_ = cz.d.GetContext(ctx, &version, `SELECT extversion FROM pg_extension WHERE extname = 'citus'`)
	_ = cz.d.GetContext(ctx, &workers, `SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards`)
	_ = cz.d.GetContext(ctx, &fsync, `SHOW fsync`)
	_ = cz.d.GetContext(ctx, &sync, `SHOW synchronous_commit`)
	durable := "durable"
	if fsync != "on" || sync == "off" {
		durable = fmt.Sprintf("NON-DURABLE (fsync=%s, synchronous_commit=%s)", fsync, sync)
	}
	r.progress("Citus %s, %s nodes holding shards, %s", version, workers, durable)
	out.printf("Strata on Citus %s (coordinator and %s nodes holding shards on this machine, %s; the schema migrated over the coordinator's URL and distributed by `db.Distribute`, i.e. `strata migrate distribute`) beside plain PostgreSQL (%s), interleaved in %d rounds. Ratios are Citus ÷ plain PostgreSQL.\n\n",
		version, workers, durable, r.env.Postgres, citusRounds)
	out.printf("%s", r.env.provenance(true))

	targets := []citusTarget{{"plain PostgreSQL", pg.d}, {"Citus", cz.d}}
	if err := r.citusPlans(ctx, cz, out); err != nil {
		return err
	}
	if err := r.citusLoads(ctx, targets, out); err != nil {
		return err
	}
	return r.citusAppends(ctx, targets, out)
}

// openCitus creates, migrates and distributes a schema of its own on the
// coordinator of base, as a deployment would: migrate up (openPG), then
// distribute, over the coordinator's URL.
func openCitus(ctx context.Context, base string) (*pgEnv, error) {
	c, err := openPG(ctx, base, "strata_bench_citus_")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := db.Distribute(ctx, c.d); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// citusLoadMessages is the length of each load part's session: a summary
// covers all but the verbatim window, as after its folds.
const citusLoadMessages = 60

// citusLoads measures Manager.LoadHistory, hierarchical: steady (the same
// session loaded again and again, as an agent loop does) and cold (each
// load a session this process has not loaded before).
func (r *runner) citusLoads(ctx context.Context, targets []citusTarget, out *sectionOut) error {
	steadyTime, coldPerRound := 1500*time.Millisecond, 30
	if r.opts.Quick {
		steadyTime, coldPerRound = 50*time.Millisecond, 3
	}
	cfg := chunkedConfig()
	type res struct{ steady, cold samples }
	results := make([]res, len(targets))
	mgrs := make([]*memory.Manager, len(targets))
	for i, t := range targets {
		ms, sums := db.NewMessageStore(t.d, db.WithLogger(r.quiet)), db.NewSummaryStore(t.d, db.WithLogger(r.quiet))
		r.progress("  citus: seeding %d sessions of %d messages on %s", 1+citusRounds*coldPerRound, citusLoadMessages, t.name)
		for k := range 1 + citusRounds*coldPerRound {
			s := fmt.Sprintf("s16-load-%d", k)
			if err := seedPG(ctx, t.d, s, citusLoadMessages); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if err := storeCoveringSummary(ctx, ms, sums, s); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		m, err := r.newManager(ms, sums, summary.NewExtractiveService(), cfg)
		if err != nil {
			return err
		}
		defer m.Close()
		mgrs[i] = m
	}
	// The floor: one prepared primary-key read of a session row, the
	// least a load that checks its held tail can send, on each target.
	floors := make([]*sqlx.Stmt, len(targets))
	for i, t := range targets {
		st, err := t.d.PreparexContext(ctx, `SELECT message_count FROM strata_sessions WHERE session_id = $1`)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		defer st.Close()
		floors[i] = st
	}
	floorSamples := make([]samples, len(targets))
	var loadErr error
	floorRead := func(st *sqlx.Stmt) {
		var n int64
		if err := st.QueryRowContext(ctx, "s16-load-0").Scan(&n); err != nil && loadErr == nil {
			loadErr = err
		}
	}
	load := func(m *memory.Manager, session string) {
		h, err := m.Load(ctx, session, benchUser)
		if err == nil && h.Mode != memory.ModeHierarchical {
			err = fmt.Errorf("load of %s: mode %s, want hierarchical", session, h.Mode)
		}
		if err != nil && loadErr == nil {
			loadErr = err
		}
	}
	next := 1
	for range citusRounds {
		for i, m := range mgrs {
			results[i].steady = append(results[i].steady, measure(5, 20, 0, steadyTime, func() { load(m, "s16-load-0") })...)
			floorSamples[i] = append(floorSamples[i], measure(5, 20, 0, steadyTime/3, func() { floorRead(floors[i]) })...)
			for k := range coldPerRound {
				s := fmt.Sprintf("s16-load-%d", next+k)
				t0 := time.Now()
				load(m, s)
				results[i].cold = append(results[i].cold, time.Since(t0))
			}
		}
		next += coldPerRound
		if loadErr != nil {
			return loadErr
		}
	}
	plain := results[0]
	var rows [][]string
	for i, t := range targets {
		for _, kind := range []struct {
			name string
			s, p samples
		}{{"steady (same session again)", results[i].steady, plain.steady}, {"cold (a session not loaded before)", results[i].cold, plain.cold}} {
			rows = append(rows, []string{t.name, kind.name, fmtInt(len(kind.s)), fmtDur(kind.s.pct(50)), fmtDur(kind.s.pct(95)),
				fmtRatio(ratio(float64(kind.s.pct(50)), float64(kind.p.pct(50))))})
		}
	}
	for i, t := range targets {
		rows = append(rows, []string{t.name, "the hop's floor: one prepared primary-key read of the session row", fmtInt(len(floorSamples[i])),
			fmtDur(floorSamples[i].pct(50)), fmtDur(floorSamples[i].pct(95)), fmtRatio(ratio(float64(floorSamples[i].pct(50)), float64(floorSamples[0].pct(50))))})
	}
	out.printf("\n### Load latency\n\n`Manager.LoadHistory` of a session of %d messages whose summary covers all but the verbatim window (hierarchical, chunked policy), one caller: steady is the same session loaded again and again (an agent loop), cold a session this process has not loaded before. The floor is the least a steady load sends, alone: one primary-key read of the session row, prepared, on the same connection pool, measured in the same rounds; on Citus it is a single-shard router query through the coordinator, so its ratio is what the coordinator hop costs by itself.\n\n", citusLoadMessages)
	out.printf("%s\n", mdTable([]string{"database", "load", "loads", "p50", "p95", "p50 ÷ plain"}, rows))
	c := results[len(results)-1]
	cf := floorSamples[len(floorSamples)-1]
	out.printf("On Citus the steady load's p50 is %s the floor's on Citus (plain PostgreSQL: %s its floor's); the floor alone is %s plain PostgreSQL's.\n",
		fmtRatio(ratio(float64(c.steady.pct(50)), float64(cf.pct(50)))),
		fmtRatio(ratio(float64(plain.steady.pct(50)), float64(floorSamples[0].pct(50)))),
		fmtRatio(ratio(float64(cf.pct(50)), float64(floorSamples[0].pct(50)))))
	out.headline("Strata on Citus (coordinator + workers, one machine%s): load p50 %s plain PostgreSQL steady, %s cold",
		durableLabel(r), fmtRatio(ratio(float64(c.steady.pct(50)), float64(plain.steady.pct(50)))),
		fmtRatio(ratio(float64(c.cold.pct(50)), float64(plain.cold.pct(50)))))
	return nil
}

// citusAppends measures durable appends (Manager.SaveTurn, memory off:
// one append of a user/assistant pair per turn) with one writer per
// session at 1, 8 and 32 sessions.
func (r *runner) citusAppends(ctx context.Context, targets []citusTarget, out *sectionOut) error {
	levels := []struct{ sessions, turns int }{{1, 150}, {8, 400}, {32, 800}}
	if r.opts.Quick {
		levels = []struct{ sessions, turns int }{{1, 4}, {8, 16}, {32, 32}}
	}
	mgrs := make([]*memory.Manager, len(targets))
	for i, t := range targets {
		t.d.SetMaxOpenConns(max(db.DefaultMaxOpenConns, 32))
		t.d.SetMaxIdleConns(max(db.DefaultMaxOpenConns, 32))
		ms := db.NewMessageStore(t.d, db.WithLogger(r.quiet))
		for s := range 32 {
			if err := ms.Create(ctx, fmt.Sprint("s16-append-", s), benchUser); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		m, err := r.newManager(ms, nil, nil, takeLastConfig())
		if err != nil {
			return err
		}
		defer m.Close()
		mgrs[i] = m
	}
	// The floor: a bare two-row insert of the turn, committed, into a table
	// of the same schema keyed by session id (on Citus distributed and
	// colocated with the sessions): the least a durable append sends.
	var seq atomic.Int64
	for i, t := range targets {
		if _, err := t.d.ExecContext(ctx, `CREATE TABLE s16_floor_turns (session_id TEXT NOT NULL, n BIGINT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (session_id, n))`); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if i > 0 {
			var parent string
			if err := t.d.GetContext(ctx, &parent, `SELECT format('%I.%I', current_schema(), 'strata_sessions')`); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if _, err := t.d.ExecContext(ctx, `SELECT create_distributed_table(format('%I.%I', current_schema(), 's16_floor_turns'), 'session_id', colocate_with => $1)`, parent); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	floor := func(t citusTarget) func(s, u, a string) error {
		return func(s, u, a string) error {
			n := seq.Add(2)
			_, err := t.d.ExecContext(ctx, `INSERT INTO s16_floor_turns (session_id, n, content) VALUES ($1, $2, $3), ($1, $4, $5)`, s, n-1, u, n, a)
			return err
		}
	}
	pairs := [][2]string{{"What is the weather in Lisbon tomorrow?", "Sunny, 24 °C, a light breeze from the north-west."}}
	runs := make([][]writeRun, len(levels))
	floorRuns := make([][]writeRun, len(levels))
	for l := range levels {
		runs[l] = make([]writeRun, len(targets))
		floorRuns[l] = make([]writeRun, len(targets))
	}
	for round := range citusRounds {
		for l, lv := range levels {
			for i, m := range mgrs {
				if round == 0 {
					r.progress("  citus: appends on %s, %d sessions", targets[i].name, lv.sessions)
				}
				w, err := writeWorkers(lv.sessions, lv.sessions, lv.turns, "s16-append-", pairs, func(s, u, a string) error {
					return m.SaveTurn(ctx, s, benchUser, u, a)
				})
				if err != nil {
					return fmt.Errorf("%s, %d sessions: %w", targets[i].name, lv.sessions, err)
				}
				runs[l][i].turns += w.turns
				runs[l][i].wall += w.wall
				runs[l][i].lat = append(runs[l][i].lat, w.lat...)
				f, err := writeWorkers(lv.sessions, lv.sessions, lv.turns, "s16-append-", pairs, floor(targets[i]))
				if err != nil {
					return fmt.Errorf("%s, %d sessions, the floor: %w", targets[i].name, lv.sessions, err)
				}
				floorRuns[l][i].turns += f.turns
				floorRuns[l][i].wall += f.wall
				floorRuns[l][i].lat = append(floorRuns[l][i].lat, f.lat...)
			}
		}
	}
	var rows [][]string
	var ratios, floorRatios []string
	for l, lv := range levels {
		plain, plainFloor := runs[l][0], floorRuns[l][0]
		for i, t := range targets {
			w, f := runs[l][i], floorRuns[l][i]
			rows = append(rows, []string{fmtInt(lv.sessions), t.name, "Strata", fmtInt(w.turns), fmtFloat(w.tps()), fmtDur(w.lat.pct(50)), fmtDur(w.lat.pct(95)),
				fmtRatio(ratio(w.tps(), plain.tps()))})
			rows = append(rows, []string{fmtInt(lv.sessions), t.name, "floor: bare two-row insert", fmtInt(f.turns), fmtFloat(f.tps()), fmtDur(f.lat.pct(50)), fmtDur(f.lat.pct(95)),
				fmtRatio(ratio(f.tps(), plainFloor.tps()))})
		}
		last := len(targets) - 1
		ratios = append(ratios, fmt.Sprintf("%s at %d", fmtRatio(ratio(runs[l][last].tps(), plain.tps())), lv.sessions))
		floorRatios = append(floorRatios, fmt.Sprintf("%s at %d", fmtRatio(ratio(floorRuns[l][last].tps(), plainFloor.tps())), lv.sessions))
	}
	out.printf("\n### Durable appends\n\n`Manager.SaveTurn` (memory off: one `strata_append` call per turn, a user/assistant pair, committed), one writer per session; on Citus the call is delegated to the worker holding the session. The floor, measured in the same rounds, is the least a durable append sends: one two-row `INSERT` of the turn, committed, into a table keyed by session id (on Citus distributed and colocated with the sessions, so a single-shard router insert through the coordinator).\n\n")
	out.printf("%s\n", mdTable([]string{"sessions", "database", "writer", "turns", "turns/s", "p50", "p95", "turns/s ÷ plain"}, rows))
	out.printf("The floor on Citus ÷ the floor on plain PostgreSQL: %s sessions; Strata's appends: %s sessions.\n", strings.Join(floorRatios, ", "), strings.Join(ratios, ", "))
	out.headline("Strata on Citus%s: durable appends %s sessions of plain PostgreSQL's turns/s", durableLabel(r), strings.Join(ratios, ", "))
	return nil
}

// citusPlans records the statements Strata sends for a load, an append
// and a fold on the distributed schema (a pool whose driver notes every
// query) and shows the plan Citus makes for each, checked: one task, no
// subplan gathered on the coordinator, and Strata's functions delegated
// to the worker holding the session.
func (r *runner) citusPlans(ctx context.Context, cz *pgEnv, out *sectionOut) error {
	rec := &recorder{}
	base, err := pq.NewConnector(cz.url)
	if err != nil {
		return err
	}
	d := sqlx.NewDb(sql.OpenDB(recordingConnector{base, rec}), "postgres")
	defer d.Close()
	d.SetMaxOpenConns(1)
	ms, sums := db.NewMessageStore(d, db.WithLogger(r.quiet)), db.NewSummaryStore(d, db.WithLogger(r.quiet))
	const session = "s16-plan"
	if err := ms.Create(ctx, session, benchUser); err != nil {
		return err
	}
	m, err := r.newManager(ms, sums, summary.NewExtractiveService(), chunkedConfig())
	if err != nil {
		return err
	}
	defer m.Close()
	var last int64
	var epoch int64
	rec.start("append")
	for range 12 {
		res, err := ms.Append(ctx, session, benchUser, store.Message{Role: store.RoleUser, Content: "a question about the plan"},
			store.Message{Role: store.RoleAssistant, Content: "an answer about the plan"})
		if err != nil {
			return err
		}
		last, epoch = res.LastSeq, res.Epoch
	}
	rec.start("fold")
	release, save, ok, err := ms.TryLockFold(ctx, session, time.Minute)
	if err != nil || !ok {
		return fmt.Errorf("fold lease: ok=%v, %v", ok, err)
	}
	if err := save(ctx, summary.Summary{SessionID: session, Epoch: epoch, UpToSeq: last - 4, Narrative: fixedResult.Narrative, Facts: fixedResult.Facts}); err != nil {
		release()
		return err
	}
	release()
	if err := sums.Save(ctx, summary.Summary{SessionID: session, Epoch: epoch, UpToSeq: last - 2, Narrative: fixedResult.Narrative, Facts: fixedResult.Facts}); err != nil {
		return err
	}
	if _, err := sums.Get(ctx, session); err != nil {
		return err
	}
	rec.start("load")
	for range 2 {
		if _, err := m.LoadHistory(ctx, session, benchUser); err != nil {
			return err
		}
	}
	if _, err := ms.Range(ctx, session, benchUser, 0, last, 100); err != nil {
		return err
	}
	stmts := rec.statements()
	if len(stmts) == 0 {
		return errors.New("no statement recorded")
	}
	var rows [][]string
	var failed []string
	for _, st := range stmts {
		lines, err := explainRecorded(ctx, cz.d, st)
		if err != nil {
			return fmt.Errorf("EXPLAIN %s: %w", oneLine(st.sql, 80), err)
		}
		plan := strings.Join(lines, "\n") + "\n"
		shown := st.sql
		if st.prepare != "" {
			shown = st.prepare[strings.Index(st.prepare, " AS ")+4:] // the named statement's SQL
		}
		verdict := citusSingleShard(shown, plan)
		if verdict != "" {
			failed = append(failed, fmt.Sprintf("%s (%s): %s", st.op, oneLine(st.sql, 80), verdict))
			verdict = "**no: " + verdict + "**"
		} else {
			verdict = "yes"
		}
		rows = append(rows, []string{st.op, "`" + strings.ReplaceAll(oneLine(shown, 90), "|", "\\|") + "`", citusPlanShape(plan), verdict})
	}
	out.printf("\n### Single-shard plans\n\nEvery statement Strata sent for %s on the distributed schema (recorded at the driver, deduplicated), and the plan Citus makes for it (`EXPLAIN`, with the statement's own arguments): one task, no subplan gathered on the coordinator, and Strata's functions delegated to the worker holding the session.\n\n",
		"12 appends, a fold under its lease, a summary save and read, two hierarchical loads and a range read")
	out.printf("%s\n", mdTable([]string{"operation", "statement", "plan", "one shard"}, rows))
	if len(failed) > 0 {
		return fmt.Errorf("statements not planned on one shard: %s", strings.Join(failed, "; "))
	}
	return nil
}

// citusSingleShard is "" when plan (EXPLAIN of sql on Citus) runs on one
// shard, else what is wrong: the check of the Citus tests
// (TestCitusSingleShard).
func citusSingleShard(sqlText, plan string) string {
	switch {
	case strings.Count(plan, "Task Count:") != 1 || !strings.Contains(plan, "Task Count: 1\n"):
		return "not one task"
	case strings.Contains(plan, "Distributed Subplan"), strings.Contains(plan, "pull to coordinator"):
		return "a subplan gathered on the coordinator"
	}
	for _, fn := range []string{"strata_append", "strata_load", "strata_tail", "strata_save_summary", "strata_save_journaled", "strata_journal_append"} {
		if strings.Contains(sqlText, fn+"(") && !strings.Contains(plan, "Function Scan on "+fn) {
			return fn + " not delegated to the worker"
		}
	}
	return ""
}

// citusPlanShape condenses a Citus plan to its task count and the first
// node the task runs on the worker.
func citusPlanShape(plan string) string {
	var count, node string
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Task Count:") {
			count = strings.ToLower(strings.TrimSuffix(l, ":"))
		}
		if strings.HasPrefix(l, "Node: ") && node == "" {
			for _, n := range lines[i+1:] {
				if n = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(n), "->")); n != "" {
					node = strings.TrimSpace(n)
					break
				}
			}
		}
	}
	if count == "" {
		return "no distributed step"
	}
	if node == "" {
		return count
	}
	return count + "; " + strings.ReplaceAll(node, "|", "\\|")
}

// oneLine collapses s's whitespace and cuts it to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// recorded is one statement the recording driver saw.
type recorded struct {
	op, sql string
	args    []any
	// prepare is, for a statement the server keeps by name (SQL PREPARE,
	// run by EXECUTE: sql is the EXECUTE), its PREPARE.
	prepare string
}

// recorder notes the distinct statements sent through a recording
// connection, with the operation they were sent for.
type recorder struct {
	mu    sync.Mutex
	op    string
	seen  []string
	stmts []recorded
	named map[string]string // PREPARE by statement name
}

func (r *recorder) start(op string) { r.mu.Lock(); r.op = op; r.mu.Unlock() }

func (r *recorder) note(query string, args []driver.NamedValue) {
	q := strings.TrimSpace(query)
	head := strings.ToUpper(strings.Fields(q + " x")[0])
	r.mu.Lock()
	defer r.mu.Unlock()
	var prepare string
	switch {
	case head == "PREPARE" || head == "DEALLOCATE":
		// A named statement given to the server connection with its call
		// ("PREPARE name(…) AS …; EXECUTE name(…)").
		i := strings.LastIndex(q, "; EXECUTE ")
		if i < 0 {
			return
		}
		prepare, q = q[:i+1], q[i+2:]
		if head == "DEALLOCATE" {
			prepare = strings.TrimSpace(prepare[strings.Index(prepare, ";")+1:])
		}
		if r.named == nil {
			r.named = map[string]string{}
		}
		r.named[namedStatement(prepare)] = prepare
	case head == "EXECUTE":
		prepare = r.named[namedStatement(q)]
	case !slices.Contains([]string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"}, head):
		return // BEGIN, COMMIT, SET …
	}
	if r.op == "" || slices.Contains(r.seen, q) {
		return
	}
	r.seen = append(r.seen, q)
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	r.stmts = append(r.stmts, recorded{op: r.op, sql: q, args: vals, prepare: prepare})
}

func (r *recorder) statements() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.stmts)
	for i := range out {
		if out[i].prepare == "" && strings.HasPrefix(out[i].sql, "EXECUTE ") {
			// Noted before its PREPARE: the first call on a server
			// connection, which lacked the statement.
			out[i].prepare = r.named[namedStatement(out[i].sql)]
		}
	}
	return out
}

// namedStatement is the name q (PREPARE name(…) … or EXECUTE name(…))
// gives its statement.
func namedStatement(q string) string {
	f := strings.Fields(q + " x x")[1]
	return f[:strings.Index(f+"(", "(")]
}

// explainRecorded is the plan (EXPLAIN (COSTS OFF)) of st: of its EXECUTE
// on a connection given its PREPARE for a named statement.
func explainRecorded(ctx context.Context, d *sqlx.DB, st recorded) ([]string, error) {
	if st.prepare == "" {
		var lines []string
		err := d.SelectContext(ctx, &lines, "EXPLAIN (COSTS OFF) "+st.sql, st.args...)
		return lines, err
	}
	conn, err := d.Connx(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, st.prepare); err != nil {
		return nil, err
	}
	defer func() { _, _ = conn.ExecContext(ctx, "DEALLOCATE ALL") }()
	var lines []string
	err = conn.SelectContext(ctx, &lines, "EXPLAIN (COSTS OFF) "+st.sql)
	return lines, err
}

// recordingConnector opens lib/pq connections that note their queries.
type recordingConnector struct {
	base driver.Connector
	rec  *recorder
}

func (c recordingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: conn, rec: c.rec}, nil
}

func (c recordingConnector) Driver() driver.Driver { return c.base.Driver() }

// recordingConn notes every query and passes it on to lib/pq.
type recordingConn struct {
	driver.Conn
	rec *recorder
}

func (c *recordingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.note(query, args)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *recordingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.note(query, args)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *recordingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
