package memorytest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// RunSummaryCapabilities runs the conformance suite of the optional
// capabilities that involve a session's summary — store.FoldLocker,
// store.FoldSaveLocker, store.SnapshotReader and store.AfterSummaryReader
// — against the stores newStores returns (one call per subtest). A
// capability neither store has is skipped, with one line saying so; so is
// SnapshotReader when the message store does not read the summary store's
// summaries (ReadsSummariesOf false). It checks:
//
//   - FoldLocker: a held lock refuses a second holder and not another
//     session; release frees it and is safe to call twice;
//   - FoldSaveLocker: while held it refuses a second holder; its save
//     (when not nil) stores the summary, as the summary store then reads
//     it, and frees the lock at once; release after save is harmless;
//   - SnapshotReader: Snapshot returns Tail's result and the summary
//     store's summary, with Tail's errors (ErrNotFound, ErrNotOwner);
//   - AfterSummaryReader: SnapshotAfterSummary returns the newest n of the
//     messages after the summary's cursor (all messages without a summary),
//     with the session's whole count and epoch.
func RunSummaryCapabilities(t *testing.T, newStores func(t *testing.T) Stores) {
	for _, tc := range []struct {
		name string
		run  func(e *env, st Stores)
	}{
		{"FoldLocker", testFoldLocker},
		{"FoldSaveLocker", testFoldSaveLocker},
		{"SnapshotReader", testSnapshotReader},
		{"AfterSummaryReader", testAfterSummaryReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStores(t)
			tc.run(&env{t: t, ctx: t.Context(), s: st.Messages, token: token(t)}, st)
		})
	}
}

// capable returns the stores of st that implement T, naming each.
func capable[T any](st Stores) (out []T, names []string) {
	for _, s := range []struct {
		name string
		v    any
	}{{"message store", st.Messages}, {"summary store", st.Summaries}} {
		if c, ok := s.v.(T); ok {
			out, names = append(out, c), append(names, fmt.Sprintf("%s %T", s.name, s.v))
		}
	}
	return out, names
}

func testFoldLocker(e *env, st Stores) {
	lockers, names := capable[store.FoldLocker](st)
	if len(lockers) == 0 {
		e.t.Skip("neither store is a store.FoldLocker")
	}
	for i, l := range lockers {
		id, other := e.id(fmt.Sprint("lock-", i)), e.id(fmt.Sprint("lock-other-", i))
		release, ok, err := l.TryLockFold(e.ctx, id, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("%s: first TryLockFold = %v, %v", names[i], ok, err)
		}
		for _, l2 := range lockers { // the lock is shared by both stores when both have one
			if _, ok, err := l2.TryLockFold(e.ctx, id, time.Minute); err != nil || ok {
				e.t.Fatalf("%s: a held lock was taken again (ok %v, err %v)", names[i], ok, err)
			}
		}
		r2, ok, err := l.TryLockFold(e.ctx, other, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("%s: another session's lock refused: %v, %v", names[i], ok, err)
		}
		r2()
		release()
		release() // safe twice
		r3, ok, err := l.TryLockFold(e.ctx, id, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("%s: lock not free after release: %v, %v", names[i], ok, err)
		}
		r3()
	}
}

// summarized makes a session of n messages for alice and returns its
// append result and the messages' sequence numbers.
func (e *env) summarized(name string, n int) (string, string, store.AppendResult, []int64) {
	id, alice := e.id(name), e.user("alice")
	e.mustCreate(id, alice)
	msgs := make([]store.Message, n)
	for i := range msgs {
		msgs[i] = user(fmt.Sprint("m", i+1))
	}
	res := e.mustAppend(id, alice, msgs...)
	return id, alice, res, seqs(e.mustTail(id, alice).Messages)
}

func testFoldSaveLocker(e *env, st Stores) {
	lockers, names := capable[store.FoldSaveLocker](st)
	if len(lockers) == 0 {
		e.t.Skip("neither store is a store.FoldSaveLocker")
	}
	for i, l := range lockers {
		id, _, res, seq := e.summarized(fmt.Sprint("save-lock-", i), 4)
		release, save, ok, err := l.TryLockFoldSaving(e.ctx, id, time.Minute, st.Summaries)
		if err != nil || !ok {
			e.t.Fatalf("%s: TryLockFoldSaving = %v, %v", names[i], ok, err)
		}
		if _, _, ok, err := l.TryLockFoldSaving(e.ctx, id, time.Minute, st.Summaries); err != nil || ok {
			e.t.Fatalf("%s: a held lock was taken again (ok %v, err %v)", names[i], ok, err)
		}
		if save == nil {
			e.t.Logf("%s: save is nil for %T: the fallback (sums.Save, then release) applies", names[i], st.Summaries)
			release()
			continue
		}
		want := summary.Summary{SessionID: id, Narrative: "they met", UpToSeq: seq[1], Epoch: res.Epoch}
		if err := save(e.ctx, want); err != nil {
			e.t.Fatalf("%s: save: %v", names[i], err)
		}
		got, err := st.Summaries.Get(e.ctx, id)
		if err != nil || got == nil || got.Narrative != want.Narrative || got.UpToSeq != want.UpToSeq || got.Epoch != want.Epoch {
			e.t.Fatalf("%s: after save the summary store reads %+v, %v; want %+v", names[i], got, err, want)
		}
		r2, _, ok, err := l.TryLockFoldSaving(e.ctx, id, time.Minute, st.Summaries)
		if err != nil || !ok {
			e.t.Fatalf("%s: save did not free the lock: %v, %v", names[i], ok, err)
		}
		release() // after save: harmless, and must not free r2's lock
		if _, _, ok, _ := l.TryLockFoldSaving(e.ctx, id, time.Minute, st.Summaries); ok {
			e.t.Fatalf("%s: the first holder's release freed the next holder's lock", names[i])
		}
		r2()
	}
}

func testSnapshotReader(e *env, st Stores) {
	sr, ok := st.Messages.(store.SnapshotReader)
	if !ok {
		e.t.Skipf("%T is not a store.SnapshotReader", st.Messages)
	}
	if !sr.ReadsSummariesOf(st.Summaries) {
		e.t.Skipf("%T does not read the summaries of %T", st.Messages, st.Summaries)
	}
	id, alice, res, seq := e.summarized("snapshot", 5)
	tail, sum, err := sr.Snapshot(e.ctx, id, alice, 3)
	if err != nil || sum != nil {
		e.t.Fatalf("Snapshot before any summary: %+v, %v", sum, err)
	}
	want := e.mustTail(id, alice)
	if tail.Total != want.Total || tail.Epoch != want.Epoch || !slices.Equal(seqs(tail.Messages), seqs(want.Messages)[2:]) {
		e.t.Fatalf("Snapshot tail %+v, Tail %+v", tail, want)
	}
	if err := st.Summaries.Save(e.ctx, summary.Summary{SessionID: id, Narrative: "n", UpToSeq: seq[2], Epoch: res.Epoch}); err != nil {
		e.t.Fatal(err)
	}
	_, sum, err = sr.Snapshot(e.ctx, id, alice, 3)
	if err != nil || sum == nil || sum.UpToSeq != seq[2] || sum.Narrative != "n" || sum.Epoch != res.Epoch {
		e.t.Fatalf("Snapshot summary %+v, %v; want the stored one", sum, err)
	}
	if _, _, err := sr.Snapshot(e.ctx, id, e.user("bob"), 3); !errors.Is(err, store.ErrNotOwner) {
		e.t.Fatalf("Snapshot as another user: %v, want ErrNotOwner", err)
	}
	if _, _, err := sr.Snapshot(e.ctx, e.id("missing"), alice, 3); !errors.Is(err, store.ErrNotFound) {
		e.t.Fatalf("Snapshot of a missing session: %v, want ErrNotFound", err)
	}
}

func testAfterSummaryReader(e *env, st Stores) {
	ar, ok := st.Messages.(store.AfterSummaryReader)
	if !ok {
		e.t.Skipf("%T is not a store.AfterSummaryReader", st.Messages)
	}
	id, alice, res, seq := e.summarized("after-summary", 8)
	check := func(what string, n int, wantSeqs []int64) {
		e.t.Helper()
		tail, _, err := ar.SnapshotAfterSummary(e.ctx, id, alice, n)
		if err != nil || tail.Total != 8 || tail.Epoch != res.Epoch || !slices.Equal(seqs(tail.Messages), wantSeqs) {
			e.t.Fatalf("%s: SnapshotAfterSummary(%d) = %v (total %d, epoch %d), %v; want seqs %v", what, n, seqs(tail.Messages), tail.Total, tail.Epoch, err, wantSeqs)
		}
	}
	check("no summary", 3, seq[5:])
	if err := st.Summaries.Save(e.ctx, summary.Summary{SessionID: id, Narrative: "n", UpToSeq: seq[4], Epoch: res.Epoch}); err != nil {
		e.t.Fatal(err)
	}
	check("3 unfolded, n 10", 10, seq[5:])
	check("3 unfolded, n 2", 2, seq[6:])
	if _, _, err := ar.SnapshotAfterSummary(e.ctx, id, e.user("bob"), 3); !errors.Is(err, store.ErrNotOwner) {
		e.t.Fatalf("as another user: %v, want ErrNotOwner", err)
	}
}
