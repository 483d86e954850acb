package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Every fold is journaled with the tokens its summarizer reported, the
// totals are their sums, and the fact changes replay to the ledger; a
// failed fold says why; the journal goes with the session's export into
// another manager, and a snapshot without a journal still imports.
func TestJournalRecordsFolds(t *testing.T) {
	rs := rand.Uint64()
	t.Logf("seed %d", rs)
	rng := rand.New(rand.NewPCG(rs, 0))
	for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(pol), func(t *testing.T) {
			cfg := hierConfig()
			cfg.Policy = pol
			cfg.SafetyTurns, cfg.BufferMessageCount = 2, 2 // chunked: fold every other turn
			f := newFixture(t, cfg)
			var reportedIn, reportedOut atomic.Int64
			var failNext atomic.Bool
			f.svc.set(func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
				if failNext.CompareAndSwap(true, false) {
					return summary.Result{}, fmt.Errorf("model: %w", summary.ErrTimeout)
				}
				in, out := 100+int(call), 7+int(call%3)
				reportedIn.Add(int64(in))
				reportedOut.Add(int64(out))
				res := countingResult(req)
				// A fact that changes, one that comes and goes.
				res.Facts = append(res.Facts, summary.Fact{Key: "last_call", Value: fmt.Sprint(call), Category: summary.State})
				if call%2 == 0 {
					res.Facts = append(res.Facts, summary.Fact{Key: "even", Value: "yes", Category: summary.State})
				} else {
					res.Facts = append(res.Facts, summary.Fact{Key: "even", Remove: true})
				}
				res.Usage = summary.Usage{InputTokens: in, OutputTokens: out}
				return res, nil
			})
			ctx := context.Background()
			seed(t, f.store, "s", "alice", 12)
			for i := range 10 + rng.IntN(10) {
				if i == 3 {
					failNext.Store(true)
				}
				if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("question %d", i), "answer"); err != nil {
					t.Fatal(err)
				}
				if err := f.mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			j := memorytest.CheckJournal(t, ctx, f.mgr, "s", "alice")
			if j.Totals.InputTokens != reportedIn.Load() || j.Totals.OutputTokens != reportedOut.Load() {
				t.Fatalf("journal tokens %d/%d, the summarizer reported %d/%d", j.Totals.InputTokens, j.Totals.OutputTokens,
					reportedIn.Load(), reportedOut.Load())
			}
			if j.Totals.EstimatedInputTokens != 0 {
				t.Fatalf("estimated %d tokens of calls that reported theirs", j.Totals.EstimatedInputTokens)
			}
			st := f.mgr.Stats()
			if st.SummarizerInputTokens != reportedIn.Load() || st.SummarizerOutputTokens != reportedOut.Load() {
				t.Fatalf("stats %+v, reported %d/%d", st, reportedIn.Load(), reportedOut.Load())
			}
			var failed, saved int
			for _, r := range j.Records {
				switch r.Outcome {
				case "failed":
					failed++
					if r.ErrorClass != "timeout" || r.Calls != 1 || len(r.Changes) != 0 {
						t.Errorf("failed fold recorded as %+v", r)
					}
				case "saved":
					saved++
					if r.FromSeq < 1 || r.ToSeq < r.FromSeq || r.Calls < 1 || r.InputTokens <= 100 {
						t.Errorf("fold recorded as %+v", r)
					}
				}
			}
			if failed != 1 || int64(saved) != j.Totals.Folds || saved < 5 {
				t.Fatalf("%d failed and %d saved folds journaled (totals %+v)", failed, saved, j.Totals)
			}

			// The journal moves with the session; an old snapshot without one
			// imports with only the import's record.
			snap, err := f.mgr.Export(ctx, "s", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if snap.Journal == nil || len(snap.Journal.Records) != len(j.Records) {
				t.Fatalf("the export's journal: %+v", snap.Journal)
			}
			g := newFixture(t, cfg)
			if err := g.mgr.Import(ctx, snap); err != nil {
				t.Fatal(err)
			}
			got := memorytest.CheckJournal(t, ctx, g.mgr, "s", "alice")
			last := got.Records[len(got.Records)-1]
			if len(got.Records) != len(j.Records)+1 || last.Kind != "import" || len(last.Changes) != 0 || got.Totals.InputTokens != j.Totals.InputTokens {
				t.Fatalf("imported journal: %d records (want %d), last %+v, totals %+v", len(got.Records), len(j.Records)+1, last, got.Totals)
			}
			raw, err := json.Marshal(snap)
			if err != nil {
				t.Fatal(err)
			}
			var old map[string]any
			if err := json.Unmarshal(raw, &old); err != nil {
				t.Fatal(err)
			}
			delete(old, "journal")
			old["session_id"] = "s-old"
			raw, _ = json.Marshal(old)
			var oldSnap memory.Snapshot
			if err := json.Unmarshal(raw, &oldSnap); err != nil {
				t.Fatal(err)
			}
			if err := g.mgr.Import(ctx, &oldSnap); err != nil {
				t.Fatal(err)
			}
			oj := memorytest.CheckJournal(t, ctx, g.mgr, "s-old", "alice")
			if len(oj.Records) != 1 || oj.Records[0].Kind != "import" {
				t.Fatalf("journal of an old snapshot's import: %+v", oj.Records)
			}
		})
	}
}

func TestJournalOwnership(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 2)
	if _, err := f.mgr.Journal(ctx, "s", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's journal: %v, want ErrNotOwner", err)
	}
	if _, err := f.mgr.Journal(ctx, "nope", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing session's journal: %v, want ErrNotFound", err)
	}
}

// TestSessionTokenBudget: a scripted LLM (langchaingo's openai client
// against a server speaking the wire format) folds until the session's
// tokens of the day reach the budget; the offline summarizer folds after
// that, the journal, the stats and the metrics say so, and the next day
// the LLM folds again.
func TestSessionTokenBudget(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev); _ = mp.Shutdown(context.Background()) })

	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		reply := fmt.Sprintf(`{"narrative":"The customer asked about order A1 (call %d).","facts":[{"key":"order_id","value":"A1","category":"ENTITY"},{"key":"llm_call","value":"%d","category":"STATE"}]}`, n, n)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]any{"prompt_tokens": 300, "completion_tokens": 50, "total_tokens": 350},
		})
	}))
	defer srv.Close()
	// The day boundary is crossed on a testing/synctest bubble's clock
	// (from 2000-01-01 00:00 UTC).
	synctest.Test(t, func(t *testing.T) {
		llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"),
			// No idle connection outlives a call: a bubble's clock moves only
			// when nothing in it waits on the network.
			openai.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
		if err != nil {
			t.Fatal(err)
		}
		svc := summary.NewLLMService(llm, summary.WithCallOptions(llms.WithModel("gpt-4o-mini")))

		cfg := hierConfig()
		cfg.SessionDailyTokenBudget = 1000
		ms := memory.NewInMemoryStore()
		mgr, err := memory.NewManager(ms, cfg, memory.WithSummaries(summary.NewInMemoryStore(0), svc), memory.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mgr.Close() })
		ctx := context.Background()
		seed(t, ms, "s", "alice", 12)
		turn := func(i int) {
			t.Helper()
			if err := mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("my order is A1, question %d", i), "noted"); err != nil {
				t.Fatal(err)
			}
			if err := mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute) // the bubble's clock
		}
		for i := range 6 {
			turn(i)
		}
		// 350 tokens a call: the calls start at 0, 350 and 700 tokens spent,
		// under 1000; the fourth would start at 1050.
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d LLM calls, want 3 within the budget", n)
		}
		j := memorytest.CheckJournal(t, ctx, mgr, "s", "alice")
		var llmFolds, fallbacks int
		for _, r := range j.Records {
			switch {
			case r.Kind != "fold" || r.Outcome != "saved":
			case r.Fallback == "budget":
				fallbacks++
				if r.Summarizer != "extractive" || r.InputTokens != 0 {
					t.Errorf("a fallback fold recorded as %+v", r)
				}
			default:
				llmFolds++
				if r.Summarizer != "llm" || r.Model != "gpt-4o-mini" || r.InputTokens != 300 || r.OutputTokens != 50 {
					t.Errorf("an LLM fold recorded as %+v", r)
				}
			}
		}
		if llmFolds != 3 || fallbacks < 3 || j.Totals.Fallbacks != int64(fallbacks) || j.Totals.InputTokens != 900 || j.DayTokens != 1050 {
			t.Fatalf("%d LLM folds, %d fallbacks; totals %+v, day %s %d", llmFolds, fallbacks, j.Totals, j.Day, j.DayTokens)
		}
		if st := mgr.Stats(); st.BudgetFallbacks != int64(fallbacks) || st.SummarizerInputTokens != 900 || st.SummarizerOutputTokens != 150 {
			t.Fatalf("stats %+v", st)
		}
		// The next day (UTC) the budget starts again.
		time.Sleep(24 * time.Hour)
		turn(7)
		if n := calls.Load(); n != 4 {
			t.Fatalf("%d LLM calls the next day, want 4", n)
		}
		memorytest.CheckJournal(t, ctx, mgr, "s", "alice")

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		var tokensIn, fallbackCalls int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Histogram[int64]:
					if m.Name != "gen_ai.client.token.usage" {
						continue
					}
					for _, p := range d.DataPoints {
						model, _ := p.Attributes.Value(attribute.Key("gen_ai.request.model"))
						kind, _ := p.Attributes.Value(attribute.Key("gen_ai.token.type"))
						if model.AsString() == "gpt-4o-mini" && kind.AsString() == "input" {
							tokensIn += p.Sum
						}
					}
				case metricdata.Sum[int64]:
					if m.Name == "strata.memory.summarizer.budget_fallbacks" {
						for _, p := range d.DataPoints {
							fallbackCalls += p.Value
						}
					}
				}
			}
		}
		if tokensIn != 1200 || fallbackCalls != int64(fallbacks) {
			t.Fatalf("metrics: %d input tokens of gpt-4o-mini (want 1200), %d budget fallbacks (want %d)", tokensIn, fallbackCalls, fallbacks)
		}
	})
}

func TestSessionTokenBudgetValidated(t *testing.T) {
	cfg := memory.DefaultConfig()
	cfg.SessionDailyTokenBudget = -1
	var fe *memory.FieldError
	if err := cfg.Validate(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "SessionDailyTokenBudget") {
		t.Fatalf("a negative budget: %v", err)
	}
}

// The journal keeps the newest 200 records; the older ones stay counted
// in its totals.
func TestJournalRetention(t *testing.T) {
	f := newFixture(t, hierConfig())
	var reported atomic.Int64
	f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		res := countingResult(req)
		res.Usage = summary.Usage{InputTokens: 10, OutputTokens: 1}
		reported.Add(11)
		return res, nil
	})
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 12)
	for i := 0; ; i++ {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprint("q", i), "a"); err != nil {
			t.Fatal(err)
		}
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		j, err := f.mgr.Journal(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if j.Totals.Records < 205 {
			continue
		}
		if len(j.Records) != 200 || j.Rolled.Records != j.Totals.Records-200 || j.Records[0].N != j.Rolled.Records+1 {
			t.Fatalf("%d records kept, %d rolled of %d", len(j.Records), j.Rolled.Records, j.Totals.Records)
		}
		if got := j.Totals.InputTokens + j.Totals.OutputTokens; got != reported.Load() {
			t.Fatalf("totals count %d tokens, the summarizer reported %d", got, reported.Load())
		}
		return
	}
}
