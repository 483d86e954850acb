package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
)

func TestInMemoryConformance(t *testing.T) {
	memorytest.Run(t, func(*testing.T) memory.MessageStore { return memstore.New() })
}

// TestInMemoryConformanceSharedStore runs the suite on one store for all
// subtests, the way it runs on a shared database.
func TestInMemoryConformanceSharedStore(t *testing.T) {
	shared := memstore.New()
	memorytest.Run(t, func(*testing.T) memory.MessageStore { return shared })
}

func TestInMemoryEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := t.Context()
	var logs testutil.Buffer
	s := memstore.New(memstore.WithMaxSessions(3),
		memstore.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	mustCreate := func(id string) {
		t.Helper()
		if err := s.Create(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	wantSessions := func(want ...string) {
		t.Helper()
		page, total, err := s.Sessions(ctx, "alice", 0, 0)
		var got []string
		for _, info := range page {
			got = append(got, info.SessionID)
		}
		if err != nil || total != len(want) || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("sessions = %v (total %d), %v; want %v", got, total, err, want)
		}
	}
	wantEvicted := func(id string, messages int) {
		t.Helper()
		if _, err := s.Tail(ctx, id, "alice", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s should have been evicted: Tail err = %v", id, err)
		}
		line := fmt.Sprintf("session_id=%s user_id=alice messages=%d max_sessions=3", id, messages)
		if !strings.Contains(logs.String(), line) || !strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("no warning with %q in the log:\n%s", line, logs.String())
		}
	}

	mustCreate("s1")
	mustCreate("s2")
	if _, err := s.Append(ctx, "s2", "alice", store.Message{Role: store.RoleUser, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	old2, _ := s.Tail(ctx, "s2", "alice", 0)
	mustCreate("s3")
	if logs.String() != "" {
		t.Fatalf("logged below the bound:\n%s", logs.String())
	}
	// Reading s1 makes s2 the least recently used.
	if _, err := s.Tail(ctx, "s1", "alice", 1); err != nil {
		t.Fatal(err)
	}
	mustCreate("s4")
	wantEvicted("s2", 1)
	wantSessions("s4", "s3", "s1")

	// Range and Append count as use too; another user's refused read does
	// not.
	if _, err := s.Range(ctx, "s3", "alice", 0, 10, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s4", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tail(ctx, "s1", "bob", 0); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("bob's Tail: %v", err)
	}
	// An append to a missing session is refused and evicts nothing.
	if _, err := s.Append(ctx, "s5", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Append to a missing session: %v, want ErrNotFound", err)
	}
	wantSessions("s4", "s3", "s1")
	mustCreate("s5")
	wantEvicted("s1", 0)
	wantSessions("s5", "s4", "s3")

	// An evicted id is free, and its successor is a new incarnation.
	if err := s.Create(ctx, "s2", "bob"); err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Tail(ctx, "s2", "bob", 0); now.Epoch == old2.Epoch || now.Total != 0 {
		t.Fatalf("re-created evicted session = %+v, old epoch %d", now, old2.Epoch)
	}
	wantEvicted("s3", 0)
}

func TestInMemoryDefaultBound(t *testing.T) {
	const bound = 10_000 // documented default of WithMaxSessions
	ctx := t.Context()
	for name, s := range map[string]memory.MessageStore{
		"default":             memstore.New(),
		"WithMaxSessions(0)":  memstore.New(memstore.WithMaxSessions(0)),
		"WithMaxSessions(-1)": memstore.New(memstore.WithMaxSessions(-1)),
	} {
		for i := range bound + 1 {
			if err := s.Create(ctx, fmt.Sprint(i), "alice"); err != nil {
				t.Fatal(err)
			}
		}
		if _, total, _ := s.Sessions(ctx, "alice", 1, 0); total != bound {
			t.Errorf("%s: %d sessions held, want %d", name, total, bound)
		}
		if _, err := s.Tail(ctx, "0", "alice", 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the oldest session survived past the bound: %v", name, err)
		}
		if _, err := s.Tail(ctx, "1", "alice", 0); err != nil {
			t.Errorf("%s: the second oldest session was evicted: %v", name, err)
		}
	}
}

func TestInMemoryHonoursCancelledContext(t *testing.T) {
	s := memstore.New()
	if err := s.Create(t.Context(), "s", "alice"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	msg := store.Message{Role: store.RoleUser, Content: "hi"}
	errs := map[string]error{
		"Create": s.Create(ctx, "t", "alice"),
		"Append": func() error { _, err := s.Append(ctx, "s", "alice", msg); return err }(),
		"Tail":   func() error { _, err := s.Tail(ctx, "s", "alice", 1); return err }(),
		"Range":  func() error { _, err := s.Range(ctx, "s", "alice", 0, 10, 0); return err }(),
		"Delete": s.Delete(ctx, "s", "alice"),
		"Sessions": func() error {
			_, _, err := s.Sessions(ctx, "alice", 0, 0)
			return err
		}(),
	}
	for op, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", op, err)
		}
	}
	if tail, err := s.Tail(t.Context(), "s", "alice", 1); err != nil || tail.Total != 0 {
		t.Fatalf("cancelled operations changed the store: %+v, %v", tail, err)
	}
	if _, err := s.Tail(t.Context(), "t", "alice", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancelled Create made a session: %v", err)
	}
}

// The in-memory store's API stays small, every name documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 15) // + the Importer and Forgetter methods
}
