package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"
	lcschema "github.com/tmc/langchaingo/schema"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Section 15 sets Strata beside what a langchaingo user would otherwise
// pick for a conversation kept in PostgreSQL: langchaingo's own chat
// history table under its window and token buffers. The history itself
// comes from outside this package (bench/peers); the section runs it and
// Strata on the same database, interleaved.

// pghWindowTurns is the peer window buffer's size in turns
// (NewConversationWindowBuffer(10): the last 20 messages), matching
// Strata's verbatim window of the default configuration.
const pghWindowTurns = 10

// pghLoadRounds is how many interleaved rounds the load part measures:
// each cell's time is cut into this many slices spread over the whole
// part, so that a moment of noise on the shared machine (a checkpoint,
// another process) falls on every cell alike rather than on whichever
// cell it coincides with: the load p50s are some tens of microseconds,
// and with three rounds a cell's p50 moved by a third between runs of
// the same code.
const pghLoadRounds = 12

// pghSystem is one system of the load part: a name and one load of a
// session of n messages.
type pghSystem struct {
	name string
	load func(ctx context.Context, n int) (int, error) // messages handed to the model
	// before, when not nil, runs untimed before each timed load (an agent
	// loop's turn).
	before func(ctx context.Context, n int) error
}

// measureAfter is measure with before run untimed ahead of every call of
// fn, warm-up calls included; before's first error stops it.
func measureAfter(warm, minIters int, minTime time.Duration, before func() error, fn func()) (samples, error) {
	for range warm {
		if err := before(); err != nil {
			return nil, err
		}
		fn()
	}
	var out samples
	began := time.Now()
	for len(out) < minIters || time.Since(began) < minTime {
		if err := before(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		fn()
		out = append(out, time.Since(t0))
	}
	return out, nil
}

func runPGHistory(ctx context.Context, r *runner, out *sectionOut) error {
	if strings.TrimSpace(r.opts.DatabaseURL) == "" {
		out.printf("> %s\n", pgSkipNote(errNoPostgres))
		return nil
	}
	raw, why := r.harness(ctx, "-section", "15", "-database-url", r.opts.DatabaseURL)
	var rep SectionReport
	if raw != nil {
		if err := json.Unmarshal(raw, &rep); err != nil || rep.Body == "" {
			raw, why = nil, fmt.Sprintf("the output of `go run .` in `%s` is not its JSON report (%v)", peersDir, err)
		}
	}
	if raw == nil {
		out.printf("**langchaingo's PostgreSQL chat history did not run:** %s.\n", why)
		return nil
	}
	out.printf("%s", rep.Body)
	for _, h := range rep.Headlines {
		out.headline("%s", h)
	}
	for name, b := range rep.Files {
		out.file(name, b)
	}
	return nil
}

// pgHistoryBody measures and renders section 15.
func (r *runner) pgHistoryBody(ctx context.Context, peer PGHistoryPeer, out *sectionOut) error {
	pg, err := r.postgres(ctx)
	if err != nil {
		return err
	}
	plain, err := peer.Open(ctx, pg.url, pg.schema, "lc_history", false)
	if err != nil {
		return fmt.Errorf("%s: %w", peer.Name, err)
	}
	defer plain.Close()
	indexed, err := peer.Open(ctx, pg.url, pg.schema, "lc_history_indexed", true)
	if err != nil {
		return fmt.Errorf("%s: %w", peer.Name, err)
	}
	defer indexed.Close()

	out.printf("What a langchaingo user would otherwise reach for, on the same PostgreSQL database as Strata, run in this process one after the other:\n\n- %s\n- **Strata**: `db.NewMessageStore` + `db.NewSummaryStore` under `memory.Manager`, hierarchical memory on (chunked policy unless said otherwise), the offline extractive summarizer.\n\n", peer.Description)
	out.printf("%s", r.env.provenance(true))

	if err := r.pghLoads(ctx, pg, peer, plain, indexed, out); err != nil {
		return err
	}
	if err := r.pghAppends(ctx, pg, peer, indexed, out); err != nil {
		return err
	}
	if err := r.pghToolRounds(ctx, pg, peer, indexed, out); err != nil {
		return err
	}
	return r.pghCatchUp(ctx, pg, out)
}

// pghLoads is the load part: p50/p95 of one load against session length.
func (r *runner) pghLoads(ctx context.Context, pg *pgEnv, peer PGHistoryPeer, plain, indexed PGHistory, out *sectionOut) error {
	sizes := []int{20, 200, 2_000, 20_000}
	if r.opts.Quick {
		sizes = []int{20, 200}
	}
	cfg := chunkedConfig()
	// Strata four ways: the default store and one with prepared
	// statements (db.WithPreparedStatements, for a direct connection),
	// each in an agent loop's steady state (the store read the session
	// before and holds its tail: the load's statement confirms it and
	// sends no message) and cold (db.WithTailCache(0, 0): every load reads
	// the whole tail, as the first load of a session by this process, or
	// the first after another replica erased or replaced messages, does).
	newMgr := func(opts ...db.Option) (*memory.Manager, error) {
		return r.newManager(db.NewMessageStore(pg.d, append([]db.Option{db.WithLogger(r.quiet)}, opts...)...),
			db.NewSummaryStore(pg.d, db.WithLogger(r.quiet)), summary.NewExtractiveService(), cfg)
	}
	var mgrs [6]*memory.Manager
	for i, opts := range [][]db.Option{
		nil,
		{db.WithPreparedStatements()},
		{db.WithTailCache(0, 0)},
		{db.WithTailCache(0, 0), db.WithPreparedStatements()},
		nil,                           // the true agent loop's
		{db.WithPreparedStatements()}, // the true agent loop's, prepared
	} {
		m, err := newMgr(opts...)
		if err != nil {
			return err
		}
		defer m.Close()
		mgrs[i] = m
	}

	session := func(n int) string { return fmt.Sprintf("s15-load-%d", n) }
	// The sessions of the true agent loops (load, append a turn, load …),
	// one per manager, seeded as session(n) is; they grow by a turn before
	// every load.
	loopSession := func(n, i int) string { return fmt.Sprintf("s15-loop-%d-%d", i, n) }
	histories := map[string]map[int]lcschema.ChatMessageHistory{"plain": {}, "indexed": {}}
	for _, n := range sizes {
		r.progress("  langchaingo history: seeding %s messages", fmtInt(n))
		if err := seedPG(ctx, pg.d, session(n), n); err != nil {
			return err
		}
		for _, id := range []string{session(n), loopSession(n, 4), loopSession(n, 5)} {
			if id != session(n) {
				if err := seedPG(ctx, pg.d, id, n); err != nil {
					return err
				}
			}
			if n > cfg.TriggerMessageCount {
				// The summary covering all but the verbatim window, as a
				// session of this length has after its folds: no fold runs
				// while timing (but in the true agent loops, whose turns
				// fold as they would in production).
				if err := storeCoveringSummary(ctx, db.NewMessageStore(pg.d), db.NewSummaryStore(pg.d), id); err != nil {
					return err
				}
			}
		}
		for kind, t := range map[string]PGHistory{"plain": plain, "indexed": indexed} {
			if err := t.Seed(ctx, session(n), n, seedFiller); err != nil {
				return fmt.Errorf("%s: seed: %w", peer.Name, err)
			}
			h, err := t.Open(ctx, session(n))
			if err != nil {
				return fmt.Errorf("%s: %w", peer.Name, err)
			}
			histories[kind][n] = h
		}
	}
	if _, err := pg.d.ExecContext(ctx, `ANALYZE`); err != nil {
		return err
	}

	window := func(kind string) func(ctx context.Context, n int) (int, error) {
		return func(ctx context.Context, n int) (int, error) {
			wb := lcmemory.NewConversationWindowBuffer(pghWindowTurns, lcmemory.WithChatHistory(histories[kind][n]), lcmemory.WithReturnMessages(true))
			v, err := wb.LoadMemoryVariables(ctx, map[string]any{})
			if err != nil {
				return 0, err
			}
			msgs, _ := v[wb.MemoryKey].([]llms.ChatMessage)
			return len(msgs), nil
		}
	}
	strata := func(m *memory.Manager) func(ctx context.Context, n int) (int, error) {
		return func(ctx context.Context, n int) (int, error) {
			h, err := m.LoadHistory(ctx, session(n), benchUser)
			return len(h), err
		}
	}
	loop := func(i int) pghSystem {
		turn := 0
		return pghSystem{
			load: func(ctx context.Context, n int) (int, error) {
				h, err := mgrs[i].LoadHistory(ctx, loopSession(n, i), benchUser)
				return len(h), err
			},
			before: func(ctx context.Context, n int) error {
				turn++
				return mgrs[i].SaveTurn(ctx, loopSession(n, i), benchUser, fmt.Sprint("question ", turn), fmt.Sprint("answer ", turn))
			},
		}
	}
	trueLoop, trueLoopPrepared := loop(4), loop(5)
	trueLoop.name = "Strata, true agent loop (load, append a turn, load …; loads timed)"
	trueLoopPrepared.name = "Strata, true agent loop, prepared statements"
	// The rows of Strata; pghPeerIndexed is the peer's indexed window.
	const pghStrataRows, pghPeerIndexed = 6, 7
	systems := []pghSystem{
		{name: "Strata (chunked, memory on), agent loop (tail held)", load: strata(mgrs[0])},
		{name: "Strata, agent loop, prepared statements", load: strata(mgrs[1])},
		{name: "Strata, cold (tail not held)", load: strata(mgrs[2])},
		{name: "Strata, cold, prepared statements", load: strata(mgrs[3])},
		trueLoop,
		trueLoopPrepared,
		{name: fmt.Sprintf("%s, window buffer (%d turns), no index", peer.Name, pghWindowTurns), load: window("plain")},
		{name: fmt.Sprintf("%s, window buffer (%d turns), index on (session_id, id)", peer.Name, pghWindowTurns), load: window("indexed")},
		{name: peer.Name + ", token buffer (2 000 tokens), index", load: func(ctx context.Context, n int) (int, error) {
			// LoadMemoryVariables of the token buffer never applies its
			// limit (only SaveContext prunes), so it needs no model here.
			tb := lcmemory.NewConversationTokenBuffer(nil, 2000, lcmemory.WithChatHistory(histories["indexed"][n]), lcmemory.WithReturnMessages(true))
			v, err := tb.LoadMemoryVariables(ctx, map[string]any{})
			if err != nil {
				return 0, err
			}
			msgs, _ := v[tb.MemoryKey].([]llms.ChatMessage)
			return len(msgs), nil
		}},
	}

	type cell struct {
		s    samples
		msgs int
	}
	cells := make([][]cell, len(systems))
	for i := range cells {
		cells[i] = make([]cell, len(sizes))
	}
	warm, minOps, minTime := 3, 30, 600*time.Millisecond
	if r.opts.Quick {
		warm, minOps, minTime = 1, 3, 20*time.Millisecond
	}
	perRound := (minOps + pghLoadRounds - 1) / pghLoadRounds // at least minOps calls in all
	for round := range pghLoadRounds {
		for j, n := range sizes {
			for i, sys := range systems {
				if round == 0 {
					r.progress("  langchaingo history: %s, %s messages", sys.name, fmtInt(n))
				}
				// Every cell starts alike: no fold left running by a true
				// agent loop's turns, and no garbage left by the cell
				// before (the peer's loads of long sessions allocate
				// megabytes each), so that a cell's timings are its own.
				for _, m := range mgrs {
					if err := m.Flush(ctx); err != nil {
						return err
					}
				}
				runtime.GC()
				var loadErr error
				timedLoad := func() {
					k, err := sys.load(ctx, n)
					if err != nil && loadErr == nil {
						loadErr = err
					}
					cells[i][j].msgs = k
				}
				var s samples
				if sys.before != nil {
					var err error
					if s, err = measureAfter(warm, perRound, minTime/pghLoadRounds, func() error { return sys.before(ctx, n) }, timedLoad); err != nil {
						return fmt.Errorf("%s, %d messages: turn: %w", sys.name, n, err)
					}
				} else {
					s = measure(warm, perRound, 0, minTime/pghLoadRounds, timedLoad)
				}
				if loadErr != nil {
					return fmt.Errorf("%s, %d messages: %w", sys.name, n, loadErr)
				}
				cells[i][j].s = append(cells[i][j].s, s...)
			}
		}
	}

	out.printf("### Load latency against session length\n\nOne session of N messages (alternating user/assistant, %d characters each) in each system's own tables, all sizes in one table per system as in production; each system's load as its users call it, timed call by call after %d warm-up calls, in %d interleaved rounds (at least %d calls and %s per cell; each cell starts after Strata's background folds are flushed and a garbage collection, untimed). Strata's sessions longer than its trigger (%d messages) hold the summary their folds would have made, so no fold runs while timing. The peer's window buffer reads the whole session and keeps the last %d messages; its token buffer returns everything it reads. Strata runs six ways: in an agent loop's steady state (its store read the session before and holds the tail and summary, so the load is one plain primary-key statement that confirms them), in a true agent loop (before each timed load, an untimed turn — a user and an assistant message — is saved through the manager, which extends the held tail and folds as in production; the session grows from N by a turn per load) and cold (`db.WithTailCache(0, 0)`: every load reads the whole tail, as a first load by this process or the first after another replica erased or replaced messages does), each with the default settings and with `db.WithPreparedStatements` (a direct connection). Ratios in the peer's rows are the peer's p50 over Strata's agent-loop p50; in Strata's other rows, that row's p50 over the indexed window buffer's.\n\n",
		len(seedText(1)), warm, pghLoadRounds, minOps, minTime, cfg.TriggerMessageCount, 2*pghWindowTurns)
	headers := []string{"system"}
	for _, n := range sizes {
		headers = append(headers, fmtInt(n)+" messages: p50 / p95 (messages handed over)")
	}
	var rows [][]string
	pl := plot{Title: "Load latency (p50) vs session length, PostgreSQL", XLabel: "messages stored in the session (log)", YLabel: "p50 latency per load, µs (log)", LogX: true, LogY: true}
	for i, sys := range systems {
		row := []string{sys.name}
		ser := series{Name: shortName(sys.name)}
		for j, n := range sizes {
			c := cells[i][j]
			cellText := fmt.Sprintf("%s / %s (%s)", fmtDur(c.s.pct(50)), fmtDur(c.s.pct(95)), fmtInt(c.msgs))
			if i >= pghStrataRows {
				cellText += " · " + fmtRatio(ratio(float64(c.s.pct(50)), float64(cells[0][j].s.pct(50))))
			} else if i > 0 {
				cellText += " · " + fmtRatio(ratio(float64(c.s.pct(50)), float64(cells[pghPeerIndexed][j].s.pct(50)))) + " of the indexed window's"
			}
			row = append(row, cellText)
			ser.X = append(ser.X, float64(n))
			ser.Y = append(ser.Y, float64(c.s.pct(50))/1e3)
		}
		rows = append(rows, row)
		pl.Series = append(pl.Series, ser)
	}
	out.printf("%s\n", mdTable(headers, rows))
	out.file("load-vs-langchaingo.svg", pl.svg())
	out.printf("![Load p50 against session length: Strata and langchaingo's PostgreSQL history](load-vs-langchaingo.svg)\n\n")

	st := cells[0]
	first, last := st[0].s.pct(50), st[len(st)-1].s.pct(50)
	peerIdx := cells[pghPeerIndexed][0].s.pct(50)
	cold := cells[2][0].s.pct(50)
	prep, prepCold := cells[1][0].s.pct(50), cells[3][0].s.pct(50)
	tl, tlLast, tlPrep := cells[4][0].s.pct(50), cells[4][len(sizes)-1].s.pct(50), cells[5][0].s.pct(50)
	out.printf("**Goals (issue: faster than the peer at every size), on the agent loop's load with the default settings:** Strata's load p50 ≤ 1.0× the indexed window buffer's at %d messages: **%s** (Strata %s, peer %s; cold %s: %s); flat from %s to %s messages (≤ 1.2×): **%s**. With prepared statements (direct connection): %s at %d messages (cold %s). True agent loop (a turn appended before each load): %s at %d messages (prepared %s), flat %s.\n\n",
		sizes[0], fmtRatio(ratio(float64(first), float64(peerIdx))), fmtDur(first), fmtDur(peerIdx), fmtDur(cold), fmtRatio(ratio(float64(cold), float64(peerIdx))),
		fmtInt(sizes[0]), fmtInt(sizes[len(sizes)-1]), fmtRatio(ratio(float64(last), float64(first))),
		fmtRatio(ratio(float64(prep), float64(peerIdx))), sizes[0], fmtRatio(ratio(float64(prepCold), float64(peerIdx))),
		fmtRatio(ratio(float64(tl), float64(peerIdx))), sizes[0], fmtRatio(ratio(float64(tlPrep), float64(peerIdx))), fmtRatio(ratio(float64(tlLast), float64(tl))))
	out.headline("Against langchaingo's PostgreSQL history (§15, memory on): Strata's load p50 in an agent loop is %s the indexed window buffer's at %s messages (cold, tail not held: %s; prepared statements: %s) and %s at %s (peer %s vs Strata %s); Strata from %s to %s messages: %s.",
		fmtRatio(ratio(float64(first), float64(peerIdx))), fmtInt(sizes[0]), fmtRatio(ratio(float64(cold), float64(peerIdx))), fmtRatio(ratio(float64(prep), float64(peerIdx))),
		fmtRatio(ratio(float64(last), float64(cells[pghPeerIndexed][len(sizes)-1].s.pct(50)))), fmtInt(sizes[len(sizes)-1]),
		fmtDur(cells[pghPeerIndexed][len(sizes)-1].s.pct(50)), fmtDur(last), fmtInt(sizes[0]), fmtInt(sizes[len(sizes)-1]), fmtRatio(ratio(float64(last), float64(first))))
	return nil
}

// shortName cuts a system's row name for a plot legend.
func shortName(s string) string {
	s = strings.ReplaceAll(s, "window buffer", "window")
	s = strings.ReplaceAll(s, "index on (session_id, id)", "index")
	return strings.ReplaceAll(s, ", memory on", "")
}

// pghAppender is one system of the append part.
type pghAppender struct {
	name string
	// open prepares session i of a cell and returns its turn function.
	open func(ctx context.Context, cellID string, i int) (func(ctx context.Context, u, a string) error, error)
	// drain waits for the system's background work (nil: none).
	drain func(ctx context.Context) error
	// folds counts the summaries the system's folds stored (nil: none).
	folds func() int64
	close func()
}

// pghAppends is the append part: durable turns per second at 1/8/32
// sessions, memory on and off, against the peer's two inserts, each
// system's window cut into slices taken in interleaved rounds, its
// folding drained after each slice.
func (r *runner) pghAppends(ctx context.Context, pg *pgEnv, peer PGHistoryPeer, indexed PGHistory, out *sectionOut) error {
	sessions := []int{1, 8, 32}
	window := 4 * time.Second
	appendRounds := 4
	if r.opts.Quick {
		sessions, window, appendRounds = []int{1, 8}, 300*time.Millisecond, 1
	}
	pairs := [][2]string{}
	if l, err := r.loadLoCoMo(); err == nil {
		pairs = l.Pairs()
	}
	if len(pairs) == 0 {
		for g := 1; g <= 200; g += 2 {
			pairs = append(pairs, [2]string{seedText(g), seedText(g + 1)})
		}
	}

	strata := func(name string, cfg memory.Config) (pghAppender, error) {
		m, err := r.newManager(db.NewMessageStore(pg.d, db.WithLogger(r.quiet)), db.NewSummaryStore(pg.d, db.WithLogger(r.quiet)), summary.NewExtractiveService(), cfg)
		if err != nil {
			return pghAppender{}, err
		}
		return pghAppender{
			name: name,
			open: func(ctx context.Context, cellID string, i int) (func(ctx context.Context, u, a string) error, error) {
				s := fmt.Sprintf("s15-append-%s-%d", cellID, i)
				return func(ctx context.Context, u, a string) error { return m.SaveTurn(ctx, s, benchUser, u, a) }, nil
			},
			drain: m.Flush,
			folds: func() int64 { return m.Stats().Folds },
			close: func() { _ = m.Close() },
		}, nil
	}
	off := parityConfig()
	off.Enabled = false
	var systems []pghAppender
	for _, c := range []struct {
		name string
		cfg  memory.Config
	}{{"Strata, memory off", off}, {"Strata, chunked, memory on", chunkedConfig()}, {"Strata, parity, memory on", parityConfig()}} {
		a, err := strata(c.name, c.cfg)
		if err != nil {
			return err
		}
		defer a.close()
		systems = append(systems, a)
	}
	systems = append(systems, pghAppender{
		name: peer.Name + ": AddUserMessage + AddAIMessage",
		open: func(ctx context.Context, cellID string, i int) (func(ctx context.Context, u, a string) error, error) {
			h, err := indexed.Open(ctx, fmt.Sprintf("s15-append-%s-%d", cellID, i))
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, u, a string) error {
				if err := h.AddUserMessage(ctx, u); err != nil {
					return err
				}
				return h.AddAIMessage(ctx, a)
			}, nil
		},
		close: func() {},
	})

	type result struct {
		turns, folds  int64
		window, drain time.Duration
	}
	res := make([][]result, len(systems))
	for i := range res {
		res[i] = make([]result, len(sessions))
	}
	for j, k := range sessions {
		// Each system's k sessions, kept across the rounds: a session goes
		// on where its previous round stopped.
		turnFns := make([][]func(ctx context.Context, u, a string) error, len(systems))
		next := make([][]int, len(systems))
		for i, sys := range systems {
			cellID := fmt.Sprintf("%d-%d", i, k)
			next[i] = make([]int, k)
			for s := range k {
				fn, err := sys.open(ctx, cellID, s)
				if err != nil {
					return fmt.Errorf("%s: %w", sys.name, err)
				}
				turnFns[i] = append(turnFns[i], fn)
				next[i][s] = s
			}
		}
		for round := range appendRounds {
			for o := range systems {
				i := (o + round) % len(systems) // each round starts with the next system
				sys := systems[i]
				r.progress("  langchaingo history: appends, %s, %d sessions, round %d of %d", sys.name, k, round+1, appendRounds)
				var turns atomic.Int64
				var firstErr error
				var mu sync.Mutex
				var wg sync.WaitGroup
				var foldsAtStart int64 // the earlier slices' folds are drained
				if sys.folds != nil {
					foldsAtStart = sys.folds()
				}
				deadline := time.Now().Add(window / time.Duration(appendRounds))
				t0 := time.Now()
				for s := range k {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for ; time.Now().Before(deadline); next[i][s]++ {
							p := pairs[next[i][s]%len(pairs)]
							if err := turnFns[i][s](ctx, p[0], p[1]); err != nil {
								mu.Lock()
								if firstErr == nil {
									firstErr = err
								}
								mu.Unlock()
								return
							}
							turns.Add(1)
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(t0)
				if firstErr != nil {
					return fmt.Errorf("%s, %d sessions: %w", sys.name, k, firstErr)
				}
				var drain time.Duration
				if sys.drain != nil {
					d0 := time.Now()
					if err := sys.drain(ctx); err != nil {
						return fmt.Errorf("%s: flush: %w", sys.name, err)
					}
					drain = time.Since(d0)
				}
				x := &res[i][j]
				if sys.folds != nil {
					x.folds += sys.folds() - foldsAtStart
				}
				x.turns += turns.Load()
				x.window += elapsed
				x.drain += drain
			}
		}
	}

	out.printf("### Durable appends with memory on and off\n\n*k* sessions, one writer each, save user/assistant turns (LoCoMo texts) for %s in all, in %d interleaved rounds (each round gives every system a slice of %s, starting with the next system, so that a change in the machine's load falls on all of them; a session goes on from round to round); after each slice the system's background folding is waited for (`Manager.Flush`). **Sustained** turns/s counts the folding left over: turns ÷ (slices + drains); *during* counts the slices alone. Every turn is a durable commit (the peer's two inserts are two).\n\n", window, appendRounds, window/time.Duration(appendRounds))
	headers := []string{"system"}
	for _, k := range sessions {
		headers = append(headers, fmt.Sprintf("%d session(s): sustained turns/s (during · drain)", k))
	}
	var rows [][]string
	sustained := func(x result) float64 { return float64(x.turns) / (x.window + x.drain).Seconds() }
	for i, sys := range systems {
		row := []string{sys.name}
		for j := range sessions {
			x := res[i][j]
			row = append(row, fmt.Sprintf("%s (%s · %s)", fmtFloat(sustained(x)), fmtFloat(float64(x.turns)/x.window.Seconds()), fmtDur(x.drain)))
		}
		rows = append(rows, row)
	}
	out.printf("%s\n", mdTable(headers, rows))
	j := len(sessions) - 1
	perFold := func(x result) string {
		if x.folds == 0 {
			return "no fold"
		}
		return fmtFloat(float64(x.turns) / float64(x.folds))
	}
	out.printf("Turns per stored summary at %d sessions: chunked %s, parity %s. At most `MaxConcurrentFolds` background folds run at once (default half of GOMAXPROCS, at least 1: %d here); a fold that waited covers every message saved meanwhile, and starts at once when more than 3×(K+B) messages (or three times the trigger's count, when larger) were saved meanwhile.\n\n",
		sessions[j], perFold(res[1][j]), perFold(res[2][j]), max(1, runtime.GOMAXPROCS(0)/2))
	chunkedOff := ratio(sustained(res[1][j]), sustained(res[0][j]))
	parityOff := ratio(sustained(res[2][j]), sustained(res[0][j]))
	chunkedPeer := ratio(sustained(res[1][j]), sustained(res[3][j]))
	out.printf("**Goals at %d sessions (sustained):** chunked memory on ≥ 0.8× memory off: **%s**; chunked ≥ 1.0× the peer: **%s**; parity ≥ 0.5× memory off: **%s**.\n\n",
		sessions[j], fmtRatio(chunkedOff), fmtRatio(chunkedPeer), fmtRatio(parityOff))
	out.headline("Durable appends beside langchaingo's PostgreSQL history (§15, %d sessions, sustained with folding): chunked memory on %s memory off and %s the peer's two inserts; parity %s memory off.",
		sessions[j], fmtRatio(chunkedOff), fmtRatio(chunkedPeer), fmtRatio(parityOff))
	return nil
}

// pghToolRounds is the validity part: what each system hands the model
// at every user turn of τ-bench airline transcripts, with tool rounds.
func (r *runner) pghToolRounds(ctx context.Context, pg *pgEnv, peer PGHistoryPeer, indexed PGHistory, out *sectionOut) error {
	tau, err := r.loadTau()
	if err != nil {
		out.printf("### Tool rounds\n\n> skipped: τ-bench is not readable (%v).\n\n", err)
		return nil
	}
	n := 20
	if r.opts.Quick {
		n = 2
	}
	tau = tau[:min(n, len(tau))]
	mgr, err := r.newManager(db.NewMessageStore(pg.d, db.WithLogger(r.quiet)), db.NewSummaryStore(pg.d, db.WithLogger(r.quiet)), summary.NewExtractiveService(), chunkedConfig())
	if err != nil {
		return err
	}
	defer mgr.Close()

	type tally struct{ turns, valid, invalid, failed int }
	var st, pe tally
	var firstInvalid, firstFailed, firstStrataFailed string
	for ti, t := range tau {
		sid := fmt.Sprintf("s15-tool-%d", ti)
		h, err := indexed.Open(ctx, sid)
		if err != nil {
			return err
		}
		wb := lcmemory.NewConversationWindowBuffer(pghWindowTurns, lcmemory.WithChatHistory(h), lcmemory.WithReturnMessages(true))
		for _, turn := range t.Turns {
			user := llms.HumanChatMessage{Content: turn.User}
			// Strata.
			hist, err := mgr.LoadHistory(ctx, sid, benchUser)
			st.turns++
			switch {
			case err != nil && !errors.Is(err, store.ErrNotFound): // not yet created: an empty history
				st.failed++
				if firstStrataFailed == "" {
					firstStrataFailed = err.Error()
				}
			case trimmer.Validate(append(hist, user)) == nil:
				st.valid++
			default:
				st.invalid++
			}
			// The peer.
			pe.turns++
			v, err := wb.LoadMemoryVariables(ctx, map[string]any{})
			if err != nil {
				pe.failed++
				if firstFailed == "" {
					firstFailed = err.Error()
				}
			} else {
				msgs, _ := v[wb.MemoryKey].([]llms.ChatMessage)
				if verr := trimmer.Validate(append(msgs, user)); verr != nil {
					pe.invalid++
					if firstInvalid == "" {
						firstInvalid = verr.Error()
					}
				} else {
					pe.valid++
				}
			}
			msgs := turn.Messages()
			if err := mgr.SaveMessages(ctx, sid, benchUser, msgs...); err != nil {
				return fmt.Errorf("strata: save: %w", err)
			}
			for _, m := range msgs {
				if err := h.AddMessage(ctx, m); err != nil {
					return fmt.Errorf("%s: save: %w", peer.Name, err)
				}
			}
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		return err
	}
	out.printf("### Tool rounds: what each hands the model\n\n%d τ-bench airline transcripts (assistant tool calls and tool results) saved turn by turn into both systems; before each user turn, each system's model input (history + the new user message) is checked against the providers' ordering rules (`trimmer.Validate`: every tool result follows the call that asked for it). The peer runs its window buffer (%d turns) over its indexed table.\n\n", len(tau), pghWindowTurns)
	rows := [][]string{
		{"Strata (chunked, memory on)", fmtInt(st.turns), fmtInt(st.valid), fmtInt(st.invalid), fmtInt(st.failed)},
		{peer.Name + ", window buffer", fmtInt(pe.turns), fmtInt(pe.valid), fmtInt(pe.invalid), fmtInt(pe.failed)},
	}
	out.printf("%s\n", mdTable([]string{"system", "turns", "valid input", "invalid input (orphan tool result, …)", "load failed"}, rows))
	if firstStrataFailed != "" {
		out.printf("Strata's first load failure: `%s`.\n\n", strings.ReplaceAll(firstStrataFailed, "`", "'"))
	}
	if firstFailed != "" {
		out.printf("The peer's first load failure: `%s`.\n\n", strings.ReplaceAll(firstFailed, "`", "'"))
	}
	if firstInvalid != "" {
		out.printf("The peer's first invalid input: `%s`.\n\n", strings.ReplaceAll(firstInvalid, "`", "'"))
	}
	out.headline("Tool rounds (§15, τ-bench, %d turns): Strata hands the model a valid input on %s of turns; langchaingo's PostgreSQL history under its window buffer on %s (%s loads failed).",
		st.turns, pctStr(float64(st.valid)/float64(max(1, st.turns))), pctStr(float64(pe.valid)/float64(max(1, pe.turns))), fmtInt(pe.failed))
	return nil
}

// pghCatchUp is the catch-up part: a long session stored without memory
// is folded from scratch.
func (r *runner) pghCatchUp(ctx context.Context, pg *pgEnv, out *sectionOut) error {
	n := 20_000
	if r.opts.Quick {
		n = 1_000
	}
	var rows [][]string
	var chunkedTime time.Duration
	for _, pol := range []struct {
		name string
		cfg  memory.Config
	}{{"chunked", chunkedConfig()}, {"parity", parityConfig()}} {
		sid := fmt.Sprintf("s15-catchup-%s", pol.name)
		if err := seedPG(ctx, pg.d, sid, n); err != nil {
			return err
		}
		var calls atomic.Int64
		svc := summary.NewExtractiveService()
		counted := summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
			calls.Add(1)
			return svc.Summarize(ctx, req)
		})
		m, err := r.newManager(db.NewMessageStore(pg.d, db.WithLogger(r.quiet)), db.NewSummaryStore(pg.d, db.WithLogger(r.quiet)), counted, pol.cfg)
		if err != nil {
			return err
		}
		r.progress("  langchaingo history: catch-up of %s messages, %s", fmtInt(n), pol.name)
		t0 := time.Now()
		// One turn after the long history starts folding; Flush returns
		// when every fold it needs is done.
		if err := m.SaveTurn(ctx, sid, benchUser, "and one more question", "one more answer"); err != nil {
			_ = m.Close()
			return err
		}
		if err := m.Flush(ctx); err != nil {
			_ = m.Close()
			return err
		}
		d := time.Since(t0)
		h, err := m.Load(ctx, sid, benchUser)
		_ = m.Close()
		if err != nil {
			return err
		}
		if pol.name == "chunked" {
			chunkedTime = d
		}
		rows = append(rows, []string{pol.name, fmtDur(d), fmtInt(int(calls.Load())), string(h.Mode)})
	}
	out.printf("### Catch-up of a long session\n\nA session of %s messages stored without memory (as after turning memory on for an existing deployment), then one turn saved with memory on; the time until `Flush` returns is the catch-up, the extractive summarizer folding everything before the verbatim window.\n\n", fmtInt(n))
	out.printf("%s\n", mdTable([]string{"policy", "catch-up", "summarizer calls", "load mode afterwards"}, rows))
	out.printf("**Goal:** catch-up of 20 000 messages ≤ 10 s with the extractive summarizer: chunked, %s messages: **%s**.\n\n", fmtInt(n), fmtDur(chunkedTime))
	out.headline("Catch-up (§15): %s stored messages folded in %s (chunked, extractive summarizer).", fmtInt(n), fmtDur(chunkedTime))
	return nil
}
