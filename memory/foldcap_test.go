package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Parity re-summarizes from the original messages, but no call sends more
// than MaxFoldInputTokens: a long range is folded in chunks, each after the
// first continuing incrementally, and a re-summarization whose first chunk
// ends before the stored cursor does not stall on a stale save.
func TestParityFoldInputIsCapped(t *testing.T) {
	cfg := hierConfig()
	cfg.MaxFoldInputTokens = 50 // two messages of ~21 tokens per call
	f := newFixture(t, cfg)
	seed(t, f.store, "s", "alice", 15)
	ctx := context.Background()
	saveTurns(t, f.mgr, "s", 16, 16)
	reqs := f.svc.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d calls: the range was not chunked", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Messages) > 2 {
			t.Fatalf("call %d sent %d messages, over the input cap", i, len(r.Messages))
		}
		if (i > 0) != r.Incremental {
			t.Fatalf("call %d incremental = %v", i, r.Incremental)
		}
	}
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	cut := msgs[len(msgs)-cfg.RecentMessageCount-1].Seq
	s, _ := f.sums.Get(ctx, "s")
	if s == nil || s.UpToSeq != cut {
		t.Fatalf("summary %+v, want cursor %d", s, cut)
	}

	// The next fold starts from the originals again; its first chunk ends
	// before the stored cursor, yet the fold goes through to the new cut.
	before := len(reqs)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "u17", "a17"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reqs = f.svc.requests()[before:]
	if len(reqs) < 2 || reqs[0].Incremental || reqs[0].Messages[0].GetContent() != "u1" {
		t.Fatalf("second fold did not restart from the originals in chunks: %d calls", len(reqs))
	}
	msgs = mustMessages(t, f.mgr, "s", "alice", 0)
	s, _ = f.sums.Get(ctx, "s")
	if want := msgs[len(msgs)-cfg.RecentMessageCount-1].Seq; s == nil || s.UpToSeq != want {
		t.Fatalf("summary %+v, want cursor %d", s, want)
	}
}

// The ledger knobs of Config reach the merge: slots supersede, per-family
// caps and pins hold, the narrative is capped.
func TestLedgerConfigReachesTheMerge(t *testing.T) {
	cfg := hierConfig()
	cfg.MaxFactsPerFamily = 2
	cfg.PinnedFactKeys = []string{"note"}
	cfg.MaxFacts = 4
	cfg.MaxNarrativeTokens = 12
	f := newFixture(t, cfg)
	f.svc.set(func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
		res := summary.Result{Narrative: strings.Repeat("The user asked about the order. ", 10)}
		res.Facts = append(res.Facts, summary.Fact{Key: "note", Value: "VIP"}, summary.Fact{Key: "phone", Value: fmt.Sprintf("555-000%d", call)})
		for i := 1; i <= 6; i++ {
			res.Facts = append(res.Facts, summary.Fact{Key: fmt.Sprintf("price_%d", i), Value: fmt.Sprintf("$%d%d", call, i)})
		}
		return res, nil
	})
	seed(t, f.store, "s", "alice", 15)
	ctx := context.Background()
	for i := 16; i <= 17; i++ {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := f.sums.Get(ctx, "s")
	if s == nil {
		t.Fatal("no summary")
	}
	block := summary.FactsBlock(s.Facts)
	prices, phones := strings.Count(block, "- price"), strings.Count(block, "- phone")
	if prices > 2 || phones != 1 || !strings.Contains(block, "- note: VIP") || len(s.Facts) > 4 {
		t.Fatalf("ledger:\n%s", block)
	}
	if s.Narrative != "The user asked about the order." && s.Narrative != "The user asked about the order. The user asked about the order." {
		t.Fatalf("narrative not capped at a sentence: %q", s.Narrative)
	}
	bad := memory.DefaultConfig()
	bad.PinnedFactKeys = []string{"order_id", "["}
	var fe *memory.FieldError
	if err := bad.Validate(); !errors.As(err, &fe) || fe.Field != "PinnedFactKeys[1]" {
		t.Fatalf("malformed pin pattern: %v", err)
	}
}

// A re-summarization from the originals in chunks (parity's folds) saves
// only the chunks that move the stored cursor on: the chunks before it are
// carried to the next one unsaved, so while such a fold runs a load shows
// the stored summary whole, never a narrative of the first chunk alone,
// and the fold's one save is journaled with every call and every message
// it read. A first fold, which has no stored cursor, still saves chunk by
// chunk. Random session lengths and input caps vary the chunking.
func TestParityRefoldSavesWhereTheCursorMoves(t *testing.T) {
	for trial := range 6 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		cfg := hierConfig()
		cfg.MaxFoldInputTokens = 40 + rng.IntN(80)
		cfg.LoadGrace = time.Millisecond // the load does not wait for the fold it finds running
		turns := 15 + rng.IntN(20)
		var log eventLog
		f := newFixture(t, cfg, memory.WithFoldObserver(log.observe))
		seed(t, f.store, "s", "alice", turns)
		ctx := context.Background()
		saveTurns(t, f.mgr, "s", turns+1, turns+1)
		first := f.svc.requests()
		if len(first) < 3 || len(log.all()) != len(first) {
			t.Fatalf("trial %d: first fold made %d calls and %d saves: want one save per chunk, at least 3", trial, len(first), len(log.all()))
		}
		stored, _ := f.sums.Get(ctx, "s")

		// The second fold: its last call waits until the test has loaded.
		calls := int64(len(first))
		last := make(chan struct{})
		entered := make(chan struct{})
		var second atomic.Int64
		var once sync.Once
		f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
			n := second.Add(1)
			if seqs := req.Seqs; call > calls && seqs[len(seqs)-1] > stored.UpToSeq {
				if n == 1 {
					t.Errorf("trial %d: the first chunk of the re-summarization ends past the stored cursor", trial)
				}
				once.Do(func() { close(entered); <-last })
			}
			return countingResult(req), nil
		})
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "u-last", "a-last"); err != nil {
			t.Fatal(err)
		}
		<-entered
		h, err := f.mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if h.Summary == nil || h.Summary.Narrative != stored.Narrative || h.Summary.Version != stored.Version {
			t.Fatalf("trial %d: while the fold ran, the load showed %+v, want the stored summary %+v", trial, h.Summary, stored)
		}
		close(last)
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		reqs := f.svc.requests()[len(first):]
		if len(reqs) < 2 || reqs[0].Incremental || reqs[0].Seqs[0] != 1 {
			t.Fatalf("trial %d: the second fold did not re-read the originals in chunks (%d calls)", trial, len(reqs))
		}
		passing, from := 0, int64(1) // the chunks that move the cursor on; where the last save's span starts
		for i, r := range reqs {
			if r.Seqs[len(r.Seqs)-1] > stored.UpToSeq {
				passing++
				if i > 0 && reqs[i-1].Seqs[len(reqs[i-1].Seqs)-1] > stored.UpToSeq {
					from = r.Seqs[0]
				}
			}
		}
		events := log.all()[len(first):]
		if len(events) != passing || passing > 2 {
			t.Fatalf("trial %d: the re-summarization saved %d times, want %d (the chunks that pass the cursor)", trial, len(events), passing)
		}
		msgs := mustMessages(t, f.mgr, "s", "alice", 0)
		cut := msgs[len(msgs)-cfg.RecentMessageCount-1].Seq
		if got := max(events[0].Summary.UpToSeq, events[len(events)-1].Summary.UpToSeq); got != cut { // observers run concurrently
			t.Fatalf("trial %d: saved cursor %d, want %d", trial, got, cut)
		}
		j, err := f.mgr.Journal(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		rec, wantCalls := j.Records[len(j.Records)-1], len(reqs)-passing+1
		if passing == 2 {
			wantCalls = 1
		}
		if rec.Outcome != "saved" || rec.Calls != wantCalls || rec.FromSeq != from || rec.ToSeq != cut {
			t.Fatalf("trial %d: the last save's record %+v, want %d calls over messages %d to %d", trial, rec, wantCalls, from, cut)
		}
		if j.Totals.Folds != int64(len(first)+passing) {
			t.Fatalf("trial %d: journal counts %d saves, want %d", trial, j.Totals.Folds, len(first)+passing)
		}
	}
}
