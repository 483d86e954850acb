package runner

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// slowSummarizer sleeps for delay on every call (returning early when its
// context is cancelled) and then returns the fixed result.
type slowSummarizer struct {
	delay            time.Duration
	started, aborted atomic.Int64
	firstAt          atomic.Pointer[time.Time] // when the first call started
}

func (s *slowSummarizer) Summarize(ctx context.Context, _ summary.Request) (summary.Result, error) {
	now := time.Now()
	s.firstAt.CompareAndSwap(nil, &now)
	s.started.Add(1)
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return fixedResult, nil
	case <-ctx.Done():
		s.aborted.Add(1)
		return summary.Result{}, ctx.Err()
	}
}

// first returns when the first call started; ok is false before any call.
func (s *slowSummarizer) first() (t time.Time, ok bool) {
	if p := s.firstAt.Load(); p != nil {
		return *p, true
	}
	return time.Time{}, false
}

// saveConfig is one configuration of section 6.
type saveConfig struct {
	name  string
	store string
	raw   memory.MessageStore // the manager's store, for seeding without folds
	m     *memory.Manager
	slow  *slowSummarizer
	s     samples
	close time.Duration
}

func runSlowSave(ctx context.Context, r *runner, out *sectionOut) error {
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	pairs := locomo.Pairs()
	const preSeed = 30 // messages stored before timing: above the trigger (20)

	mk := func(name, store string, ms memory.MessageStore, ss summary.Store, cfg memory.Config, slow bool) (*saveConfig, error) {
		c := &saveConfig{name: name, store: store, raw: ms}
		var svc summary.Service
		if slow {
			c.slow = &slowSummarizer{delay: r.p.slowDelay}
			svc = c.slow
		}
		m, err := r.newManager(ms, ss, svc, cfg)
		if err != nil {
			return nil, err
		}
		c.m = m
		return c, nil
	}
	var cfgs []*saveConfig
	add := func(c *saveConfig, err error) error {
		if err == nil {
			cfgs = append(cfgs, c)
		}
		return err
	}
	if err := add(mk("no summarizer (baseline)", "in-memory", memory.NewInMemoryStore(), nil, takeLastConfig(), false)); err != nil {
		return err
	}
	if err := add(mk("parity, 2 s summarizer", "in-memory", memory.NewInMemoryStore(), summary.NewInMemoryStore(0), parityConfig(), true)); err != nil {
		return err
	}
	if err := add(mk("chunked, 2 s summarizer", "in-memory", memory.NewInMemoryStore(), summary.NewInMemoryStore(0), chunkedConfig(), true)); err != nil {
		return err
	}
	pgNote := ""
	if pg, err := r.postgres(ctx); err == nil {
		ms, ss := db.NewMessageStore(pg.d, db.WithLogger(r.quiet)), db.NewSummaryStore(pg.d, db.WithLogger(r.quiet))
		if err := add(mk("no summarizer (baseline)", "PostgreSQL", ms, ss, takeLastConfig(), false)); err != nil {
			return err
		}
		if err := add(mk("parity, 2 s summarizer", "PostgreSQL", ms, ss, parityConfig(), true)); err != nil {
			return err
		}
		if err := add(mk("chunked, 2 s summarizer", "PostgreSQL", ms, ss, chunkedConfig(), true)); err != nil {
			return err
		}
	} else {
		pgNote = pgSkipNote(err)
	}
	for i, c := range cfgs {
		if r.p.slowDelay != 2*time.Second {
			c.name = replaceDelay(c.name, r.p.slowDelay)
		}
		// Pre-seed every session above the trigger, outside the timing,
		// straight into the store: no fold starts.
		session := fmt.Sprintf("s6-%d", i)
		if err := c.raw.Create(ctx, session, benchUser); err != nil {
			return err
		}
		for j := 0; j < preSeed/2; j++ {
			p := pairs[j%len(pairs)]
			if _, err := c.raw.Append(ctx, session, benchUser,
				store.Message{Role: store.RoleUser, Content: p[0]}, store.Message{Role: store.RoleAssistant, Content: p[1]}); err != nil {
				return err
			}
		}
	}

	// Interleaved rounds: every configuration saves slowSaves turns per
	// round, so a busy machine slows all of them alike.
	for round := range r.p.slowRounds {
		r.progress("  save latency: round %d/%d", round+1, r.p.slowRounds)
		for i, c := range cfgs {
			session := fmt.Sprintf("s6-%d", i)
			for j := range r.p.slowSaves {
				p := pairs[(round*r.p.slowSaves+j)%len(pairs)]
				t0 := time.Now()
				if err := c.m.SaveTurn(ctx, session, benchUser, p[0], p[1]); err != nil {
					return fmt.Errorf("%s %s: %w", c.store, c.name, err)
				}
				c.s = append(c.s, time.Since(t0))
			}
		}
	}
	for _, c := range cfgs {
		t0 := time.Now()
		_ = c.m.Close() // cancels the sleeping folds
		c.close = time.Since(t0)
	}

	out.printf("`SaveTurn` (one user + assistant pair) timed call by call on a session already above the trigger (%d messages stored beforehand), with a summarizer that sleeps %s per call (returning early when its context is cancelled) against the same saves with no summarizer. %d interleaved rounds of %d saves per configuration, back to back, so every save above the trigger starts or coalesces a background fold while earlier ones still sleep. `Close` at the end cancels the sleeping folds; its duration is shown.\n\n",
		preSeed, r.p.slowDelay, r.p.slowRounds, r.p.slowSaves)
	if pgNote != "" {
		out.printf("> %s\n\n", pgNote)
	}
	out.printf("%s", r.env.provenance(r.pg != nil))
	rows := [][]string{}
	var base *saveConfig
	for _, c := range cfgs {
		if c.slow == nil {
			base = c
		}
		started, aborted := "—", "—"
		if c.slow != nil {
			started, aborted = fmt.Sprint(c.slow.started.Load()), fmt.Sprint(c.slow.aborted.Load())
		}
		rows = append(rows, []string{c.store, c.name, fmt.Sprint(len(c.s)), fmtDur(c.s.pct(50)), fmtDur(c.s.pct(99)),
			fmtRatio(ratio(float64(c.s.pct(50)), float64(base.s.pct(50)))), fmtRatio(ratio(float64(c.s.pct(99)), float64(base.s.pct(99)))),
			started, aborted, fmtDur(c.close)})
		if c.slow != nil && strings.HasPrefix(c.name, "parity") {
			out.headline("Save latency with a %s summarizer (§6), %s: `SaveTurn` p50 %s and p99 %s vs %s and %s with no summarizer — ratio %s (p50) and %s (p99) (goal ≈1).",
				r.p.slowDelay, c.store, fmtDur(c.s.pct(50)), fmtDur(c.s.pct(99)), fmtDur(base.s.pct(50)), fmtDur(base.s.pct(99)),
				fmtRatio(ratio(float64(c.s.pct(50)), float64(base.s.pct(50)))), fmtRatio(ratio(float64(c.s.pct(99)), float64(base.s.pct(99)))))
		}
	}
	out.printf("%s\n", mdTable([]string{"store", "configuration", "saves", "p50", "p99", "p50 ÷ baseline", "p99 ÷ baseline", "summarizer calls started", "cancelled", "Close"}, rows))
	out.printf("Saves never wait for a fold: the summarizer runs in the background, and `SaveTurn` only appends and hands the session to a fold job. What a save does pay is (a) starting that job — in memory, about a microsecond under parity, where every save above the trigger supersedes (cancels) the running fold and starts a new one, hence the cancelled calls — and (b) sharing the machine and the connection pool with the jobs: on PostgreSQL every parity job reads the session's tail and summary, takes the fold lease and re-reads every message before the window (parity re-summarizes from the originals), so with saves back to back those queries compete with the timed ones on the same 2 cores. Under chunked a running fold is left to finish and later saves only ask for another pass, so far less background work runs.\n")
	return nil
}

// replaceDelay rewrites "2 s" in a configuration name for another delay.
func replaceDelay(name string, d time.Duration) string {
	return strings.Replace(name, "2 s", d.String(), 1)
}
