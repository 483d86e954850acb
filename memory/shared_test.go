package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// Sessions with a shared prefix are read and written by every participant;
// every other session stays its owner's.
func TestSharedSessions(t *testing.T) {
	ctx := context.Background()
	store := memory.NewInMemoryStore()
	cfg := memory.DefaultConfig()
	cfg.SharedSessionPrefixes = []string{"slack-"}
	mgr, err := memory.NewManager(store, cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	// The manager keeps its own copy of the prefixes: neither the caller's
	// slice nor the one Config returns can change who shares a session.
	cfg.SharedSessionPrefixes[0] = "dm-"
	mgr.Config().SharedSessionPrefixes[0] = "dm-"
	if got := mgr.Config().SharedSessionPrefixes; len(got) != 1 || got[0] != "slack-" {
		t.Fatalf("prefixes changed from outside: %q", got)
	}

	// Two users write one shared thread; both see all of it.
	if err := mgr.SaveTurn(ctx, "slack-C1-1700000000.1", "alice", "hi all", "hello"); err != nil {
		t.Fatal(err)
	}
	if err := mgr.SaveTurn(ctx, "slack-C1-1700000000.1", "bob", "me too", "welcome"); err != nil {
		t.Fatalf("second participant refused: %v", err)
	}
	for _, u := range []string{"alice", "bob", ""} {
		h, err := mgr.Load(ctx, "slack-C1-1700000000.1", u)
		if err != nil || len(h.Messages) != 4 {
			t.Fatalf("%q loads %d messages, %v; want the whole thread", u, len(h.Messages), err)
		}
		if n, err := mgr.Count(ctx, "slack-C1-1700000000.1", u); err != nil || n != 4 {
			t.Fatalf("%q counts %d, %v", u, n, err)
		}
	}
	// The store records the one shared owner, whoever wrote.
	if _, err := store.Tail(ctx, "slack-C1-1700000000.1", "shared", 0); err != nil {
		t.Fatalf("shared session not owned by %s: %v", "shared", err)
	}
	// Shared sessions are listed for no participant.
	if list, total, err := mgr.Sessions(ctx, "alice", 10, 0); err != nil || total != 0 || len(list) != 0 {
		t.Fatalf("alice lists %v (%d), %v", list, total, err)
	}

	// A session without the prefix stays private, even with "slack" in it.
	if err := mgr.SaveTurn(ctx, "dm-slack-1", "alice", "secret", "noted"); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Load(ctx, "dm-slack-1", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("bob loads alice's session: %v", err)
	}
	if err := mgr.SaveTurn(ctx, "dm-slack-1", "bob", "let me in", ""); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("bob appends to alice's session: %v", err)
	}
	if h, err := mgr.Load(ctx, "dm-slack-1", "alice"); err != nil || len(h.Messages) != 2 {
		t.Fatalf("alice's own session: %d messages, %v", len(h.Messages), err)
	}

	// Without the prefix configured, the same id is private too.
	plain, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig(), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	if err := plain.SaveTurn(ctx, "slack-C1-1700000000.1", "alice", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if err := plain.SaveTurn(ctx, "slack-C1-1700000000.1", "bob", "hi", "hello"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("shared by default: %v", err)
	}

	// Any participant may delete a shared session.
	if err := mgr.DeleteSession(ctx, "slack-C1-1700000000.1", "bob"); err != nil {
		t.Fatal(err)
	}
	if h, err := mgr.Load(ctx, "slack-C1-1700000000.1", "alice"); err != nil || len(h.Messages) != 0 {
		t.Fatalf("after delete: %d messages, %v", len(h.Messages), err)
	}
}

// The manager names the acting user as the author of every message it
// saves, whatever the messages say, so a participant of a shared session
// is who wrote in it; SharedSessions lists those a user wrote in, needs a
// store that records participants, and lists nothing without prefixes.
func TestSharedSessionsParticipants(t *testing.T) {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	cfg.SharedSessionPrefixes = []string{"slack-"}
	cfg.SharedSessionViewers = []string{"admin"}
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	// A message claiming another author is recorded as the caller's.
	spoof := store.Message{Role: store.RoleUser, Content: "hi", UserID: "mallory"}
	if _, err := mgr.Append(ctx, "slack-T1", "alice", true, spoof); err != nil {
		t.Fatal(err)
	}
	if err := mgr.SaveTurn(ctx, "slack-T1", "bob", "hello", "hey"); err != nil {
		t.Fatal(err)
	}
	if err := mgr.SaveTurn(ctx, "alice-own", "alice", "mine", "ok"); err != nil {
		t.Fatal(err)
	}
	msgs, err := mgr.Messages(ctx, "slack-T1", "carol", 0, 0)
	if err != nil || len(msgs) != 3 || msgs[0].UserID != "alice" || msgs[1].UserID != "bob" || msgs[2].UserID != "bob" {
		t.Fatalf("authors: %+v, %v", msgs, err)
	}
	for user, want := range map[string]int{"alice": 1, "bob": 1, "mallory": 0, "carol": 0, "": 0} {
		infos, total, err := mgr.SharedSessions(ctx, user, 0, 0)
		if err != nil || total != want || len(infos) != want || (want == 1 && infos[0].SessionID != "slack-T1") {
			t.Errorf("%q's shared sessions: %+v (total %d), %v; want %d", user, infos, total, err, want)
		}
	}
	if got := mgr.Config().SharedSessionViewers; len(got) != 1 || got[0] != "admin" {
		t.Fatalf("viewers: %q", got)
	}
	// A store that records no participants: the error says so.
	plain, err := memory.NewManager(plainStore{memory.NewInMemoryStore()}, cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	if _, _, err := plain.SharedSessions(ctx, "alice", 0, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("SharedSessions over a store without participants: %v", err)
	}
	// Without shared prefixes nothing is shared, and nothing is listed.
	none, err := memory.NewManager(plainStore{memory.NewInMemoryStore()}, memory.DefaultConfig(), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = none.Close() })
	if infos, total, err := none.SharedSessions(ctx, "alice", 0, 0); err != nil || total != 0 || len(infos) != 0 {
		t.Fatalf("SharedSessions without prefixes: %v, %d, %v", infos, total, err)
	}
	// A blank viewer is refused.
	bad := memory.DefaultConfig()
	bad.SharedSessionViewers = []string{" "}
	if _, err := memory.NewManager(memory.NewInMemoryStore(), bad); err == nil {
		t.Fatal("a blank shared-session viewer was accepted")
	}
}

// plainStore hides the optional capabilities of the store it wraps.
type plainStore struct{ memory.MessageStore }
