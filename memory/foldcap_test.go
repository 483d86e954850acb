package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "u16", "a16"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
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
