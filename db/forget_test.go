package db_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestErasure runs the erasure scenarios (catalogtest.RunErasure) on the
// PostgreSQL stores and catalogue index: messages, summary and catalogue
// document change in one transaction.
func TestErasure(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	catalogtest.RunErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
	})
}

// failingSummarizer fails the test when called.
func failingSummarizer(t *testing.T) summary.Service {
	return summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		t.Error("the summarizer was called")
		return summary.Result{}, errors.New("no summarizer call expected")
	})
}

// A session exported from the in-memory stores and imported into
// PostgreSQL, then exported from PostgreSQL and imported into fresh
// in-memory stores, gives the model the same view each time, without a
// summarizer call; the PostgreSQL import is one transaction.
func TestExportImportAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	f := newFixture(t) // skips without PostgreSQL, before any work
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	newMgr := func(ms memory.MessageStore, sums summary.Store, svc summary.Service) *memory.Manager {
		m, err := memory.NewManager(ms, cfg, memory.WithSummaries(sums, svc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	src := newMgr(memory.NewInMemoryStore(), summary.NewInMemoryStore(0), summary.NewExtractiveService())
	if err := src.SaveMessages(ctx, "trip", "alice",
		llms.HumanChatMessage{Content: "My order #A-5521 has not arrived, my email is al@example.org"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "track", Arguments: `{"order":"A-5521"}`}}}},
		llms.ToolChatMessage{ID: "c1", Content: `{"status":"in transit"}`},
		llms.AIChatMessage{Content: "It is in transit."}); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if err := src.SaveTurn(ctx, "trip", "alice", "question about the parcel "+string(rune('a'+i)), "answer"); err != nil {
			t.Fatal(err)
		}
	}
	// The source's folds run in the background: wait for them, so that its
	// view is the folded one however slow the machine is.
	if err := src.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := src.Load(ctx, "trip", "alice")
	if err != nil || want.Mode != "hierarchical" {
		t.Fatalf("source view %s, %v", want.Mode, err)
	}
	snap, err := src.Export(ctx, "trip", "alice")
	if err != nil {
		t.Fatal(err)
	}

	pg := newMgr(f.messages, f.sums, failingSummarizer(t))
	// The id held messages in PostgreSQL before (deleted since): seqs are
	// per session and never reused for an id, so PostgreSQL's seqs differ
	// from the snapshot's and the import must move the cursor onto them.
	mustAppend(t, ctx, f.messages, "trip", "bob", user("x"), user("y"), user("z"))
	if err := f.messages.Delete(ctx, "trip", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	got, err := pg.Load(ctx, "trip", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != want.Mode || !reflect.DeepEqual(got.Messages, want.Messages) {
		t.Fatalf("PostgreSQL view differs:\n got %v\nwant %v", got.Messages, want.Messages)
	}
	if err := pg.Import(ctx, snap); !errors.Is(err, store.ErrSessionExists) {
		t.Fatalf("import over an id in use: %v", err)
	}
	back, err := pg.Export(ctx, "trip", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if back.Messages[0].Seq == snap.Messages[0].Seq {
		t.Fatal("the test needs other seqs in PostgreSQL")
	}
	for i := range snap.Messages {
		// PostgreSQL keeps timestamps to the microsecond.
		if d := back.Messages[i].CreatedAt.Sub(snap.Messages[i].CreatedAt); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("message %d: created_at %v, want %v", i, back.Messages[i].CreatedAt, snap.Messages[i].CreatedAt)
		}
	}
	mem := newMgr(memory.NewInMemoryStore(), summary.NewInMemoryStore(0), failingSummarizer(t))
	if err := mem.Import(ctx, back); err != nil {
		t.Fatal(err)
	}
	again, err := mem.Load(ctx, "trip", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if again.Mode != want.Mode || !reflect.DeepEqual(again.Messages, want.Messages) {
		t.Fatalf("in-memory view after the round trip differs:\n got %v\nwant %v", again.Messages, want.Messages)
	}
}

// An import that fails part-way on PostgreSQL leaves nothing behind: the
// session, its messages and its summary are one transaction.
func TestImportAtomic(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	f := newFixture(t)
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	mgr, err := memory.NewManager(f.messages, cfg, memory.WithSummaries(f.sums, failingSummarizer(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	snap := &memory.Snapshot{Version: snapshot.Version, SessionID: "atomic", UserID: "alice",
		Messages: []snapshot.Message{{Seq: 1, Role: "user", Content: "hello"}, {Seq: 2, Role: "assistant", Content: "hi"}},
		Summary:  &snapshot.Summary{Narrative: "They greeted.", UpToSeq: 1, Facts: []snapshot.Fact{{Key: "k", Value: "v", Category: "GENERAL"}}}}
	// Break the summary insert only: a trigger refuses it.
	if _, err := f.d.ExecContext(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON strata_summaries FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Import(ctx, snap); err == nil {
		t.Fatal("import succeeded with the summary refused")
	}
	if n := countRows(t, ctx, f.d, "strata_messages", "atomic"); n != 0 {
		t.Fatalf("%d messages left by a failed import", n)
	}
	if _, _, _, exists := sessionRow(t, ctx, f.d, "atomic"); exists {
		t.Fatal("a failed import left its session row")
	}
	if _, err := f.d.ExecContext(ctx, `DROP TRIGGER refuse ON strata_summaries`); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	s, err := mgr.Summary(ctx, "atomic", "alice")
	if err != nil || s == nil || s.Narrative != "They greeted." {
		t.Fatalf("summary after import %+v, %v", s, err)
	}
	msgs, err := mgr.Messages(ctx, "atomic", "alice", 0, 0)
	if err != nil || len(msgs) != 2 || s.UpToSeq != msgs[0].Seq {
		t.Fatalf("cursor %d not mapped onto the first message (%v, %v)", s.UpToSeq, msgs, err)
	}
}

// TestCapabilitiesConformance runs the Importer and Forgetter conformance
// suite on PostgreSQL.
func TestCapabilitiesConformance(t *testing.T) {
	t.Parallel()
	s := db.NewMessageStore(dbtest.New(t))
	memorytest.RunCapabilities(t, func(*testing.T) store.Store { return s })
}

// codeRE finds the distinctive token of each message of the replica test.
var codeRE = regexp.MustCompile(`code-[0-9]+x`)

// copyingSummarizer copies every code it is shown — messages and the
// summary so far — into facts and narrative, slowly, as an LLM would.
func copyingSummarizer() summary.Service {
	return summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.GetContent() + "\n")
		}
		if req.Existing != nil {
			text.WriteString(req.Existing.Narrative + "\n")
			for _, f := range req.Existing.Facts {
				text.WriteString(f.Value + "\n")
			}
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return summary.Result{}, ctx.Err()
		}
		var res summary.Result
		var sentences []string
		for i, c := range codeRE.FindAllString(text.String(), -1) {
			res.Facts = append(res.Facts, summary.Fact{Key: fmt.Sprintf("code_%d", i), Value: c})
			sentences = append(sentences, "They mentioned "+c+".")
		}
		res.Narrative = strings.Join(append(sentences, "They talked."), " ")
		return res, nil
	})
}

// Two replicas share a database: one erases messages while the other keeps
// saving and folding the same session. The fold lease keeps every fold of
// the other replica off the session during each erasure, so no erased
// content comes back into the summary, for either policy.
func TestForgetAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(pol), func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			schema := dbtest.NewSchema(t)
			cfg := memory.DefaultConfig()
			cfg.Enabled, cfg.Policy = true, pol
			cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
			cfg.RecentMessageCount, cfg.BufferMessageCount, cfg.TriggerMessageCount = 4, 4, 6
			cfg.LoadGrace, cfg.SupersedeDelay = time.Millisecond, time.Millisecond
			replica := func() *memory.Manager {
				d := dbtest.Open(t, schema.URL)
				m, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), copyingSummarizer()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = m.Close() })
				return m
			}
			a, b := replica(), replica()
			var mu sync.Mutex
			erased := map[string]bool{}
			var wg sync.WaitGroup
			wg.Add(2)
			// Replica a erases after every fifth turn replica b saved, while
			// b goes on (the channel is buffered): the erasures interleave
			// with b's saves and folds, whatever the machine's speed.
			saved := make(chan int, 64)
			go func() { // replica b: the conversation, folding
				defer wg.Done()
				defer close(saved)
				for i := range 40 {
					if err := b.SaveTurn(ctx, "s", "alice", fmt.Sprintf("code-%03dx here", i), "ok"); err != nil {
						t.Error(err)
						return
					}
					saved <- i
					if i%4 == 0 {
						if _, err := b.Load(ctx, "s", "alice"); err != nil {
							t.Error(err)
						}
					}
				}
			}()
			go func() { // replica a: the erasures
				defer wg.Done()
				for n := range saved {
					if n%5 != 4 {
						continue
					}
					msgs, err := a.Messages(ctx, "s", "alice", 0, 0)
					if err != nil || len(msgs) < 6 {
						continue
					}
					i := len(msgs) / 3
					for i < len(msgs) && !strings.HasPrefix(msgs[i].Content, "code-") {
						i++
					}
					if i == len(msgs) {
						continue
					}
					if err := a.Forget(ctx, "s", "alice", msgs[i].Seq); err != nil {
						t.Error(err)
						continue
					}
					mu.Lock()
					erased[codeRE.FindString(msgs[i].Content)] = true
					mu.Unlock()
				}
			}()
			wg.Wait()
			for _, m := range []*memory.Manager{a, b} {
				if err := m.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Load(ctx, "s", "alice"); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := a.Summary(ctx, "s", "alice")
			if err != nil || s == nil {
				t.Fatalf("summary %+v, %v", s, err)
			}
			text := s.Narrative + fmt.Sprint(s.Facts)
			if len(erased) == 0 {
				t.Fatal("nothing was erased")
			}
			for c := range erased {
				if strings.Contains(text, c) {
					t.Errorf("the erased %s came back: %s", c, text)
				}
			}
		})
	}
}
