package memory_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// A session handle names the session and the user once and does what the
// manager's methods do with them: saves and loads the same history, folds
// it, refuses another user's handle as the manager refuses that user, and
// erases, exports and deletes the session.
func TestSessionHandle(t *testing.T) {
	ctx := context.Background()
	ms := memory.NewInMemoryStore()
	mgr, err := memory.NewManager(ms, hierConfig(), memory.WithSummaries(ms.Summaries(), &fakeSummarizer{}), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	s := mgr.Session("s", "alice")
	for i := range 12 {
		if err := s.SaveTurn(ctx, "question", "answer"); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if err := s.SaveMessages(ctx, llms.HumanChatMessage{Content: "last"}); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := mgr.Load(ctx, "s", "alice")
	if err != nil || !reflect.DeepEqual(h, want) || h.Mode != "hierarchical" {
		t.Fatalf("handle's load %+v, manager's %+v, %v; want the same, hierarchical", h, want, err)
	}
	sum, err := s.Summary(ctx)
	if err != nil || sum == nil {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	msgs, err := s.Messages(ctx, 0, 0)
	if err != nil || len(msgs) != 25 {
		t.Fatalf("%d messages, %v; want 25", len(msgs), err)
	}

	bob := mgr.Session("s", "bob")
	if _, err := bob.Load(ctx); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's load: %v, want ErrNotOwner", err)
	}
	if err := bob.SaveTurn(ctx, "q", "a"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's save: %v, want ErrNotOwner", err)
	}
	if err := bob.Delete(ctx); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's delete: %v, want ErrNotOwner", err)
	}

	if err := s.Forget(ctx, msgs[len(msgs)-1].Seq); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetFact(ctx, "no such key"); !errors.Is(err, store.ErrNoSuchFact) {
		t.Fatalf("ForgetFact of a missing key: %v", err)
	}
	snap, err := s.Export(ctx)
	if err != nil || len(snap.Messages) != 24 || snap.Summary == nil {
		t.Fatalf("export: %+v, %v; want 24 messages and the summary", snap, err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Messages(ctx, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("messages after delete: %v, want ErrNotFound", err)
	}
}
