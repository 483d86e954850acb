package runner

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// concRun is the outcome of one configuration of section 8.
type concRun struct {
	name                 string
	think                time.Duration
	wall, flush          time.Duration
	saves, loads         samples
	peakGoroutines, base int
	expected, stored     int
	summaries            int
	errors               int64
	stats                memory.Stats
	rounds               int // runs summed into this one
}

// plus sums two runs of one configuration: the times and counts add up,
// the samples are pooled, and the peaks are the larger.
func (c concRun) plus(o concRun) concRun {
	c.wall += o.wall
	c.flush = max(c.flush, o.flush)
	c.saves = append(append(samples{}, c.saves...), o.saves...)
	c.loads = append(append(samples{}, c.loads...), o.loads...)
	c.peakGoroutines = max(c.peakGoroutines, o.peakGoroutines)
	c.expected += o.expected
	c.stored += o.stored
	c.summaries += o.summaries
	c.errors += o.errors
	c.stats.Folds += o.stats.Folds
	c.stats.LazyFolds += o.stats.LazyFolds
	c.stats.Fallbacks += o.stats.Fallbacks
	c.rounds += o.rounds
	return c
}

func (r *runner) concurrencyRun(ctx context.Context, pg *pgEnv, name, prefix string, think time.Duration, cfg memory.Config, svc summary.Service, pairs [][2]string) (concRun, error) {
	run := concRun{name: name, think: think, rounds: 1}
	d, err := pg.pool(ctx) // a fresh pool (db.Open's defaults) per configuration
	if err != nil {
		return run, err
	}
	defer d.Close()
	m, err := r.newManager(db.NewMessageStore(d, db.WithLogger(r.quiet)), db.NewSummaryStore(d, db.WithLogger(r.quiet)), svc, cfg)
	if err != nil {
		return run, err
	}
	defer m.Close()

	sessions, turns := r.p.concSessions, r.p.concTurns
	run.base = runtime.NumGoroutine()
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	var mu sync.Mutex
	var errCount atomic.Int64
	var firstErr error
	work := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range r.p.concWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var saves, loads samples
			for s := range work {
				session := fmt.Sprintf("%s%d", prefix, s)
				for t := range turns {
					p := pairs[(s*turns+t)%len(pairs)]
					t0 := time.Now()
					_, err := m.LoadHistory(ctx, session, benchUser)
					loads = append(loads, time.Since(t0))
					if err == nil && think > 0 {
						time.Sleep(think) // the model call
					}
					if err == nil {
						t0 = time.Now()
						err = m.SaveTurn(ctx, session, benchUser, p[0], p[1])
						saves = append(saves, time.Since(t0))
					}
					if err != nil {
						errCount.Add(1)
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("%s turn %d: %w", session, t, err)
						}
						mu.Unlock()
					}
				}
			}
			mu.Lock()
			run.saves = append(run.saves, saves...)
			run.loads = append(run.loads, loads...)
			mu.Unlock()
		}()
	}
	for s := range sessions {
		work <- s
	}
	close(work)
	wg.Wait()
	run.wall = time.Since(began)
	t0 := time.Now()
	if err := m.Flush(ctx); err != nil {
		return run, err
	}
	run.flush = time.Since(t0)
	close(stopSampling)
	<-sampled
	run.peakGoroutines = int(peak.Load())
	run.errors = errCount.Load()
	run.stats = m.Stats()

	run.expected = sessions * turns * 2
	if err := d.GetContext(ctx, &run.stored, `SELECT count(*) FROM strata_messages WHERE session_id LIKE $1 || '%'`, prefix); err != nil {
		return run, err
	}
	if err := d.GetContext(ctx, &run.summaries, `SELECT count(*) FROM strata_summaries WHERE session_id LIKE $1 || '%'`, prefix); err != nil {
		return run, err
	}
	if firstErr != nil {
		r.progress("  concurrency: %s: %d errors, first: %v", name, run.errors, firstErr)
	}
	return run, nil
}

func runConcurrency(ctx context.Context, r *runner, out *sectionOut) error {
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
	configs := []struct {
		name string
		cfg  memory.Config
		svc  summary.Service
	}{
		{"takeLast, no folding (baseline)", takeLastConfig(), nil},
		{"Strata parity + extractive", parityConfig(), summary.NewExtractiveService()},
		{"Strata chunked + extractive", chunkedConfig(), summary.NewExtractiveService()},
	}
	// Each configuration runs 2×concPasses times, in the order A B C C B A
	// (repeated), and its runs are summed: the database's state drifts over
	// a run (WAL, table growth), and a fixed order would charge that drift
	// to whichever configuration runs last. Each run starts after a
	// CHECKPOINT, so no run pays for writing out another's dirty pages.
	var order []int
	for range r.p.concPasses {
		for i := range configs {
			order = append(order, i)
		}
		for i := range configs {
			order = append(order, len(configs)-1-i)
		}
	}
	settled := true
	var runs []concRun
	for ti, think := range r.p.concThink {
		got := make([]concRun, len(configs))
		for k, i := range order {
			c := configs[i]
			r.progress("  concurrency: %s, model call %s, %d sessions × %d turns on %d workers (run %d of %d)", c.name, think, r.p.concSessions, r.p.concTurns, r.p.concWorkers, k+1, len(order))
			settled = pg.checkpoint(ctx) && settled
			run, err := r.concurrencyRun(ctx, pg, c.name, fmt.Sprintf("s8-%d-%d-%d-", ti, i, k), think, c.cfg, c.svc, pairs)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if got[i].rounds == 0 {
				got[i] = run
			} else {
				got[i] = got[i].plus(run)
			}
		}
		runs = append(runs, got...)
	}

	settling := "each run starts after a `CHECKPOINT`, so that none pays for writing out the previous run's pages"
	if !settled {
		settling = "the server refused `CHECKPOINT` (it needs a superuser or the pg_checkpoint role), so runs were not settled in between"
	}
	out.printf("%d sessions × %d turns against PostgreSQL, %d times per configuration (in the order baseline, parity, chunked, chunked, parity, baseline, repeated; each run on its own sessions; %s; the table sums the runs), %d sessions at a time (%d workers; each worker plays whole sessions, one turn = `LoadHistory`, then a simulated model call (a sleep: none, or %s), then `SaveTurn` of a LoCoMo user/assistant pair), through one manager with the `db` stores on a fresh pool with `db.Open`'s defaults (%d connections). Folds run in the background on the same pool, with the offline extractive summarizer and the cross-process fold lease. After the last turn `Flush` waits for every fold; then the stored messages are counted in the database: **lost = expected − stored** (must be 0). Goroutines are sampled every 2 ms (the process had %d before the run). The baseline is the same load with summaries off.\n\n",
		r.p.concSessions, r.p.concTurns, 2*r.p.concPasses, settling, r.p.concWorkers, r.p.concWorkers, r.p.concThink[len(r.p.concThink)-1], db.DefaultMaxOpenConns, runs[0].base)
	out.printf("%s", r.env.provenance(true))
	rows := [][]string{}
	var base concRun
	tps := func(c concRun) float64 { return float64(c.rounds*r.p.concSessions*r.p.concTurns) / c.wall.Seconds() }
	for i, c := range runs {
		if i%len(configs) == 0 {
			base = c
		}
		rows = append(rows, []string{fmtThink(c.think), c.name, fmtFloat(tps(c)), fmtRatio(ratio(tps(c), tps(base))),
			fmtDur(c.saves.pct(50)), fmtDur(c.saves.pct(99)), fmtRatio(ratio(float64(c.saves.pct(99)), float64(base.saves.pct(99)))),
			fmtDur(c.loads.pct(99)), fmt.Sprint(c.peakGoroutines), fmtInt(c.expected), fmtInt(c.stored), fmtInt(c.expected - c.stored),
			fmt.Sprint(c.errors), fmt.Sprint(c.stats.Folds), fmt.Sprint(c.stats.LazyFolds), fmt.Sprint(c.stats.Fallbacks), fmt.Sprint(c.summaries), fmtDur(c.flush)})
	}
	out.printf("%s\n", mdTable([]string{"model call", "configuration", "turns/s", "÷ baseline", "save p50", "save p99", "save p99 ÷ baseline", "load p99", "peak goroutines", "messages expected", "stored", "lost", "errors", "folds saved", "folds started by loads", "stale or degraded loads", "summaries stored", "Flush after the run"}, rows))
	out.printf("Without a model call, turns run back to back: the background fold started by one save is often still running when the same session's next load arrives. That load waits for it at most the load grace (300 ms by default) — for the session's first summary, up to the fold wait — and otherwise shows the stale summary with every message after its cursor verbatim (the *stale or degraded loads* column; *folds started by loads* counts the folds a load had to start itself because none was running). Those waits, and the folds' own queries competing for the same pool and cores, are where the throughput goes. With a model call between load and save, the background fold has that call's duration to finish.\n")
	lost := 0
	for _, c := range runs {
		lost += c.expected - c.stored
	}
	par, parThink := runs[1], runs[len(configs)+1]
	out.headline("Concurrency on PostgreSQL (§8): %d sessions × %d turns on %d workers with background folding (parity): %s turns/s back to back (%s the no-folding baseline) and %s turns/s with a %s model call (%s); save p99 %s and %s; peak %d goroutines; %d messages lost.",
		r.p.concSessions, r.p.concTurns, r.p.concWorkers, fmtFloat(tps(par)), fmtRatio(ratio(tps(par), tps(runs[0]))),
		fmtFloat(tps(parThink)), parThink.think, fmtRatio(ratio(tps(parThink), tps(runs[len(configs)]))),
		fmtDur(par.saves.pct(99)), fmtDur(parThink.saves.pct(99)), max(par.peakGoroutines, parThink.peakGoroutines), lost)
	chk, chkThink := runs[2], runs[len(configs)+2]
	out.headline("Folding that does not eat the database (§8, PostgreSQL%s): with the chunked policy and background folding, %s turns/s back to back = %s the no-folding baseline (goal ≥ 0.8×), and %s with a %s model call.",
		durableLabel(r), fmtFloat(tps(chk)), fmtRatio(ratio(tps(chk), tps(runs[0]))), fmtRatio(ratio(tps(chkThink), tps(runs[len(configs)]))), chkThink.think)
	for _, c := range runs {
		if c.expected != c.stored {
			return fmt.Errorf("%s: %d messages lost", c.name, c.expected-c.stored)
		}
		if c.errors > 0 {
			return fmt.Errorf("%s: %d turns failed", c.name, c.errors)
		}
	}
	return nil
}

func fmtThink(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
