package db_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// citusBenchTargets are the two databases the Citus benchmarks compare, on
// the same machine: a plain PostgreSQL schema (DATABASE_URL) and a
// distributed one on the Citus coordinator (CITUS_URL). Run them with
// both, durable:
//
//	STRATA_PG_DURABLE=1 scripts/with-postgres.sh scripts/with-citus.sh \
//	    go test -run '^$' -bench Citus ./db/
var citusBenchTargets = []struct {
	name string
	pool func(b *testing.B) *sqlx.DB
}{
	{"plain", func(b *testing.B) *sqlx.DB { return newFixture(b).d }},
	{"citus", func(b *testing.B) *sqlx.DB { return citusPool(b) }},
}

// BenchmarkCitusLoad measures Manager.Load of a session of 100 messages
// with a covering summary (the hierarchical history from one
// strata_snapshot call), on plain PostgreSQL and on Citus, where the call
// is delegated to the worker holding the session: compare the p50-ns
// metrics (the goal: Citus at most 3 times plain PostgreSQL).
func BenchmarkCitusLoad(b *testing.B) {
	for _, target := range citusBenchTargets {
		b.Run(target.name, func(b *testing.B) {
			d := target.pool(b)
			ctx := context.Background()
			ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
			if err := ms.Create(ctx, "load", "bench"); err != nil {
				b.Fatal(err)
			}
			for i := range 50 {
				if _, err := ms.Append(ctx, "load", "bench",
					user(fmt.Sprintf("question %d: lorem ipsum dolor sit amet", i)),
					assistant(fmt.Sprintf("answer %d: consectetur adipiscing elit, sed do eiusmod", i))); err != nil {
					b.Fatal(err)
				}
			}
			k := loadConfig().RecentMessageCount
			t, err := ms.Tail(ctx, "load", "bench", k+1)
			if err != nil {
				b.Fatal(err)
			}
			if err := sums.Save(ctx, summary.Summary{SessionID: "load", Epoch: t.Epoch, UpToSeq: t.Messages[0].Seq,
				Narrative: "The user asked about lorem ipsum; the assistant explained dolor sit amet.",
				Facts:     []summary.Fact{{Key: "topic", Value: "lorem ipsum", Category: summary.Entity}}}); err != nil {
				b.Fatal(err)
			}
			m, err := memory.NewManager(ms, loadConfig(), memory.WithSummaries(sums, summary.NewExtractiveService()))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			timed(b, func() error {
				h, err := m.Load(ctx, "load", "bench")
				if err == nil && h.Mode != "hierarchical" {
					err = fmt.Errorf("mode %s, want hierarchical", h.Mode)
				}
				return err
			})
		})
	}
}

// BenchmarkCitusAppend measures durable appends (one message, one
// strata_append call, committed) by 8 concurrent writers over 32
// sessions, on plain PostgreSQL and on Citus: compare the appends/s
// metrics (the goal: Citus at least half of plain PostgreSQL).
func BenchmarkCitusAppend(b *testing.B) {
	const writers, sessions = 8, 32
	for _, target := range citusBenchTargets {
		b.Run(target.name, func(b *testing.B) {
			d := target.pool(b)
			d.SetMaxOpenConns(writers)
			d.SetMaxIdleConns(writers)
			ctx := context.Background()
			ms := db.NewMessageStore(d)
			for i := range sessions {
				if err := ms.Create(ctx, fmt.Sprint("append-", i), "bench"); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := next.Add(1)
					if _, err := ms.Append(ctx, fmt.Sprint("append-", n%sessions), "bench", user(fmt.Sprint("message ", n))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "appends/s")
		})
	}
}

// BenchmarkCitusAppendTurns measures durable turns (one append of a
// user/assistant pair, one strata_append call, committed) with one writer
// per session at 1, 8 and 32 sessions, on plain PostgreSQL and on Citus,
// the two interleaved at each level, as bench section 16 does: compare
// the turns/s metrics of a level (the goal: Citus at least half of plain
// PostgreSQL). b.N is the number of turns of a level, shared by its
// writers:
//
//	STRATA_PG_DURABLE=1 scripts/with-postgres.sh scripts/with-citus.sh \
//	    go test -run '^$' -bench CitusAppendTurns -benchtime 400x -count 3 ./db/
func BenchmarkCitusAppendTurns(b *testing.B) {
	ctx := context.Background()
	stores := make([]*db.MessageStore, len(citusBenchTargets))
	for i, target := range citusBenchTargets {
		d := target.pool(b)
		d.SetMaxOpenConns(32)
		d.SetMaxIdleConns(32)
		stores[i] = db.NewMessageStore(d)
		for s := range 32 {
			if err := stores[i].Create(ctx, fmt.Sprint("turns-", s), "bench"); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, sessions := range []int{1, 8, 32} {
		for i, target := range citusBenchTargets {
			ms := stores[i]
			b.Run(fmt.Sprintf("sessions=%d/%s", sessions, target.name), func(b *testing.B) {
				var next atomic.Int64
				var wg sync.WaitGroup
				t0 := time.Now()
				for s := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						session := fmt.Sprint("turns-", s)
						for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
							if _, err := ms.Append(ctx, session, "bench",
								user("What is the weather in Lisbon tomorrow?"),
								assistant("Sunny, 24 °C, a light breeze from the north-west.")); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "turns/s")
			})
		}
	}
}
