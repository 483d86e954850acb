package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-go/strata/memory"
)

// arc-reactor accepts a verbatim window of 0 (the model sees the facts and
// narrative only) and 0 conversation turns (an empty takeLast window); so
// does a Config made from DefaultConfig. A literal's zero still means
// "not set" and is refused.
func TestZeroWindowsFromArcReactor(t *testing.T) {
	ctx := context.Background()
	cfg := hierConfig()
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 0
	f := newFixture(t, cfg)
	seed(t, f.store, "s", "alice", 4)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "last question", "last answer"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || len(h.Recent) != 0 || h.Summary == nil || h.Summary.UpToSeq == 0 {
		t.Fatalf("recent 0: mode %s, %d verbatim, summary %+v; want the summary alone", h.Mode, len(h.Recent), h.Summary)
	}
	for _, m := range h.Messages {
		if m.GetContent() == "last question" {
			t.Fatal("recent 0 showed a verbatim message")
		}
	}

	off := memory.DefaultConfig()
	off.MaxConversationTurns = 0
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), off)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	if err := mgr.SaveTurn(ctx, "t", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	if msgs, err := mgr.LoadHistory(ctx, "t", "alice"); err != nil || len(msgs) != 0 {
		t.Fatalf("0 turns: %d messages, %v; want an empty history", len(msgs), err)
	}

	var fe *memory.FieldError
	if err := (memory.Config{TriggerMessageCount: 20, RecentMessageCount: 10}).Validate(); !errors.As(err, &fe) || fe.Field != "MaxConversationTurns" {
		t.Fatalf("a literal leaving MaxConversationTurns zero: %v", err)
	}
}
