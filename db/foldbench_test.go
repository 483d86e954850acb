package db_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/internal/datasets"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// foldBenchSessions and foldBenchWindow shape BenchmarkFoldAppends: as
// many sessions, one writer each, saving turns for the window.
const (
	foldBenchSessions = 32
	foldBenchWindow   = 3 * time.Second
)

// foldBenchPairs are user/assistant texts: LoCoMo's first conversations
// when ../shared/data holds them, else generated sentences.
func foldBenchPairs(b *testing.B) [][2]string {
	b.Helper()
	texts, err := datasets.ReplayTexts("../../shared/data", 3, 200)
	if err != nil {
		b.Fatal(err)
	}
	var pairs [][2]string
	for i := 0; i+1 < len(texts); i += 2 {
		pairs = append(pairs, [2]string{texts[i], texts[i+1]})
	}
	return pairs
}

// BenchmarkFoldAppends is the durable append section of the benchmark
// report in miniature, for profiling what folding costs appends: 32
// sessions, one writer each, saving LoCoMo turns through a Manager over
// the db stores with the extractive summarizer, memory off, chunked and
// parity, then Manager.Flush. It reports sustained turns/s (turns over
// window plus drain), and the CPU time per turn of this process and, when
// the server runs on this machine, of PostgreSQL (all its databases): on
// a shared machine the CPU per turn varies less than the rate. Run with
// -benchtime=1x.
func BenchmarkFoldAppends(b *testing.B) {
	pairs := foldBenchPairs(b)
	for _, c := range []struct {
		name string
		cfg  func() memory.Config
	}{
		{"off", func() memory.Config { c := loadConfig(); c.Enabled = false; return c }},
		{"chunked", func() memory.Config { c := loadConfig(); c.Policy = memory.PolicyChunked; return c }},
		{"parity", loadConfig},
		// Chunked that never folds: what memory on costs a save besides
		// folding.
		{"nofold", func() memory.Config {
			c := loadConfig()
			c.Policy = memory.PolicyChunked
			c.BufferMessageCount, c.SafetyTurns, c.FoldTokenFraction, c.FoldTokenThreshold = 1_000_000, 0, 0, 0
			return c
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b)
			f.d.SetMaxOpenConns(db.DefaultMaxOpenConns)
			f.d.SetMaxIdleConns(db.DefaultMaxIdleConns)
			ms, ss := db.NewMessageStore(f.d), db.NewSummaryStore(f.d)
			m, err := memory.NewManager(ms, c.cfg(), memory.WithSummaries(ss, summary.NewExtractiveService()))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			var turns atomic.Int64
			var elapsed, goCPU, pgCPU time.Duration
			pgOK := true
			for b.Loop() {
				var wg sync.WaitGroup
				c0 := processCPU()
				p0, ok := serverCPU(os.Getenv("DATABASE_URL"))
				pgOK = pgOK && ok
				t0 := time.Now()
				deadline := t0.Add(foldBenchWindow)
				for s := range foldBenchSessions {
					wg.Go(func() {
						session := fmt.Sprintf("fold-%s-%d", c.name, s)
						for t := s; time.Now().Before(deadline); t++ {
							p := pairs[t%len(pairs)]
							if err := m.SaveTurn(ctx, session, "bench", p[0], p[1]); err != nil {
								b.Error(err)
								return
							}
							turns.Add(1)
						}
					})
				}
				wg.Wait()
				if err := m.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(t0)
				goCPU += processCPU() - c0
				p1, ok := serverCPU(os.Getenv("DATABASE_URL"))
				pgOK = pgOK && ok
				pgCPU += p1 - p0
			}
			n := float64(turns.Load())
			b.ReportMetric(n/elapsed.Seconds(), "turns/s")
			b.ReportMetric(float64(goCPU.Microseconds())/n, "go-cpu-µs/turn")
			if pgOK {
				b.ReportMetric(float64(pgCPU.Microseconds())/n, "pg-cpu-µs/turn")
			}
			if folds := m.Stats().Folds; folds > 0 {
				b.ReportMetric(n/float64(folds), "turns/fold")
			}
		})
	}
}

// BenchmarkFoldAppendsInterleaved is the durable append part of the
// benchmark report's langchaingo section in miniature: 32 sessions, one
// writer each, saving LoCoMo turns through three Managers over one pool
// of db.DefaultMaxOpenConns connections — memory off, chunked, parity,
// extractive summarizer — each given a slice of the window in turn,
// starting with the next system every round, with its folding waited for
// (Manager.Flush) after each slice, so that a change in the machine's load
// falls on all three. It reports each system's sustained turns/s (turns
// over slices plus drains) and the ratios the report's goals name:
// chunked ÷ off and parity ÷ off, and the same from the CPU time a turn
// costs (this process and, when the server runs on this machine,
// PostgreSQL), which varies less on a shared machine. Run with
// -benchtime=1x.
func BenchmarkFoldAppendsInterleaved(b *testing.B) {
	const rounds, slice = 8, 400 * time.Millisecond
	pairs := foldBenchPairs(b)
	f := newFixture(b)
	f.d.SetMaxOpenConns(db.DefaultMaxOpenConns)
	f.d.SetMaxIdleConns(db.DefaultMaxIdleConns)
	off := loadConfig()
	off.Enabled = false
	chunked := loadConfig()
	chunked.Policy = memory.PolicyChunked
	systems := []struct {
		name string
		cfg  memory.Config
	}{{"off", off}, {"chunked", chunked}, {"parity", loadConfig()}}
	managers := make([]*memory.Manager, len(systems))
	for i, s := range systems {
		m, err := memory.NewManager(db.NewMessageStore(f.d), s.cfg, memory.WithSummaries(db.NewSummaryStore(f.d), summary.NewExtractiveService()))
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		managers[i] = m
	}
	ctx := context.Background()
	turns := make([]int64, len(systems))
	spent, goCPU, pgCPU := make([]time.Duration, len(systems)), make([]time.Duration, len(systems)), make([]time.Duration, len(systems))
	pgOK := true
	next := make([][]int, len(systems))
	for i := range next {
		next[i] = make([]int, foldBenchSessions)
		for s := range next[i] {
			next[i][s] = s
		}
	}
	for b.Loop() {
		for round := range rounds {
			for o := range systems {
				i := (o + round) % len(systems)
				m := managers[i]
				var n atomic.Int64
				var wg sync.WaitGroup
				p0, ok := serverCPU(os.Getenv("DATABASE_URL"))
				pgOK = pgOK && ok
				c0 := processCPU()
				t0 := time.Now()
				deadline := t0.Add(slice)
				for s := range foldBenchSessions {
					wg.Go(func() {
						session := fmt.Sprintf("il-%s-%d", systems[i].name, s)
						for ; time.Now().Before(deadline); next[i][s]++ {
							p := pairs[next[i][s]%len(pairs)]
							if err := m.SaveTurn(ctx, session, "bench", p[0], p[1]); err != nil {
								b.Error(err)
								return
							}
							n.Add(1)
						}
					})
				}
				wg.Wait()
				if err := m.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				turns[i] += n.Load()
				spent[i] += time.Since(t0)
				goCPU[i] += processCPU() - c0
				p1, ok := serverCPU(os.Getenv("DATABASE_URL"))
				pgOK = pgOK && ok
				pgCPU[i] += p1 - p0
			}
		}
	}
	rate := func(i int) float64 { return float64(turns[i]) / spent[i].Seconds() }
	for i, s := range systems {
		b.ReportMetric(rate(i), s.name+"-turns/s")
	}
	b.ReportMetric(rate(1)/rate(0), "chunked/off")
	b.ReportMetric(rate(2)/rate(0), "parity/off")
	// The CPU a turn costs, this process's and the server's: on a shared
	// machine it varies less than the rate, and when the machine is the
	// bottleneck its inverse ratio is what the rates' ratio tends to.
	cpu := func(i int) float64 {
		c := goCPU[i]
		if pgOK {
			c += pgCPU[i]
		}
		return float64(c.Microseconds()) / float64(turns[i])
	}
	for i, s := range systems {
		b.ReportMetric(cpu(i), s.name+"-cpu-µs/turn")
	}
	b.ReportMetric(cpu(0)/cpu(1), "cpu-chunked/off")
	b.ReportMetric(cpu(0)/cpu(2), "cpu-parity/off")
}
