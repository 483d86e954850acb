package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// loadBackend is one store setup of section 3.
type loadBackend struct {
	name  string
	store memory.MessageStore
	sums  summary.Store
	// seed stores n messages in a new session.
	seed func(ctx context.Context, session string, n int) error
}

func inMemoryLoadBackend() loadBackend {
	ms := memory.NewInMemoryStore()
	return loadBackend{
		name:  "in-memory",
		store: ms,
		sums:  summary.NewInMemoryStore(0),
		seed: func(ctx context.Context, session string, n int) error {
			if err := ms.Create(ctx, session, benchUser); err != nil {
				return err
			}
			const batch = 1000
			msgs := make([]store.Message, 0, batch)
			for g := 1; g <= n; g++ {
				role := store.RoleUser
				if g%2 == 0 {
					role = store.RoleAssistant
				}
				msgs = append(msgs, store.Message{Role: role, Content: seedText(g)})
				if len(msgs) == batch || g == n {
					if _, err := ms.Append(ctx, session, benchUser, msgs...); err != nil {
						return err
					}
					msgs = msgs[:0]
				}
			}
			return nil
		},
	}
}

// loadRounds is how many interleaved rounds section 3 measures.
const loadRounds = 3

// loadPolicy is one configuration of section 3.
type loadPolicy struct {
	name string
	cfg  memory.Config
}

// loadCell is one measurement: a backend, a policy and a history length.
type loadCell struct {
	backend, policy string
	n               int
	s               samples
}

func runLoadLatency(ctx context.Context, r *runner, out *sectionOut) error {
	policies := []loadPolicy{{"parity", parityConfig()}, {"chunked", chunkedConfig()}}
	backends := []loadBackend{inMemoryLoadBackend()}
	pgNote := ""
	if pg, err := r.postgres(ctx); err == nil {
		backends = append(backends, loadBackend{
			name:  "PostgreSQL",
			store: db.NewMessageStore(pg.d, db.WithLogger(r.quiet)),
			sums:  db.NewSummaryStore(pg.d, db.WithLogger(r.quiet)),
			seed:  func(ctx context.Context, session string, n int) error { return seedPG(ctx, pg.d, session, n) },
		})
	} else {
		pgNote = pgSkipNote(err)
	}

	out.printf("One session holding N messages (alternating user/assistant, %d characters each); `Manager.LoadHistory` with hierarchical memory on, timed call by call after %d warm-up calls, in %d interleaved rounds over the sizes (at least %d calls and %s per cell in all). A summary covering everything before the verbatim window is stored beforehand, so no fold runs while timing (checked: the summarizer is never called and every load is hierarchical). In-memory sessions are seeded through `MessageStore.Append` in batches of 1 000; PostgreSQL sessions with one `INSERT … SELECT generate_series` into the `db` schema (all sizes share one table, as in production), followed by `ANALYZE`. The baseline of the ratio is the smallest history.\n\n",
		len(seedText(1)), r.p.loadWarm, loadRounds, r.p.loadMinOps, r.p.loadMinTime)
	if pgNote != "" {
		out.printf("> %s\n\n", pgNote)
	}

	var cells []loadCell
	var roundTrip func() error // the PostgreSQL one-statement comparison, after seeding
	for _, b := range backends {
		for _, n := range r.p.loadSizes {
			session := fmt.Sprintf("s3-%d", n)
			r.progress("  load latency: %s, seeding %s messages", b.name, fmtInt(n))
			if err := b.seed(ctx, session, n); err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			if err := storeCoveringSummary(ctx, b.store, b.sums, session); err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
		}
		if b.name == "PostgreSQL" {
			b := b
			roundTrip = func() error { return runLoadRoundTrip(ctx, r, out, b) }
		}
		for _, pol := range policies {
			m, err := r.newManager(b.store, b.sums, summary.NewExtractiveService(), pol.cfg)
			if err != nil {
				return err
			}
			// Sizes are measured in interleaved rounds, so drift (a warming
			// cache, a busy neighbour) spreads over all of them.
			got := make([]samples, len(r.p.loadSizes))
			for round := range loadRounds {
				for i, n := range r.p.loadSizes {
					session := fmt.Sprintf("s3-%d", n)
					if round == 0 {
						r.progress("  load latency: %s %s, %s messages", b.name, pol.name, fmtInt(n))
					}
					var loadErr error
					s := measure(r.p.loadWarm, r.p.loadMinOps/loadRounds, 0, r.p.loadMinTime/loadRounds, func() {
						h, err := m.Load(ctx, session, benchUser)
						if err == nil && h.Mode != "hierarchical" {
							err = fmt.Errorf("load of %d messages: mode %s, want hierarchical", n, h.Mode)
						}
						if err != nil && loadErr == nil {
							loadErr = err
						}
					})
					if loadErr != nil {
						_ = m.Close()
						return loadErr
					}
					got[i] = append(got[i], s...)
				}
			}
			for i, n := range r.p.loadSizes {
				cells = append(cells, loadCell{backend: b.name, policy: pol.name, n: n, s: got[i]})
			}
			st := m.Stats()
			_ = m.Close()
			if st.SummarizerCalls != 0 {
				return fmt.Errorf("%s %s: the summarizer ran %d times while timing loads", b.name, pol.name, st.SummarizerCalls)
			}
		}
	}

	// Table: one row per backend × policy, columns per size, then the ratio.
	headers := []string{"store", "policy"}
	for _, n := range r.p.loadSizes {
		headers = append(headers, fmtInt(n)+" msgs")
	}
	headers = append(headers, fmt.Sprintf("largest ÷ smallest, means (%s ÷ %s)", fmtInt(r.p.loadSizes[len(r.p.loadSizes)-1]), fmtInt(r.p.loadSizes[0])), "largest ÷ smallest, medians", "p50 / p99 at largest")
	var rows [][]string
	pl := plot{Title: "LoadHistory latency vs history length", XLabel: "messages stored in the session (log)", YLabel: "mean latency per load, µs (log)", LogX: true, LogY: true}
	for _, b := range backends {
		for _, pol := range policies {
			row := []string{b.name, pol.name}
			var first, last samples
			ser := series{Name: b.name + " " + pol.name}
			for _, c := range cells {
				if c.backend != b.name || c.policy != pol.name {
					continue
				}
				if first == nil {
					first = c.s
				}
				last = c.s
				row = append(row, fmtDur(c.s.mean()))
				ser.X = append(ser.X, float64(c.n))
				ser.Y = append(ser.Y, float64(c.s.mean())/1e3)
			}
			rt := ratio(float64(last.mean()), float64(first.mean()))
			rtMed := ratio(float64(last.pct(50)), float64(first.pct(50)))
			row = append(row, fmtRatio(rt), fmtRatio(rtMed), fmtDur(last.pct(50))+" / "+fmtDur(last.pct(99)))
			rows = append(rows, row)
			pl.Series = append(pl.Series, ser)
			if pol.name == "parity" {
				out.headline("Load latency (§3), %s: %s per `LoadHistory` at %s stored messages vs %s at %s — ratio %s (medians: %s; goal: flat).",
					b.name, fmtDur(last.mean()), fmtInt(r.p.loadSizes[len(r.p.loadSizes)-1]), fmtDur(first.mean()), fmtInt(r.p.loadSizes[0]), fmtRatio(rt), fmtRatio(rtMed))
			}
		}
	}
	out.printf("%s", r.env.provenance(len(backends) > 1))
	out.printf("Mean time per `LoadHistory` call (the ratio of medians is less sensitive to other processes' interference than the ratio of means):\n\n%s\n", mdTable(headers, rows))
	out.file("load-latency.svg", pl.svg())
	out.printf("![LoadHistory latency vs history length](load-latency.svg)\n")
	if roundTrip != nil {
		if err := roundTrip(); err != nil {
			return err
		}
		return runFullLedger(ctx, r, out)
	}
	return nil
}

// rawTailSQL is the baseline of the one-round-trip comparison: the newest
// messages of a session by one indexed query, with no ownership check,
// count or summary. LIMIT is %s: a bound parameter, as an application
// usually writes it (PostgreSQL then plans each execution anew), or a
// literal, as the db store writes its own (the prepared statement's generic
// plan is reused): the floor.
const rawTailSQL = `
SELECT seq, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at
  FROM strata_messages
 WHERE session_id = $1
 ORDER BY seq DESC
 LIMIT %s`

// otherSummaryStore hides the db summary store's identity, so that the
// manager reads the tail and the summary in two calls, as it does beside
// any summary store the message store cannot read itself.
type otherSummaryStore struct{ summary.Store }

// runLoadRoundTrip compares, on PostgreSQL, Manager.Load (one statement:
// ownership, count, epoch, tail and summary), the same load in two calls,
// MessageStore.Snapshot alone, and one prepared indexed tail query, call by
// call interleaved, at the smallest and largest history.
func runLoadRoundTrip(ctx context.Context, r *runner, out *sectionOut, b loadBackend) error {
	pg, err := r.postgres(ctx)
	if err != nil {
		return err
	}
	cfg := parityConfig()
	rows := max(2*cfg.MaxConversationTurns, cfg.RecentMessageCount) + 8 // what a load reads
	one, err := r.newManager(b.store, b.sums, summary.NewExtractiveService(), cfg)
	if err != nil {
		return err
	}
	defer one.Close()
	two, err := r.newManager(b.store, otherSummaryStore{b.sums}, summary.NewExtractiveService(), cfg)
	if err != nil {
		return err
	}
	defer two.Close()
	snap, ok := store.Compose(b.store, b.sums).(*db.MessageStore)
	if !ok {
		return errors.New("the db message store does not keep its summary store's summaries")
	}
	bound, err := pg.d.PreparexContext(ctx, fmt.Sprintf(rawTailSQL, "$2"))
	if err != nil {
		return err
	}
	defer bound.Close()
	literal, err := pg.d.PreparexContext(ctx, fmt.Sprintf(rawTailSQL, strconv.Itoa(rows)))
	if err != nil {
		return err
	}
	defer literal.Close()

	sizes := []int{r.p.loadSizes[0], r.p.loadSizes[len(r.p.loadSizes)-1]}
	type variant struct {
		name string
		fn   func(session string) error
	}
	load := func(m *memory.Manager) func(string) error {
		return func(session string) error {
			h, err := m.Load(ctx, session, benchUser)
			if err == nil && h.Mode != "hierarchical" {
				err = fmt.Errorf("load of %s: mode %s, want hierarchical", session, h.Mode)
			}
			return err
		}
	}
	variants := []variant{
		{"raw tail query, LIMIT bound", func(session string) error { return rawTail(ctx, bound, rows, session, rows) }},
		{"raw tail query, LIMIT literal", func(session string) error { return rawTail(ctx, literal, rows, session) }},
		{"`Snapshot`", func(session string) error {
			t, s, err := snap.Snapshot(ctx, session, benchUser, rows)
			if err == nil && (s == nil || len(t.Messages) != rows) {
				err = fmt.Errorf("snapshot of %s: %d messages, summary %v", session, len(t.Messages), s != nil)
			}
			return err
		}},
		{"`Load`, one statement", load(one)},
		{"`Load`, two calls", load(two)},
	}
	got := make([][]samples, len(sizes))
	for i, n := range sizes {
		session := fmt.Sprintf("s3-%d", n)
		r.progress("  load round trips: PostgreSQL, %s messages", fmtInt(n))
		got[i] = make([]samples, len(variants))
		for range r.p.loadWarm {
			for _, v := range variants {
				if err := v.fn(session); err != nil {
					return err
				}
			}
		}
		// Call by call, each variant in turn: interference hits all alike.
		began := time.Now()
		for k := 0; k < r.p.loadMinOps || time.Since(began) < r.p.loadMinTime; k++ {
			for j, v := range variants {
				t0 := time.Now()
				if err := v.fn(session); err != nil {
					return err
				}
				got[i][j] = append(got[i][j], time.Since(t0))
			}
		}
	}
	if st := one.Stats(); st.SummarizerCalls != 0 {
		return fmt.Errorf("the summarizer ran %d times while timing loads", st.SummarizerCalls)
	}

	out.printf("\n### One round trip on PostgreSQL\n\n")
	out.printf("The same PostgreSQL sessions (with their covering summaries), five ways, call by call in turn (%d warm-up rounds, then at least %d rounds and %s per size): one prepared indexed query for the newest %d messages (no ownership check, no count, no summary), with its LIMIT bound as a parameter as applications usually write it (PostgreSQL plans every execution of such a statement anew) and with the LIMIT written into the statement (the prepared statement's generic plan is reused: the floor; the db store prepares nothing by the protocol, so that it works through transaction-mode poolers: its load is one EXECUTE of a statement each server connection keeps by SQL PREPARE, calling a PL/pgSQL function whose plan the server keeps per connection); `MessageStore.Snapshot`, the one statement that reads ownership, count, epoch, those messages and the summary; `Manager.LoadHistory` over it (parity policy, hierarchical history assembled); and the same load with the summary store hidden behind a wrapper, so the manager falls back to two calls (tail, then summary). **Goal: `Load` p50 ≤ 1.5 × the raw tail query's** (the ratios are given against both forms).\n\n",
		r.p.loadWarm, r.p.loadMinOps, r.p.loadMinTime, rows)
	out.printf("%s", r.env.provenance(true))
	var tbl [][]string
	for i, n := range sizes {
		bnd, lit := got[i][0].pct(50), got[i][1].pct(50)
		for j, v := range variants {
			s := got[i][j]
			tbl = append(tbl, []string{fmtInt(n), v.name, fmtDur(s.pct(50)), fmtDur(s.pct(99)),
				fmtRatio(ratio(float64(s.pct(50)), float64(bnd))), fmtRatio(ratio(float64(s.pct(50)), float64(lit)))})
		}
		load := got[i][3].pct(50)
		out.headline("Load in one round trip (§3, PostgreSQL%s): `LoadHistory` p50 %s at %s stored messages — %s of one indexed tail query with a bound LIMIT (%s) and %s of the same query with a literal LIMIT (%s, the floor) (goal ≤ 1.5×; two calls: %s / %s).",
			durableLabel(r), fmtDur(load), fmtInt(n), fmtRatio(ratio(float64(load), float64(bnd))), fmtDur(bnd),
			fmtRatio(ratio(float64(load), float64(lit))), fmtDur(lit),
			fmtRatio(ratio(float64(got[i][4].pct(50)), float64(bnd))), fmtRatio(ratio(float64(got[i][4].pct(50)), float64(lit))))
	}
	out.printf("%s\n", mdTable([]string{"messages stored", "read", "p50", "p99", "p50 ÷ raw, LIMIT bound", "p50 ÷ raw, LIMIT literal"}, tbl))
	return nil
}

// durableLabel says, for headlines, whether the server was durable.
func durableLabel(r *runner) string {
	if r.env.Durable {
		return ", durable settings"
	}
	return ", NON-DURABLE settings (fsync off)"
}

// rawTail runs a baseline query with args, scans every row, and checks
// that it read n.
func rawTail(ctx context.Context, st *sqlx.Stmt, n int, args ...any) error {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	return scanTail(rows, n)
}

// scanTail scans every row of a baseline tail query into the variables a
// reader of messages would fill, closes rows, and checks that it read n.
func scanTail(rows *sql.Rows, n int) error {
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

// storeCoveringSummary saves a summary covering every message before the
// verbatim window (the last RecentMessageCount messages) of session.
func storeCoveringSummary(ctx context.Context, ms memory.MessageStore, sums summary.Store, session string) error {
	k := parityConfig().RecentMessageCount
	t, err := ms.Tail(ctx, session, benchUser, k+1)
	if err != nil {
		return err
	}
	if len(t.Messages) != k+1 {
		return errors.New("session too short for a covering summary")
	}
	return sums.Save(ctx, summary.Summary{
		SessionID: session,
		Epoch:     t.Epoch, // the summary belongs to this incarnation of the session
		Narrative: fixedResult.Narrative,
		Facts:     fixedResult.Facts,
		UpToSeq:   t.Messages[0].Seq,
		CreatedAt: time.Now(),
	})
}

// pgSkipNote explains why a PostgreSQL part did not run.
func pgSkipNote(err error) string {
	if errors.Is(err, errNoPostgres) {
		return "**PostgreSQL: skipped** — DATABASE_URL is unset. `make bench` runs the benchmark under `scripts/with-postgres.sh`, which finds or starts a server and sets it; or run `DATABASE_URL=postgres://… go run ./bench/cmd/strata-bench` (any server where the role may create a schema; the run uses a throwaway schema and drops it)."
	}
	return "**PostgreSQL: unavailable** — " + err.Error()
}
