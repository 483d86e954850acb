package memorytest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// RunSummaries runs the conformance suite of the summary part of the
// store contract — Summary, SaveSummary, Snapshot, SnapshotAfterSummary
// and the fold lease (TryLockFold) — against the stores newStore returns
// (one call per subtest). It checks:
//
//   - SaveSummary: a summary of the session's epoch is stored and read
//     back whole (provenance, Forgotten, ForgetKey), Version counts the
//     saves and CreatedAt stays; a lower cursor is refused with ErrStale;
//     a summary of another epoch, or of a deleted session, with
//     ErrSessionGone; Delete removes the summary with the session;
//   - the fold lease: a held lease refuses a second holder and not another
//     session; release frees it and is safe to call twice; its save (when
//     not nil) stores the summary, as Summary then reads it, and frees the
//     lease at once; release after save is harmless;
//   - Snapshot returns Tail's result and the stored summary, with Tail's
//     errors (ErrNotFound, ErrNotOwner);
//   - SnapshotAfterSummary returns the newest n of the messages after the
//     summary's cursor (all messages without a summary), with the
//     session's whole count and epoch.
func RunSummaries(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		run  func(e *env)
	}{
		{"SaveSummary", testSaveSummary},
		{"FoldLease", testFoldLease},
		{"Snapshot", testSnapshot},
		{"SnapshotAfterSummary", testSnapshotAfterSummary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&env{t: t, ctx: t.Context(), s: newStore(t), token: token(t)})
		})
	}
}

func testSaveSummary(e *env) {
	id, alice, res, seq := e.summarized("save", 4)
	if got, err := e.s.Summary(e.ctx, id); err != nil || got != nil {
		e.t.Fatalf("Summary before any save: %+v, %v", got, err)
	}
	want := summary.Summary{SessionID: id, Narrative: "they met.", UpToSeq: seq[1], Epoch: res.Epoch,
		Facts:           []summary.Fact{{Key: "k", Value: "v", Category: summary.General, Sources: []int64{seq[0]}}},
		SentenceSources: []summary.SentenceSource{{Digest: summary.SentenceDigest("they met."), Seqs: []int64{seq[1]}}},
		Forgotten:       []summary.Forgotten{{Key: "gone", Digest: strings.Repeat("ab", 16), Words: 1, Seq: seq[1]}},
		ForgetKey:       []byte("0123456789abcdef0123456789abcdef")}
	if err := e.s.SaveSummary(e.ctx, want); err != nil {
		e.t.Fatalf("SaveSummary: %v", err)
	}
	got, err := e.s.Summary(e.ctx, id)
	if err != nil || got == nil || got.Version != 1 || got.CreatedAt.IsZero() || got.Narrative != want.Narrative ||
		got.UpToSeq != want.UpToSeq || got.Epoch != want.Epoch || len(got.Facts) != 1 || !slices.Equal(got.Facts[0].Sources, want.Facts[0].Sources) ||
		len(got.SentenceSources) != 1 || len(got.Forgotten) != 1 || got.Forgotten[0].Digest != want.Forgotten[0].Digest ||
		string(got.ForgetKey) != string(want.ForgetKey) {
		e.t.Fatalf("Summary after a save = %+v, %v; want %+v, version 1", got, err, want)
	}
	next := want
	next.UpToSeq = seq[2]
	if err := e.s.SaveSummary(e.ctx, next); err != nil {
		e.t.Fatalf("a higher cursor: %v", err)
	}
	if again, err := e.s.Summary(e.ctx, id); err != nil || again.Version != 2 || !again.CreatedAt.Equal(got.CreatedAt) || again.UpToSeq != seq[2] {
		e.t.Fatalf("second save: %+v, %v; want version 2, CreatedAt kept", again, err)
	}
	if err := e.s.SaveSummary(e.ctx, want); !errors.Is(err, store.ErrStale) {
		e.t.Fatalf("a lower cursor: %v, want ErrStale", err)
	}
	other := next
	other.Epoch = res.Epoch + 1_000_000
	if err := e.s.SaveSummary(e.ctx, other); !errors.Is(err, store.ErrSessionGone) {
		e.t.Fatalf("another epoch: %v, want ErrSessionGone", err)
	}
	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	if got, err := e.s.Summary(e.ctx, id); err != nil || got != nil {
		e.t.Fatalf("Summary after Delete: %+v, %v; want none", got, err)
	}
	if err := e.s.SaveSummary(e.ctx, next); !errors.Is(err, store.ErrSessionGone) {
		e.t.Fatalf("a deleted session: %v, want ErrSessionGone", err)
	}
}

func testFoldLease(e *env) {
	id, _, res, seq := e.summarized("lease", 4)
	other := e.id("lease-other")
	release, save, ok, err := e.s.TryLockFold(e.ctx, id, time.Minute)
	if err != nil || !ok {
		e.t.Fatalf("first TryLockFold = %v, %v", ok, err)
	}
	if _, _, ok, err := e.s.TryLockFold(e.ctx, id, time.Minute); err != nil || ok {
		e.t.Fatalf("a held lease was taken again (ok %v, err %v)", ok, err)
	}
	r2, _, ok, err := e.s.TryLockFold(e.ctx, other, time.Minute)
	if err != nil || !ok {
		e.t.Fatalf("another session's lease refused: %v, %v", ok, err)
	}
	r2()
	if save == nil {
		e.t.Logf("%T: save is nil: SaveSummary, then release", e.s)
		release()
		release() // safe twice
		r3, _, ok, err := e.s.TryLockFold(e.ctx, id, time.Minute)
		if err != nil || !ok {
			e.t.Fatalf("lease not free after release: %v, %v", ok, err)
		}
		r3()
		return
	}
	want := summary.Summary{SessionID: id, Narrative: "they met", UpToSeq: seq[1], Epoch: res.Epoch}
	if err := save(e.ctx, want); err != nil {
		e.t.Fatalf("save: %v", err)
	}
	got, err := e.s.Summary(e.ctx, id)
	if err != nil || got == nil || got.Narrative != want.Narrative || got.UpToSeq != want.UpToSeq || got.Epoch != want.Epoch {
		e.t.Fatalf("after save Summary reads %+v, %v; want %+v", got, err, want)
	}
	r4, _, ok, err := e.s.TryLockFold(e.ctx, id, time.Minute)
	if err != nil || !ok {
		e.t.Fatalf("save did not free the lease: %v, %v", ok, err)
	}
	release() // after save: harmless, and must not free r4's lease
	release()
	if _, _, ok, _ := e.s.TryLockFold(e.ctx, id, time.Minute); ok {
		e.t.Fatal("the first holder's release freed the next holder's lease")
	}
	r4()
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

func testSnapshot(e *env) {
	sr := e.s
	id, alice, res, seq := e.summarized("snapshot", 5)
	tail, sum, err := sr.Snapshot(e.ctx, id, alice, 3)
	if err != nil || sum != nil {
		e.t.Fatalf("Snapshot before any summary: %+v, %v", sum, err)
	}
	want := e.mustTail(id, alice)
	if tail.Total != want.Total || tail.Epoch != want.Epoch || !slices.Equal(seqs(tail.Messages), seqs(want.Messages)[2:]) {
		e.t.Fatalf("Snapshot tail %+v, Tail %+v", tail, want)
	}
	if err := e.s.SaveSummary(e.ctx, summary.Summary{SessionID: id, Narrative: "n", UpToSeq: seq[2], Epoch: res.Epoch}); err != nil {
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

func testSnapshotAfterSummary(e *env) {
	ar := e.s
	id, alice, res, seq := e.summarized("after-summary", 8)
	check := func(what string, n int, wantSeqs []int64) {
		e.t.Helper()
		tail, _, err := ar.SnapshotAfterSummary(e.ctx, id, alice, n)
		if err != nil || tail.Total != 8 || tail.Epoch != res.Epoch || !slices.Equal(seqs(tail.Messages), wantSeqs) {
			e.t.Fatalf("%s: SnapshotAfterSummary(%d) = %v (total %d, epoch %d), %v; want seqs %v", what, n, seqs(tail.Messages), tail.Total, tail.Epoch, err, wantSeqs)
		}
	}
	check("no summary", 3, seq[5:])
	if err := e.s.SaveSummary(e.ctx, summary.Summary{SessionID: id, Narrative: "n", UpToSeq: seq[4], Epoch: res.Epoch}); err != nil {
		e.t.Fatal(err)
	}
	check("3 unfolded, n 10", 10, seq[5:])
	check("3 unfolded, n 2", 2, seq[6:])
	if _, _, err := ar.SnapshotAfterSummary(e.ctx, id, e.user("bob"), 3); !errors.Is(err, store.ErrNotOwner) {
		e.t.Fatalf("as another user: %v, want ErrNotOwner", err)
	}
}
