package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
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
	store := memory.NewInMemoryStore()
	return loadBackend{
		name:  "in-memory",
		store: store,
		sums:  summary.NewInMemoryStore(0),
		seed: func(ctx context.Context, session string, n int) error {
			const batch = 1000
			msgs := make([]memory.Message, 0, batch)
			for g := 1; g <= n; g++ {
				role := memory.RoleUser
				if g%2 == 0 {
					role = memory.RoleAssistant
				}
				msgs = append(msgs, memory.Message{Role: role, Content: seedText(g)})
				if len(msgs) == batch || g == n {
					if _, err := store.Append(ctx, session, benchUser, msgs...); err != nil {
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
						if err == nil && h.Mode != memory.ModeHierarchical {
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
	return nil
}

// storeCoveringSummary saves a summary covering every message before the
// verbatim window (the last RecentMessageCount messages) of session.
func storeCoveringSummary(ctx context.Context, store memory.MessageStore, sums summary.Store, session string) error {
	k := parityConfig().RecentMessageCount
	t, err := store.Tail(ctx, session, benchUser, k+1)
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
