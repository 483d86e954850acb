package db_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// randomSummary is a summary of session with what facts_json keeps
// beside the facts, and text the database must clean (invalid UTF-8, NUL
// bytes), in CJK too.
func randomSummary(rng *rand.Rand, session string, epoch, upTo int64) summary.Summary {
	words := []string{"Lisbon", "김민지 님", "東京都渋谷区", "ORD-58213", "(415) 555-0199", "bad\xffutf8", "nul\x00byte", "a@b.example", "", "  spaced  "}
	cats := []summary.Category{summary.Entity, summary.State, summary.Numeric, "", "weird"}
	sm := summary.Summary{SessionID: session, Epoch: epoch, UpToSeq: upTo, Narrative: "User: " + words[rng.IntN(len(words))] + ". Assistant: ok."}
	for i := range rng.IntN(12) {
		f := summary.Fact{Key: fmt.Sprintf("k_%d", i), Value: words[rng.IntN(len(words))] + fmt.Sprint(i), Category: cats[rng.IntN(len(cats))],
			Mentions: rng.IntN(3), Pinned: rng.IntN(4) == 0, Stated: rng.IntN(2) == 0, FirstSeq: int64(rng.IntN(5)), LastSeq: upTo}
		if rng.IntN(2) == 0 {
			f.ExtractedAt = time.Date(2024, 5, 1, 10, 0, 0, rng.IntN(1e9), time.FixedZone("x", 3600))
		}
		if rng.IntN(3) == 0 {
			f.Previous = words[rng.IntN(len(words))]
		}
		switch rng.IntN(3) {
		case 0:
			f.Sources = []int64{1, upTo}
		case 1:
			f.Sources = []int64{}
		}
		sm.Facts = append(sm.Facts, f)
	}
	if rng.IntN(2) == 0 {
		sm.SentenceSources = []summary.SentenceSource{{Digest: summary.SentenceDigest("User: Lisbon."), Seqs: []int64{1}}}
	}
	if rng.IntN(2) == 0 {
		sm.Forgotten = []summary.Forgotten{{Key: "phone", Digest: "0123456789abcdef0123456789abcdef", Words: 1}}
		sm.ForgetKey = []byte{1, 2, 3, 4}
	}
	return sm
}

// TestFoldSaveFillsSummaryCache: a fold's last save (the lease's save,
// journaled) leaves the saved summary in the message store's summary
// cache under the identity of the row it wrote, so the next load neither
// receives nor decodes it — shown by changing the row behind the store's
// back, keeping its identity — and what that load shows is exactly what
// a store without the cache decodes from the row (seeded random summaries,
// seed printed).
func TestFoldSaveFillsSummaryCache(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := testCtx(t)
	ms := db.NewMessageStore(d)
	uncached := db.NewMessageStore(d, db.WithSummaryCache(0))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range 20 {
		session := fmt.Sprint("s", i)
		mustAppend(t, ctx, ms, session, "alice", user("q"), assistant("a"), user("q2"), assistant("a2"))
		tail, err := ms.Tail(ctx, session, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 { // a first save, then a newer version
			_, save, ok, err := ms.TryLockFold(ctx, session, time.Minute)
			if err != nil || !ok {
				t.Fatalf("TryLockFold: %v %v", ok, err)
			}
			sm := randomSummary(rng, session, tail.Epoch, int64(2+round))
			journaled := false
			rec := store.JournalRecord{Kind: "fold", Outcome: "saved", At: time.Now()}
			jctx := store.WithJournalEdit(ctx, func(j *store.Journal) {
				journaled = true
				j.Add(rec, 10)
			})
			if i%2 == 0 { // the record as data: the save's one statement (strata_save_journaled)
				jctx = store.WithJournalRecord(jctx, rec, 10)
			}
			if err := save(jctx, sm); err != nil {
				t.Fatalf("seed %d, summary %d: save: %v", seed, i, err)
			}
			if !journaled {
				t.Fatal("the save did not apply the journal edit")
			}
			_, want, err := uncached.SnapshotAfterSummary(ctx, session, "alice", 4)
			if err != nil {
				t.Fatal(err)
			}
			// Behind the store's back, keeping epoch, version and updated_at.
			if _, err := d.ExecContext(ctx, `UPDATE strata_summaries SET narrative = 'sneaky', facts_json = '[]' WHERE session_id = $1`, session); err != nil {
				t.Fatal(err)
			}
			_, got, err := ms.SnapshotAfterSummary(ctx, session, "alice", 4)
			if err != nil {
				t.Fatal(err)
			}
			if got != nil && got.Narrative == "sneaky" {
				t.Fatalf("seed %d, summary %d: the load after the fold's save received the summary again", seed, i)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, summary %d: after the fold's save the store shows\n%+v\nthe row decodes to\n%+v", seed, i, got, want)
			}
		}
	}
}
