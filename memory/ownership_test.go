package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// Another user's session is neither readable nor writable nor deletable,
// and a missing user id is the anonymous user, not a wildcard.
func TestOwnership(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	seedTurns(t, f.store, "s", "alice", "my order is #1 ", 1, 16)
	// alice's session has a summary, so that its survival can be checked.
	if h, err := f.mgr.Load(ctx, "s", "alice"); err != nil || h.Mode != "hierarchical" {
		t.Fatalf("alice: mode %s, %v", h.Mode, err)
	}
	before := mustMessages(t, f.mgr, "s", "alice", 0)

	h, err := f.mgr.Load(ctx, "s", "mallory")
	if !errors.Is(err, memory.ErrNotOwner) || len(h.Messages) != 0 || len(h.Recent) != 0 || h.Summary != nil || h.Total != 0 {
		t.Fatalf("foreign load = %+v, %v", h, err)
	}
	if got, err := f.mgr.LoadHistory(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) || len(got) != 0 {
		t.Fatalf("foreign LoadHistory = %q, %v", contents(got), err)
	}
	if err := f.mgr.SaveTurn(ctx, "s", "mallory", "injected", "x"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("foreign save err = %v", err)
	}
	if msgs, err := f.mgr.Messages(ctx, "s", "mallory", 0, 0); !errors.Is(err, memory.ErrNotOwner) || len(msgs) != 0 {
		t.Fatalf("foreign Messages = %d, %v", len(msgs), err)
	}
	if s, err := f.mgr.Summary(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) || s != nil {
		t.Fatalf("foreign Summary = %+v, %v", s, err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("foreign delete err = %v", err)
	}
	if page, total, err := f.mgr.Sessions(ctx, "mallory", 0, 0); err != nil || total != 0 || len(page) != 0 {
		t.Fatalf("mallory lists %d sessions (%v)", total, err)
	}
	// A missing user id is "anonymous", which does not own alice's session.
	if _, err := f.mgr.LoadHistory(ctx, "s", ""); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("anonymous load err = %v", err)
	}

	// Nothing was removed or added.
	after := mustMessages(t, f.mgr, "s", "alice", 0)
	if len(after) != len(before) || after[len(after)-1].Seq != before[len(before)-1].Seq {
		t.Fatalf("alice's messages changed: %d -> %d", len(before), len(after))
	}
	if s, err := f.mgr.Summary(ctx, "s", "alice"); err != nil || s == nil {
		t.Fatalf("alice's summary after the refused delete: %+v, %v", s, err)
	}
	if page, total, err := f.mgr.Sessions(ctx, "alice", 0, 0); err != nil || total != 1 || page[0].SessionID != "s" || page[0].MessageCount != 32 {
		t.Fatalf("alice's sessions = %+v, %d, %v", page, total, err)
	}
	if st := f.mgr.Stats(); st.OwnerDenied != 3 {
		t.Fatalf("OwnerDenied = %d, want 3 (the refused loads)", st.OwnerDenied)
	}

	// The anonymous user owns what it saves without a user id.
	if err := f.mgr.SaveTurn(ctx, "anon", "", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.mgr.LoadHistory(ctx, "anon", store.AnonymousUser); len(got) != 2 {
		t.Fatalf("anonymous session = %q", contents(got))
	}
}

// Missing sessions: reads and deletes say ErrNotFound, a load is empty.
func TestMissingSession(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	if msgs, err := f.mgr.Messages(ctx, "missing", "alice", 0, 0); !errors.Is(err, store.ErrNotFound) || len(msgs) != 0 {
		t.Fatalf("Messages = %d, %v", len(msgs), err)
	}
	if s, err := f.mgr.Summary(ctx, "missing", "alice"); !errors.Is(err, store.ErrNotFound) || s != nil {
		t.Fatalf("Summary = %+v, %v", s, err)
	}
	if err := f.mgr.DeleteSession(ctx, "missing", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteSession = %v", err)
	}
	if h, err := f.mgr.Load(ctx, "missing", "alice"); err != nil || h.Mode != "empty" || len(h.Messages) != 0 {
		t.Fatalf("Load = %+v, %v", h, err)
	}
	// Deleting twice: the second time the session is missing.
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	if _, err := f.mgr.Messages(ctx, "s", "alice", 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Messages after delete = %v", err)
	}
}
