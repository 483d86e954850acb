package db_test

import (
	"slices"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// A database at version 10, whose seqs come from one global sequence,
// migrates to per-session counters (version 11) without renumbering
// anything: every seq and every summary cursor stays, and a session's
// next append gets its greatest seq + 1. Where messages after the newest
// one held may have been removed (an erasure, a deleted id), the next seq
// is above every number the global sequence gave, so none is reused. The
// way back to version 10 moves the global sequence past every counter.
func TestMigration11KeepsSeqsAndCursors(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.MigrateTo(ctx, d, 10); err != nil {
		t.Fatal(err)
	}
	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	// Appended as version 10 holds strata_append (this build's Append reads
	// result columns of a later version).
	appendV10 := func(session, owner string, msgs ...store.Message) store.AppendResult {
		t.Helper()
		ensureSession(t, ctx, ms, session, owner)
		res, err := db.AppendAsOlderBuild(ctx, d, session, owner, msgs...)
		if err != nil {
			t.Fatalf("append to %s: %v", session, err)
		}
		return res
	}
	// Interleaved: a's seqs have gaps where b's messages went.
	appendV10("a", "alice", user("a1"), user("a2"), user("a3"))
	appendV10("b", "bob", user("b1"), user("b2"))
	appendV10("a", "alice", user("a4"), user("a5"))
	before := map[string][]int64{"a": seqsOf(allMessages(t, ctx, ms, "a", "alice")), "b": seqsOf(allMessages(t, ctx, ms, "b", "bob"))}
	// The session's epoch, read as version 10 holds it (this build's load
	// calls a function of a later version).
	var ta struct{ Epoch int64 }
	if err := d.GetContext(ctx, &ta.Epoch, `SELECT epoch FROM strata_sessions WHERE session_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	cursor := before["a"][3]
	// Written as version 10 holds it (the summary store of this build
	// saves through a function of a later version).
	if _, err := d.ExecContext(ctx, `INSERT INTO strata_summaries (session_id, epoch, narrative, up_to_seq) VALUES ('a', $1, 'folded', $2)`, ta.Epoch, cursor); err != nil {
		t.Fatal(err)
	}
	// c's newest message is erased; d is deleted.
	cres := appendV10("c", "carol", user("c1"), user("c2"))
	if err := ms.Forget(ctx, "c", "carol", []int64{cres.LastSeq}, func(*summary.Summary, int64, []store.Message) *summary.Summary { return nil }); err != nil {
		t.Fatal(err)
	}
	dres := appendV10("d", "dave", user("d1"))
	// Deleted as version 10 deletes: this build's Delete also clears a
	// table of a later version (strata_journals).
	if _, err := d.ExecContext(ctx, `
WITH m AS (DELETE FROM strata_messages WHERE session_id = 'd')
UPDATE strata_sessions SET user_id = NULL, deleted_at = now(), message_count = 0,
       first_user_message = NULL, participants = '{}'
 WHERE session_id = 'd'`); err != nil {
		t.Fatal(err)
	}
	greatest := dres.LastSeq

	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	for id, owner := range map[string]string{"a": "alice", "b": "bob"} {
		if got := seqsOf(allMessages(t, ctx, ms, id, owner)); !slices.Equal(got, before[id]) {
			t.Fatalf("session %s: seqs %v after the migration, want %v", id, got, before[id])
		}
	}
	sm, err := sums.Get(ctx, "a")
	if err != nil || sm == nil || sm.UpToSeq != cursor || sm.Epoch != ta.Epoch {
		t.Fatalf("summary after the migration = %+v, %v; want the cursor %d", sm, err, cursor)
	}
	for id, owner := range map[string]string{"a": "alice", "b": "bob"} {
		want := before[id][len(before[id])-1] + 1
		if res := mustAppend(t, ctx, ms, id, owner, user("next")); res.LastSeq != want {
			t.Errorf("session %s: next append got seq %d, want %d (its greatest + 1)", id, res.LastSeq, want)
		}
	}
	// b's writes no longer show in a's seqs.
	mustAppend(t, ctx, ms, "b", "bob", user("b again"))
	if res := mustAppend(t, ctx, ms, "a", "alice", user("a again")); res.LastSeq != before["a"][len(before["a"])-1]+2 {
		t.Errorf("a's seqs after b's append: %d, want dense", res.LastSeq)
	}
	if res := mustAppend(t, ctx, ms, "c", "carol", user("c3")); res.LastSeq <= cres.LastSeq {
		t.Errorf("after an erasure: seq %d reuses up to %d", res.LastSeq, cres.LastSeq)
	}
	if err := ms.Create(ctx, "d", "erin"); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, ctx, ms, "d", "erin", user("d again")); res.LastSeq <= greatest {
		t.Errorf("re-created id: seq %d, want above %d (the deleted session's)", res.LastSeq, greatest)
	}

	// Back to version 10: the global sequence goes on above every counter.
	top := mustAppend(t, ctx, ms, "a", "alice", user("top")).LastSeq
	if err := db.MigrateTo(ctx, d, 10); err != nil {
		t.Fatal(err)
	}
	if res := appendV10("b", "bob", user("after down")); res.LastSeq <= top {
		t.Errorf("after the down migration: seq %d, want above %d", res.LastSeq, top)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
}

func seqsOf(msgs []store.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}
