package memorytest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// ReplayJournal applies the fact changes of a journal's records, in
// order, to an empty ledger and returns it, key by key. It fails t when
// the journal rolled records out (their changes are no longer there to
// replay) or a change is not one of the five operations.
func ReplayJournal(t testing.TB, j store.Journal) map[string]string {
	t.Helper()
	if j.Rolled.Records > 0 {
		t.Fatalf("the journal rolled %d records out: it cannot be replayed", j.Rolled.Records)
	}
	ledger := map[string]string{}
	for _, r := range j.Records {
		for _, c := range r.Changes {
			switch c.Op {
			case "added", "changed":
				ledger[c.Key] = c.To
			case "removed", "evicted", "forgotten":
				delete(ledger, c.Key)
			default:
				t.Fatalf("record %d: unknown change %+v", r.N, c)
			}
		}
	}
	return ledger
}

// CheckJournal checks the session's journal against its summary: its
// fact changes replay to the summary's facts exactly, its totals are the
// sums of its records, and its records are numbered 1, 2, ... It returns
// the journal.
func CheckJournal(t testing.TB, ctx context.Context, mgr *memory.Manager, sessionID, userID string) store.Journal {
	t.Helper()
	j, err := mgr.Journal(ctx, sessionID, userID)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := mgr.Summary(ctx, sessionID, userID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	if sum != nil {
		for _, f := range sum.Facts {
			want[f.Key] = f.Value
		}
	}
	if got := ReplayJournal(t, j); !maps.Equal(got, want) {
		raw, _ := json.MarshalIndent(j.Records, "", " ")
		t.Errorf("the journal's fact changes replay to\n%v\nnot the ledger\n%v\njournal: %s", got, want, raw)
	}
	var tot store.JournalTotals
	for i, r := range j.Records {
		if r.N != int64(i+1) {
			t.Errorf("record %d is numbered %d", i+1, r.N)
		}
		tot.Records++
		tot.Calls += int64(r.Calls)
		tot.InputTokens += int64(r.InputTokens)
		tot.OutputTokens += int64(r.OutputTokens)
		tot.EstimatedInputTokens += int64(r.EstimatedInputTokens)
		tot.EstimatedOutputTokens += int64(r.EstimatedOutputTokens)
	}
	if tot.Records != j.Totals.Records || tot.Calls != j.Totals.Calls || tot.InputTokens != j.Totals.InputTokens ||
		tot.OutputTokens != j.Totals.OutputTokens || tot.EstimatedInputTokens != j.Totals.EstimatedInputTokens ||
		tot.EstimatedOutputTokens != j.Totals.EstimatedOutputTokens {
		t.Errorf("the journal's totals %+v are not the sums of its records %+v", j.Totals, tot)
	}
	return j
}

// RunJournal runs the conformance suite of store.Journaler on the
// message store newStore returns (called once per subtest): records are
// numbered and bounded, the ones rolled out still counted; a journal
// belongs to one incarnation and goes with its session (delete, replace);
// an erasure's journal edit applies in the erasure's step, and not when
// the erasure is refused.
func RunJournal(t *testing.T, newStore func(t *testing.T) memory.MessageStore) {
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	rec := func(i int) store.JournalRecord {
		return store.JournalRecord{At: at.Add(time.Duration(i) * 30 * time.Minute), Kind: "fold", Outcome: "saved", Calls: 1,
			InputTokens: 100, OutputTokens: 10, FromSeq: int64(i), ToSeq: int64(i),
			Changes: []store.FactChange{{Op: "added", Key: fmt.Sprintf("k%d", i), To: "v\x00é"}}}
	}
	setup := func(t *testing.T) (store.Journaler, memory.MessageStore, string, int64) {
		st := newStore(t)
		jr, ok := st.(store.Journaler)
		if !ok {
			t.Fatalf("%T is not a store.Journaler", st)
		}
		id := "journal-" + token(t)
		if err := st.Create(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		res, err := st.Append(ctx, id, "alice", store.Message{Role: store.RoleUser, Content: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		return jr, st, id, res.Epoch
	}
	t.Run("Bounded", func(t *testing.T) {
		jr, _, id, epoch := setup(t)
		for i := 1; i <= 7; i++ {
			if err := jr.EditJournal(ctx, id, epoch, func(j *store.Journal) { j.Add(rec(i), 5) }); err != nil {
				t.Fatal(err)
			}
		}
		j, err := jr.ReadJournal(ctx, id, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Records) != 5 || j.Records[0].N != 3 || j.Records[4].N != 7 {
			t.Fatalf("records %+v, want numbers 3..7", j.Records)
		}
		if j.Totals.Records != 7 || j.Rolled.Records != 2 || j.Totals.InputTokens != 700 || j.Rolled.InputTokens != 200 ||
			j.Totals.Folds != 7 || j.Totals.Calls != 7 {
			t.Fatalf("totals %+v rolled %+v", j.Totals, j.Rolled)
		}
		// The day's tokens restart on a new UTC day (record 1 is at 23:30,
		// records 2 to 7 on the next day), rolled records included.
		if j.Day != "2026-03-02" || j.DayTokens != 6*110 {
			t.Fatalf("day %s tokens %d, want 2026-03-02 and %d", j.Day, j.DayTokens, 6*110)
		}
		if got := j.Records[4].Changes[0]; got.Key != "k7" || got.To == "" {
			t.Fatalf("change read back as %+v", got)
		}
		if other, err := jr.ReadJournal(ctx, id, epoch+1); err != nil || len(other.Records) != 0 {
			t.Fatalf("another epoch's journal: %+v, %v", other, err)
		}
	})
	t.Run("ConcurrentEdits", func(t *testing.T) {
		// Edits are atomic: 8 writers appending 10 records each, as edits
		// or as data, lose none and number them 1 to 80 without a gap or a
		// repeat.
		jr, _, id, epoch := setup(t)
		var wg sync.WaitGroup
		errs := make(chan error, 80)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					r, actx := rec(w*10+i), ctx
					if w%2 == 0 { // half the writers append as data (store.WithJournalRecord)
						actx = store.WithJournalRecord(ctx, r, 200)
					}
					errs <- jr.EditJournal(actx, id, epoch, func(j *store.Journal) { j.Add(r, 200) })
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		j, err := jr.ReadJournal(ctx, id, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Records) != 80 || j.Totals.Records != 80 || j.Totals.InputTokens != 8000 {
			t.Fatalf("%d records, totals %+v", len(j.Records), j.Totals)
		}
		for i, r := range j.Records {
			if r.N != int64(i+1) {
				t.Fatalf("record %d numbered %d", i+1, r.N)
			}
		}
	})
	t.Run("Model", func(t *testing.T) {
		// Seeded random appends — as data (store.WithJournalRecord, which a
		// database appends as one row) or as edits — of folds of every
		// outcome, erasures and fallbacks over several UTC days, with
		// scrubs of some records between them, leave exactly the journal
		// Journal.Add and the scrubs make of an empty one: the same
		// records, numbers, totals, rolled totals and day's tokens, after
		// every step, well past the retention.
		jr, _, id, epoch := setup(t)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 16))
		keep := 1 + rng.IntN(12)
		want := store.Journal{Epoch: epoch}
		when := at
		outcomes := []string{"saved", "saved", "stale", "failed", "abandoned"}
		for step := range 120 {
			if rng.IntN(5) == 0 {
				mod, rem := int64(1+rng.IntN(3)), int64(rng.IntN(3))
				scrub := func(j *store.Journal) {
					for i := range j.Records {
						if r := &j.Records[i]; r.N%mod == rem {
							r.Changes, r.Scrubbed = nil, true
						}
					}
				}
				scrub(&want)
				if err := jr.EditJournal(ctx, id, epoch, scrub); err != nil {
					t.Fatal(err)
				}
			} else {
				when = when.Add(time.Duration(rng.IntN(10)) * time.Hour)
				r := store.JournalRecord{At: when, Kind: "fold", Outcome: outcomes[rng.IntN(len(outcomes))], Calls: rng.IntN(3),
					InputTokens: rng.IntN(500), OutputTokens: rng.IntN(50), EstimatedInputTokens: rng.IntN(2) * rng.IntN(300),
					FromSeq: int64(step), ToSeq: int64(step + 1), Summarizer: "extractive", Duration: time.Duration(rng.IntN(1e6))}
				switch rng.IntN(4) {
				case 0:
					r.Kind, r.Outcome, r.Seqs, r.Calls, r.InputTokens, r.OutputTokens = "forget", "done", []int64{int64(step)}, 0, 0, 0
				case 1:
					r.Fallback = "budget"
				}
				for k := range rng.IntN(3) {
					r.Changes = append(r.Changes, store.FactChange{Op: "added", Key: fmt.Sprintf("k%d_%d", step, k), To: "v é"})
				}
				want.Add(r, keep)
				actx := ctx
				if rng.IntN(2) == 0 {
					actx = store.WithJournalRecord(ctx, r, keep)
				}
				if err := jr.EditJournal(actx, id, epoch, func(j *store.Journal) { j.Add(r, keep) }); err != nil {
					t.Fatal(err)
				}
			}
			got, err := jr.ReadJournal(ctx, id, epoch)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("seed %d, keep %d, step %d: the journal is\n%s\nwant\n%s", seed, keep, step, g, w)
			}
		}
		if want.Rolled.Records == 0 {
			t.Fatalf("seed %d: nothing rolled out", seed)
		}
	})
	t.Run("GoesWithTheSession", func(t *testing.T) {
		jr, st, id, epoch := setup(t)
		add := func(epoch int64) {
			t.Helper()
			if err := jr.EditJournal(ctx, id, epoch, func(j *store.Journal) { j.Add(rec(1), 5) }); err != nil {
				t.Fatal(err)
			}
		}
		add(epoch)
		add(epoch + 100) // not the session's epoch: nothing
		if j, _ := jr.ReadJournal(ctx, id, epoch); len(j.Records) != 1 {
			t.Fatalf("%d records, want 1", len(j.Records))
		}
		if rp, ok := st.(store.Replacer); ok {
			res, err := rp.Replace(ctx, id, "alice", store.Message{Role: store.RoleUser, Content: "again"})
			if err != nil {
				t.Fatal(err)
			}
			if j, _ := jr.ReadJournal(ctx, id, res.Epoch); len(j.Records) != 0 {
				t.Fatalf("a replaced session kept %d journal records", len(j.Records))
			}
			epoch = res.Epoch
			add(epoch)
		}
		if err := st.Delete(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		add(epoch) // deleted: nothing
		if j, _ := jr.ReadJournal(ctx, id, epoch); len(j.Records) != 0 {
			t.Fatalf("a deleted session kept %d journal records", len(j.Records))
		}
		if err := st.Create(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		tail, err := st.Tail(ctx, id, "alice", 0)
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := jr.ReadJournal(ctx, id, tail.Epoch); len(j.Records) != 0 {
			t.Fatalf("a session created again under the id has %d journal records", len(j.Records))
		}
	})
	t.Run("ErasureEdit", func(t *testing.T) {
		jr, st, id, epoch := setup(t)
		fg, ok := st.(store.Forgetter)
		if !ok {
			t.Skip("not a store.Forgetter")
		}
		if err := jr.EditJournal(ctx, id, epoch, func(j *store.Journal) { j.Add(rec(1), 5) }); err != nil {
			t.Fatal(err)
		}
		scrub := func(j *store.Journal) {
			for i := range j.Records {
				j.Records[i].Changes, j.Records[i].Scrubbed = nil, true
			}
			j.Add(store.JournalRecord{At: at, Kind: "forget", Outcome: "done", Seqs: []int64{1}}, 5)
		}
		// A refused erasure (an unknown seq) leaves the journal alone.
		if err := fg.Forget(store.WithJournalEdit(ctx, scrub), id, "alice", []int64{999}, nil); err == nil {
			t.Fatal("forget of an unknown seq succeeded")
		}
		if j, _ := jr.ReadJournal(ctx, id, epoch); len(j.Records) != 1 || j.Records[0].Scrubbed {
			t.Fatalf("a refused erasure edited the journal: %+v", j.Records)
		}
		tail, err := st.Tail(ctx, id, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := fg.Forget(store.WithJournalEdit(ctx, scrub), id, "alice", []int64{tail.Messages[0].Seq}, nil); err != nil {
			t.Fatal(err)
		}
		j, err := jr.ReadJournal(ctx, id, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Records) != 2 || !j.Records[0].Scrubbed || j.Records[0].Changes != nil || j.Records[1].Kind != "forget" {
			t.Fatalf("after the erasure: %+v", j.Records)
		}
	})
}
