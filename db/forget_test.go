package db_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestErasure runs the erasure scenarios (memorytest.RunErasure) on the
// PostgreSQL stores and catalogue index: messages, summary and catalogue
// document change in one transaction.
func TestErasure(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	memorytest.RunErasure(t, func(*testing.T) memorytest.Stores {
		return memorytest.Stores{Messages: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
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
	want, err := src.Load(ctx, "trip", "alice")
	if err != nil || want.Mode != "hierarchical" {
		t.Fatalf("source view %s, %v", want.Mode, err)
	}
	snap, err := src.Export(ctx, "trip", "alice")
	if err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	pg := newMgr(f.messages, f.sums, failingSummarizer(t))
	// Another session first: PostgreSQL's seqs differ from the snapshot's.
	mustAppend(t, ctx, f.messages, "other", "bob", user("x"), user("y"), user("z"))
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
	snap := &memory.Snapshot{Version: memory.SnapshotVersion, SessionID: "atomic", UserID: "alice",
		Messages: []memory.SnapshotMessage{{Seq: 1, Role: "user", Content: "hello"}, {Seq: 2, Role: "assistant", Content: "hi"}},
		Summary:  &memory.SnapshotSummary{Narrative: "They greeted.", UpToSeq: 1, Facts: []memory.SnapshotFact{{Key: "k", Value: "v", Category: "GENERAL"}}}}
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
	memorytest.RunCapabilities(t, func(*testing.T) memory.MessageStore { return s })
}
