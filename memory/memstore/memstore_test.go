package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

func TestInMemoryConformance(t *testing.T) {
	memorytest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}

// TestInMemoryConformanceSharedStore runs the suite on one store for all
// subtests, the way it runs on a shared database.
func TestInMemoryConformanceSharedStore(t *testing.T) {
	shared := memstore.New()
	memorytest.Run(t, func(*testing.T) store.Store { return shared })
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
	if err := s.Create(ctx, "s2", "alice"); err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Tail(ctx, "s2", "alice", 0); now.Epoch == old2.Epoch || now.Total != 0 {
		t.Fatalf("re-created evicted session = %+v, old epoch %d", now, old2.Epoch)
	}
	wantEvicted("s3", 0)
	wantSessions("s2", "s5", "s4")

	// Another user never evicts alice's sessions: with none of his own to
	// give up, bob is refused.
	if err := s.Create(ctx, "b1", "bob"); !errors.Is(err, store.ErrStoreFull) {
		t.Fatalf("bob's Create in a store full of alice's sessions: %v, want ErrStoreFull", err)
	}
	wantSessions("s2", "s5", "s4")
	if _, total, _ := s.Sessions(ctx, "bob", 0, 0); total != 0 {
		t.Fatalf("bob holds %d sessions after a refused Create", total)
	}
}

// Another user's flood of new sessions evicts none of the first user's:
// past the store's bound the flooding user loses their own least recently
// used sessions, or is refused; every eviction is reported to WithOnEvict.
func TestInMemoryNeverEvictsAnotherUsersSessions(t *testing.T) {
	ctx := t.Context()
	var evictedMu sync.Mutex
	evicted := map[string]string{}
	s := memstore.New(memstore.WithMaxSessions(1000), memstore.WithOnEvict(func(id, user string) {
		evictedMu.Lock()
		defer evictedMu.Unlock()
		evicted[id] = user
	}))
	for i := range 20 {
		id := fmt.Sprintf("alice-%d", i)
		if err := s.Create(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, id, "alice", store.Message{Role: store.RoleUser, Content: "acknowledged"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, full := 0, 0
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				err := s.Create(ctx, fmt.Sprintf("bob-%d-%d", w, i), "bob")
				mu.Lock()
				switch {
				case err == nil:
					created++
				case errors.Is(err, store.ErrStoreFull):
					full++
				default:
					t.Errorf("bob's Create: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		tail, err := s.Tail(ctx, fmt.Sprintf("alice-%d", i), "alice", 1)
		if err != nil || tail.Total != 1 {
			t.Fatalf("alice-%d after bob's 1 200 creates: %+v, %v", i, tail, err)
		}
	}
	_, bobs, _ := s.Sessions(ctx, "bob", 1, 0)
	if created != 1200 || bobs != 980 {
		t.Fatalf("bob created %d (refused %d) and holds %d sessions; want 1200 created (his own evicted), 980 held", created, full, bobs)
	}
	evictedMu.Lock()
	defer evictedMu.Unlock()
	if len(evicted) != 220 {
		t.Fatalf("%d evictions reported, want 220", len(evicted))
	}
	for id, user := range evicted {
		if user != "bob" || !strings.HasPrefix(id, "bob-") {
			t.Fatalf("evicted %s of %s", id, user)
		}
	}
}

func TestInMemoryDefaultBounds(t *testing.T) {
	const bound, perUser = 10_000, 1_000 // documented defaults
	ctx := t.Context()
	for name, s := range map[string]memory.MessageStore{
		"default":             memstore.New(),
		"WithMaxSessions(0)":  memstore.New(memstore.WithMaxSessions(0), memstore.WithMaxSessionsPerUser(0)),
		"WithMaxSessions(-1)": memstore.New(memstore.WithMaxSessions(-1), memstore.WithMaxSessionsPerUser(-1)),
	} {
		for u := range bound / perUser {
			for i := range perUser {
				if err := s.Create(ctx, fmt.Sprintf("%d-%d", u, i), fmt.Sprint(u)); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A user at the per-user bound gives up their oldest session.
		if err := s.Create(ctx, "0-new", "0"); err != nil {
			t.Fatal(err)
		}
		if _, total, _ := s.Sessions(ctx, "0", 1, 0); total != perUser {
			t.Errorf("%s: %d sessions held by one user, want %d", name, total, perUser)
		}
		if _, err := s.Tail(ctx, "0-0", "0", 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the user's oldest session survived past the per-user bound: %v", name, err)
		}
		if _, err := s.Tail(ctx, "0-1", "0", 0); err != nil {
			t.Errorf("%s: the user's second oldest session was evicted: %v", name, err)
		}
		// The store is full: a new user is refused.
		if err := s.Create(ctx, "x", "newcomer"); !errors.Is(err, store.ErrStoreFull) {
			t.Errorf("%s: a new user's Create in a full store: %v, want ErrStoreFull", name, err)
		}
	}
	// The per-user bound never exceeds the store's.
	s := memstore.New(memstore.WithMaxSessions(5), memstore.WithMaxSessionsPerUser(50))
	for i := range 6 {
		if err := s.Create(ctx, fmt.Sprint(i), "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, total, _ := s.Sessions(ctx, "alice", 1, 0); total != 5 {
		t.Fatalf("alice holds %d sessions, want 5", total)
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
	// 28: + Replace, Import, Forget, ParticipantSessions, WithOnEvict,
	// WithMaxSessionsPerUser, Summaries; and the summary half of the one
	// storage contract (store.Store): Summary, SaveSummary, Snapshot,
	// SnapshotAfterSummary, TryLockFold, with KeepsSummaries for
	// store.Compose to recognise Summaries; EditJournal, ReadJournal
	// (store.Journaler).
	testutil.CheckExports(t, ".", 28)
}

// TestSummaryConformance runs the summary part of the store contract
// (summary, snapshot reads, fold lease) on the in-memory store.
func TestSummaryConformance(t *testing.T) {
	memorytest.RunSummaries(t, func(*testing.T) store.Store { return memstore.New() })
}

// TestComposedConformance runs the suite on store.Compose's adapter over
// a message store and a summary store apart (the in-memory ones, the
// store hidden behind what a store written before the one contract has):
// the messages part, import, erasure and participants.
func TestComposedConformance(t *testing.T) {
	composed := func(*testing.T) store.Store {
		return store.Compose(withCapabilities{memstore.New()}, summary.NewInMemoryStore(0))
	}
	memorytest.Run(t, composed)
	memorytest.RunCapabilities(t, composed)
}

// withCapabilities hides the summary half of a store: what a message
// store written before the one contract has (store.Messages with the
// optional Replacer, Importer, Forgetter and ParticipantLister).
type withCapabilities struct{ s *memstore.Store }

func (w withCapabilities) Create(ctx context.Context, id, user string) error {
	return w.s.Create(ctx, id, user)
}
func (w withCapabilities) Append(ctx context.Context, id, user string, msgs ...store.Message) (store.AppendResult, error) {
	return w.s.Append(ctx, id, user, msgs...)
}
func (w withCapabilities) Tail(ctx context.Context, id, user string, n int) (store.Tail, error) {
	return w.s.Tail(ctx, id, user, n)
}
func (w withCapabilities) Range(ctx context.Context, id, user string, after, through int64, limit int) ([]store.Message, error) {
	return w.s.Range(ctx, id, user, after, through, limit)
}
func (w withCapabilities) Delete(ctx context.Context, id, user string) error {
	return w.s.Delete(ctx, id, user)
}
func (w withCapabilities) Sessions(ctx context.Context, user string, limit, offset int) ([]store.SessionInfo, int, error) {
	return w.s.Sessions(ctx, user, limit, offset)
}
func (w withCapabilities) Replace(ctx context.Context, id, user string, msgs ...store.Message) (store.AppendResult, error) {
	return w.s.Replace(ctx, id, user, msgs...)
}
func (w withCapabilities) Import(ctx context.Context, id, user string, msgs []store.Message, sum func(int64, []int64) *summary.Summary) (store.AppendResult, error) {
	return w.s.Import(ctx, id, user, msgs, sum)
}
func (w withCapabilities) Forget(ctx context.Context, id, user string, seqs []int64, clean func(*summary.Summary, int64, []store.Message) *summary.Summary) error {
	return w.s.Forget(ctx, id, user, seqs, clean)
}
func (w withCapabilities) ParticipantSessions(ctx context.Context, owner, participant string, limit, offset int) ([]store.SessionInfo, int, error) {
	return w.s.ParticipantSessions(ctx, owner, participant, limit, offset)
}
