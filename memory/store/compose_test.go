package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// flakySums is a summary store whose Get and Save fail on demand.
type flakySums struct {
	summary.Store
	failGet, failSave bool
}

func (f *flakySums) Get(ctx context.Context, id string) (*summary.Summary, error) {
	if f.failGet {
		return nil, errors.New("summary store down")
	}
	return f.Store.Get(ctx, id)
}

func (f *flakySums) Save(ctx context.Context, s summary.Summary) error {
	if f.failSave {
		return errors.New("summary store down")
	}
	return f.Store.Save(ctx, s)
}

// messagesOnly hides every method of a store but store.Messages'.
type messagesOnly struct{ store.Messages }

// Compose uses a store alone with its own summaries or none, and adapts
// any other pair; the adapter's fallbacks do what its documentation says:
// a failing summary store leaves the tail readable
// (ErrSummaryUnavailable), an import whose summary cannot be saved is
// undone, and a delete removes the summary from the summary store too.
func TestCompose(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	if store.Compose(ms, ms.Summaries()) != store.Store(ms) || store.Compose(ms, nil) != store.Store(ms) {
		t.Fatal("a store with its own summaries, or none, is not used alone")
	}
	sums := &flakySums{Store: summary.NewInMemoryStore(0)}
	c := store.Compose(messagesOnly{ms}, sums)
	if c == store.Store(ms) {
		t.Fatal("a pair is not adapted")
	}

	msgs := []store.Message{{Role: store.RoleUser, Content: "q"}, {Role: store.RoleAssistant, Content: "a"}}
	build := func(epoch int64, seqs []int64) *summary.Summary {
		return &summary.Summary{SessionID: "imp", Narrative: "n", UpToSeq: seqs[len(seqs)-1], Epoch: epoch}
	}
	sums.failSave = true
	if _, err := c.Import(ctx, "imp", "alice", msgs, build); err == nil {
		t.Fatal("an import whose summary could not be saved succeeded")
	}
	if _, err := ms.Tail(ctx, "imp", "alice", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the half-imported session was not undone: %v", err)
	}
	sums.failSave = false
	res, err := c.Import(ctx, "imp", "alice", msgs, build)
	if err != nil || res.Total != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if s, err := sums.Get(ctx, "imp"); err != nil || s == nil || s.UpToSeq != res.LastSeq {
		t.Fatalf("imported summary %+v, %v", s, err)
	}

	sums.failGet = true
	tail, s, err := c.Snapshot(ctx, "imp", "alice", 5)
	if !errors.Is(err, store.ErrSummaryUnavailable) || s != nil || tail.Total != 2 || len(tail.Messages) != 2 {
		t.Fatalf("snapshot with the summary store down: %+v, %+v, %v; want the tail and ErrSummaryUnavailable", tail, s, err)
	}
	sums.failGet = false
	tail, s, err = c.SnapshotAfterSummary(ctx, "imp", "alice", 5)
	if err != nil || s == nil || tail.Total != 2 || len(tail.Messages) != 0 {
		t.Fatalf("after the summary: %+v, %+v, %v; want no message past its cursor", tail, s, err)
	}

	if err := c.Delete(ctx, "imp", "alice"); err != nil {
		t.Fatal(err)
	}
	if s, err := sums.Get(ctx, "imp"); err != nil || s != nil {
		t.Fatalf("the summary survived the delete: %+v, %v", s, err)
	}
	if err := c.Forget(ctx, "imp", "alice", []int64{1}, nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Forget over a message store that cannot erase: %v, want ErrUnsupported", err)
	}
}

// Over a message store that keeps no journal, Compose keeps one in
// process memory: per incarnation (an older epoch's edit is ignored, a
// newer one starts afresh), and an erasure's edit reaches it.
func TestComposeKeepsAJournalInProcess(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	c := store.Compose(messagesOnly{ms}, summary.NewInMemoryStore(0))
	if err := c.Create(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := c.Append(ctx, "s", "alice", store.Message{Role: store.RoleUser, Content: "my card is 4111"}, store.Message{Role: store.RoleAssistant, Content: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.JournalRecord{Kind: "fold", Outcome: "saved", Changes: []store.FactChange{{Op: "added", Key: "card", To: "4111"}}}
	if err := c.EditJournal(ctx, "s", res.Epoch, func(j *store.Journal) { j.Add(rec, 10) }); err != nil {
		t.Fatal(err)
	}
	if err := c.EditJournal(ctx, "s", res.Epoch-1, func(j *store.Journal) { j.Add(rec, 10) }); err != nil {
		t.Fatal(err)
	}
	if j, err := c.ReadJournal(ctx, "s", res.Epoch); err != nil || len(j.Records) != 1 || j.Records[0].Changes[0].To != "4111" {
		t.Fatalf("journal %+v, %v; want the one record of this epoch", j, err)
	}
	// A message store that can erase but keeps no journal: the
	// erasure's edit reaches the journal in process memory, a refused
	// erasure's does not.
	fc := store.Compose(erasing{ms, ms}, summary.NewInMemoryStore(0))
	if err := fc.EditJournal(ctx, "s", res.Epoch, func(j *store.Journal) { j.Add(rec, 10) }); err != nil {
		t.Fatal(err)
	}
	scrub := func(j *store.Journal) {
		for i := range j.Records {
			j.Records[i].Changes, j.Records[i].Scrubbed = nil, true
		}
	}
	if err := fc.Forget(store.WithJournalEdit(ctx, scrub), "s", "alice", []int64{999}, nil); err == nil {
		t.Fatal("forget of an unknown seq succeeded")
	}
	if j, _ := fc.ReadJournal(ctx, "s", res.Epoch); len(j.Records) != 1 || j.Records[0].Scrubbed {
		t.Fatalf("a refused erasure edited the journal: %+v", j.Records)
	}
	if err := fc.Forget(store.WithJournalEdit(ctx, scrub), "s", "alice", []int64{res.LastSeq - 1}, nil); err != nil {
		t.Fatal(err)
	}
	if j, _ := fc.ReadJournal(ctx, "s", res.Epoch); len(j.Records) != 1 || !j.Records[0].Scrubbed || j.Records[0].Changes != nil {
		t.Fatalf("after the erasure: %+v", j.Records)
	}
}

// erasing is a message store that can erase (a Forgetter) and keeps no
// journal.
type erasing struct {
	store.Messages
	store.Forgetter
}
