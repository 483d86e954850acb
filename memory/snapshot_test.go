package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// toolTurn is a conversation turn with a tool call and its result.
func toolTurn() []llms.ChatMessage {
	return []llms.ChatMessage{
		llms.HumanChatMessage{Content: "what is the weather in Paris?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		llms.ToolChatMessage{ID: "call_1", Content: `{"temp":21}`},
		llms.AIChatMessage{Content: "It is 21 degrees in Paris."},
	}
}

// An exported session imported into fresh stores gives the same view to
// the model, without a summarizer call, and the same snapshot again
// (messages losslessly, timestamps kept, cursor and provenance mapped).
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := newFixture(t, hierConfig())
	src.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		res := countingResult(req)
		res.Facts = append(res.Facts, summary.Fact{Key: "city", Value: "Paris", Category: summary.Entity})
		return res, nil
	})
	if err := src.mgr.SaveMessages(ctx, "s", "alice", toolTurn()...); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := src.mgr.SaveTurn(ctx, "s", "alice", "question "+string(rune('a'+i%26)), "answer"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.mgr.Append(ctx, "s", "alice", false, store.Message{Role: store.RoleAssistant, Content: "tagged",
		Metadata: map[string]string{store.MetadataModelVariant: "small"}}); err != nil {
		t.Fatal(err)
	}
	// Let the background folds the saves started finish: a load that finds
	// one folding to an older cursor shows the stale summary rather than wait.
	if err := src.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := src.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if want.Mode != "hierarchical" {
		t.Fatalf("source mode %q, want hierarchical", want.Mode)
	}
	snap, err := src.mgr.Export(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Summary == nil || len(snap.Summary.Facts) == 0 || snap.Summary.UpToSeq == 0 {
		t.Fatalf("snapshot summary %+v", snap.Summary)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"session_id"`, `"user_id"`, `"tool_calls"`, `"tool_call_id"`, `"up_to_seq"`, `"created_at"`, `"first_seq"`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("snapshot JSON lacks %s", k)
		}
	}
	var back memory.Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}

	dst := newFixture(t, hierConfig())
	dst.svc.set(func(context.Context, int64, summary.Request) (summary.Result, error) {
		t.Error("the import called the summarizer")
		return summary.Result{}, errors.New("no")
	})
	// The id held messages in the new store before (deleted since): seqs
	// are per session and never reused for an id, so the new store's seqs
	// differ and the import must move the cursor onto them.
	seed(t, dst.store, "s", "bob", 3)
	if err := dst.store.Delete(ctx, "s", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := dst.mgr.Import(ctx, &back); err != nil {
		t.Fatal(err)
	}
	got, err := dst.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Messages, want.Messages) || got.Mode != want.Mode {
		t.Fatalf("view after import differs:\n got %q (%s)\nwant %q (%s)", contents(got.Messages), got.Mode, contents(want.Messages), want.Mode)
	}
	again, err := dst.mgr.Export(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Messages) != len(snap.Messages) {
		t.Fatalf("%d messages after import, want %d", len(again.Messages), len(snap.Messages))
	}
	if again.Messages[0].Seq == snap.Messages[0].Seq {
		t.Fatalf("test needs different seqs in the two stores")
	}
	for i := range snap.Messages {
		a, b := snap.Messages[i], again.Messages[i]
		a.Seq, b.Seq = 0, 0
		if !a.CreatedAt.Equal(b.CreatedAt) {
			t.Errorf("message %d created_at %v, want %v", i, b.CreatedAt, a.CreatedAt)
		}
		a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("message %d: got %+v, want %+v", i, b, a)
		}
	}
	// The cursor covers the same messages.
	idx := func(s *memory.Snapshot) int {
		n := 0
		for _, m := range s.Messages {
			if m.Seq <= s.Summary.UpToSeq {
				n++
			}
		}
		return n
	}
	if idx(again) != idx(snap) {
		t.Errorf("cursor covers %d messages after import, %d before", idx(again), idx(snap))
	}
	if again.Summary.Narrative != snap.Summary.Narrative || len(again.Summary.Facts) != len(snap.Summary.Facts) {
		t.Errorf("summary after import %+v, want %+v", again.Summary, snap.Summary)
	}
	// The id is now in use.
	if err := dst.mgr.Import(ctx, &back); !errors.Is(err, store.ErrSessionExists) {
		t.Fatalf("second import: %v, want ErrSessionExists", err)
	}
}

// An invalid snapshot writes nothing.
func TestImportValidatesFirst(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	good := func() *memory.Snapshot {
		return &memory.Snapshot{Version: snapshot.Version, SessionID: "s", UserID: "alice", Messages: []snapshot.Message{
			{Seq: 1, Role: "user", Content: "hi"}, {Seq: 2, Role: "assistant", Content: "hello"}}}
	}
	bad := map[string]func(*memory.Snapshot){
		"version":    func(s *memory.Snapshot) { s.Version = 99 },
		"no id":      func(s *memory.Snapshot) { s.SessionID = "" },
		"role":       func(s *memory.Snapshot) { s.Messages[1].Role = "robot" },
		"seq order":  func(s *memory.Snapshot) { s.Messages[1].Seq = 1 },
		"nul":        func(s *memory.Snapshot) { s.Messages[1].Content = "a\x00b" },
		"tool no id": func(s *memory.Snapshot) { s.Messages[1] = snapshot.Message{Seq: 2, Role: "tool", Content: "x"} },
		"category": func(s *memory.Snapshot) {
			s.Summary = &snapshot.Summary{Facts: []snapshot.Fact{{Key: "k", Value: "v", Category: "X"}}}
		},
		"empty key": func(s *memory.Snapshot) {
			s.Summary = &snapshot.Summary{Facts: []snapshot.Fact{{Value: "v"}}}
		},
		"negative seq": func(s *memory.Snapshot) { s.Summary = &snapshot.Summary{UpToSeq: -1, Narrative: "n"} },
		"bad forgotten": func(s *memory.Snapshot) {
			s.Summary = &snapshot.Summary{Narrative: "n", Forgotten: []summary.Forgotten{{Key: "k"}}}
		},
	}
	for name, mut := range bad {
		s := good()
		mut(s)
		if err := f.mgr.Import(ctx, s); !errors.Is(err, store.ErrInvalidMessage) {
			t.Errorf("%s: %v, want ErrInvalidMessage", name, err)
		}
		if _, err := f.mgr.Count(ctx, "s", "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the session exists after a refused import (%v)", name, err)
		}
	}
	if err := f.mgr.Import(ctx, nil); !errors.Is(err, store.ErrInvalidMessage) {
		t.Errorf("nil: %v", err)
	}
	if err := f.mgr.Import(ctx, good()); err != nil {
		t.Fatal(err)
	}
	if n, err := f.mgr.Count(ctx, "s", "alice"); err != nil || n != 2 {
		t.Fatalf("count %d, %v", n, err)
	}
	if _, err := f.mgr.Export(ctx, "s", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("export by another user: %v", err)
	}
}

// Loads racing an import never fold the new session over its imported
// summary: the summary the model sees afterwards is the imported one.
func TestImportRacingLoads(t *testing.T) {
	ctx := context.Background()
	cfg := hierConfig()
	cfg.LoadGrace = time.Millisecond
	for i := range 20 {
		// A slow summary store widens the window between the messages
		// landing and the summary landing.
		f := &fixture{store: memory.NewInMemoryStore(), sums: slowSaves{summary.NewInMemoryStore(0)}, svc: &fakeSummarizer{}}
		mgr, err := memory.NewManager(f.store, cfg, memory.WithSummaries(f.sums, f.svc), memory.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		f.mgr = mgr
		f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
			time.Sleep(5 * time.Millisecond) // latency, not synchronisation: a fold that takes a while
			return summary.Result{Narrative: "A fold's own narrative."}, nil
		})
		id := fmt.Sprintf("s%d", i)
		snap := &memory.Snapshot{Version: snapshot.Version, SessionID: id, UserID: "alice",
			Summary: &snapshot.Summary{Narrative: "The imported narrative.", UpToSeq: 40, Facts: []snapshot.Fact{{Key: "k", Value: "v", Category: "GENERAL"}}}}
		for s := int64(1); s <= 50; s++ {
			snap.Messages = append(snap.Messages, snapshot.Message{Seq: s, Role: []string{"user", "assistant"}[s%2], Content: fmt.Sprint("m", s)})
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := f.mgr.Load(ctx, id, "alice"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		if err := f.mgr.Import(ctx, snap); err != nil {
			t.Fatal(err)
		}
		close(done)
		wg.Wait()
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := f.mgr.Summary(ctx, id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if s == nil || !strings.HasPrefix(s.Narrative, "The imported narrative.") || len(s.Facts) == 0 {
			t.Fatalf("round %d: the imported summary was skipped or overwritten: %+v", i, s)
		}
		if err := mgr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// slowSaves is a summary store whose saves take a few milliseconds.
type slowSaves struct{ summary.Store }

func (s slowSaves) Save(ctx context.Context, sum summary.Summary) error {
	time.Sleep(3 * time.Millisecond) // latency, not synchronisation: widens the race's window
	return s.Store.Save(ctx, sum)
}
