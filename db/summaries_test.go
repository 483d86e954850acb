package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// makeFacts returns n facts cycling through every category.
func makeFacts(n int, tag string) []summary.Fact {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	facts := make([]summary.Fact, n)
	for i := range facts {
		facts[i] = summary.Fact{
			Key:         fmt.Sprintf("key_%03d", i),
			Value:       fmt.Sprintf("%s value %d", tag, i),
			Category:    summary.Categories[i%len(summary.Categories)],
			ExtractedAt: at.Add(time.Duration(i) * time.Second),
		}
	}
	return facts
}

func saveSummary(t testing.TB, ctx context.Context, f *fixture, session string, epoch, upTo int64, nFacts int) {
	t.Helper()
	err := f.sums.Save(ctx, summary.Summary{SessionID: session, Epoch: epoch, Narrative: "narrative of " + session, Facts: makeFacts(nFacts, session), UpToSeq: upTo})
	if err != nil {
		t.Fatalf("Save(%q): %v", session, err)
	}
}

func equalFacts(a, b []summary.Fact) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Key != y.Key || x.Value != y.Value || x.Category != y.Category || !x.ExtractedAt.Equal(y.ExtractedAt) ||
			x.FirstSeq != y.FirstSeq || x.LastSeq != y.LastSeq || x.Mentions != y.Mentions || x.Pinned != y.Pinned || x.Previous != y.Previous {
			return false
		}
	}
	return true
}

func TestSummaryRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))

	facts := makeFacts(100, "bulk")
	// The ledger's provenance, pin, superseded value and whether the user
	// stated it survive the store.
	facts[0] = summary.Fact{Key: "order_id", Value: "#1234", Category: summary.Entity,
		FirstSeq: 3, LastSeq: 41, Mentions: 7, Pinned: true, Previous: "#1200", Stated: true}
	facts[1] = summary.Fact{Key: "agreed", Value: `she said "yes" and it's 'final'`, Category: summary.Decision}
	facts[2] = summary.Fact{Key: "lang", Value: "한국어 日本語 ünïcödé 🚀🎉👩‍👩‍👧", Category: summary.Condition}
	facts[3] = summary.Fact{Key: "blob", Value: strings.Repeat("0123456789", 500), Category: summary.State}
	facts[4] = summary.Fact{Key: "json", Value: `{"nested":{"list":[1,2,{"k":"v"}],"esc":"\"\\/\n"}}`, Category: summary.Numeric}
	facts[5] = summary.Fact{Key: "line\nbreak", Value: "tab\there <b>&amp;</b>", Category: summary.General}
	want := summary.Summary{
		SessionID: "s",
		Narrative: "The user asked about order #1234 — \"quoted\", 🚀, and {\"json\": true}.",
		Facts:     facts,
		UpToSeq:   res.LastSeq,
		Epoch:     res.Epoch,
	}
	before := time.Now()
	if err := f.sums.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if got.SessionID != want.SessionID || got.Narrative != want.Narrative || got.UpToSeq != want.UpToSeq || got.Epoch != want.Epoch {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if !equalFacts(got.Facts, want.Facts) {
		t.Errorf("facts differ:\n got %+v\nwant %+v", got.Facts, want.Facts)
	}
	if len(got.Facts[3].Value) != 5000 {
		t.Errorf("5 000-character value came back with %d", len(got.Facts[3].Value))
	}
	seen := map[summary.Category]bool{}
	for _, fc := range got.Facts {
		seen[fc.Category] = true
	}
	if len(seen) != 6 {
		t.Errorf("categories read back: %v, want all six", seen)
	}
	if got.Version != 1 {
		t.Errorf("Version = %d, want 1", got.Version)
	}
	if d := got.CreatedAt.Sub(before); d < -time.Minute || d > time.Minute || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("timestamps created %v updated %v, want both near %v", got.CreatedAt, got.UpdatedAt, before)
	}
	if sm, err := f.sums.Get(ctx, "unknown"); sm != nil || err != nil {
		t.Errorf("Get(unknown) = %+v, %v", sm, err)
	}
}

func TestSummaryUpsertKeepsCreatedAtAndCountsVersions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	r1 := mustAppend(t, ctx, f.messages, "s", "alice", user("q1"), assistant("a1"))
	saveSummary(t, ctx, f, "s", r1.Epoch, r1.LastSeq, 10)
	first, _ := f.sums.Get(ctx, "s")
	time.Sleep(10 * time.Millisecond)

	r2 := mustAppend(t, ctx, f.messages, "s", "alice", user("q2"), assistant("a2"))
	saveSummary(t, ctx, f, "s", r2.Epoch, r2.LastSeq, 100)
	second, err := f.sums.Get(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Facts) != 100 || second.UpToSeq != r2.LastSeq || second.Version != 2 {
		t.Errorf("after upsert: %d facts, cursor %d, version %d; want 100, %d, 2", len(second.Facts), second.UpToSeq, second.Version, r2.LastSeq)
	}
	if !second.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("CreatedAt changed: %v → %v", first.CreatedAt, second.CreatedAt)
	}
	if !second.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("UpdatedAt not refreshed: %v → %v", first.UpdatedAt, second.UpdatedAt)
	}

	// The same cursor may be saved again (a re-summarization).
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: r2.Epoch, Narrative: "again", UpToSeq: r2.LastSeq}); err != nil {
		t.Fatal(err)
	}
	third, _ := f.sums.Get(ctx, "s")
	if third.Narrative != "again" || third.Version != 3 || len(third.Facts) != 0 {
		t.Errorf("third = %+v", third)
	}
}

func TestSummaryLowerCursorIsStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	r1 := mustAppend(t, ctx, f.messages, "s", "alice", user("q1"), assistant("a1"))
	r2 := mustAppend(t, ctx, f.messages, "s", "alice", user("q2"), assistant("a2"))
	saveSummary(t, ctx, f, "s", r2.Epoch, r2.LastSeq, 3)
	before, _ := f.sums.Get(ctx, "s")
	err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: r1.Epoch, Narrative: "stale", UpToSeq: r1.LastSeq})
	if !errors.Is(err, summary.ErrStale) || errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("a save below the stored cursor: %v, want ErrStale", err)
	}
	after, _ := f.sums.Get(ctx, "s")
	if after.Narrative != before.Narrative || after.UpToSeq != r2.LastSeq || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("stale save changed the summary: %+v → %+v", before, after)
	}
}

// TestSummarySaveForDeletedSessionIsRefused: a fold that read the session
// before it was deleted (on any replica) gets ErrSessionGone and writes
// nothing, also once the id has been re-created; a save for the new
// incarnation's epoch replaces whatever an older epoch left.
func TestSummarySaveForDeletedSessionIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	late := summary.Summary{SessionID: "s", Epoch: res.Epoch, Narrative: "late", UpToSeq: res.LastSeq}
	if err := f.sums.Save(ctx, late); !errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("save for a deleted session: %v, want ErrSessionGone", err)
	}
	if n := countRows(t, ctx, f.d, "strata_summaries", "s"); n != 0 {
		t.Fatal("summary written for a deleted session")
	}
	// The session comes back under the same id: the old fold's epoch
	// does not match it.
	again := mustAppend(t, ctx, f.messages, "s", "alice", user("new q"), assistant("new a"))
	if err := f.sums.Save(ctx, late); !errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("save of the old incarnation after re-creation: %v, want ErrSessionGone", err)
	}
	if sm, _ := f.sums.Get(ctx, "s"); sm != nil {
		t.Fatalf("stale summary attached to the re-created session: %+v", sm)
	}
	// A summary of the new incarnation is saved, even over one of another
	// epoch (left here by hand, as a foreign store's summary would be),
	// and starts its version afresh.
	if _, err := f.d.ExecContext(ctx, `INSERT INTO strata_summaries (session_id, epoch, narrative, up_to_seq, version) VALUES ('s', $1, 'older', $2, 7)`, res.Epoch, again.LastSeq+100); err != nil {
		t.Fatal(err)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: again.Epoch, Narrative: "fresh", UpToSeq: again.LastSeq}); err != nil {
		t.Fatalf("save for the current epoch: %v", err)
	}
	sm, err := f.sums.Get(ctx, "s")
	if err != nil || sm == nil || sm.Narrative != "fresh" || sm.Epoch != again.Epoch || sm.Version != 1 || sm.UpToSeq != again.LastSeq {
		t.Errorf("summary of the new incarnation = %+v, %v", sm, err)
	}
	// An epoch the session never had is refused too.
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: again.Epoch + 1000, Narrative: "x", UpToSeq: again.LastSeq}); !errors.Is(err, summary.ErrSessionGone) {
		t.Errorf("save with a foreign epoch: %v, want ErrSessionGone", err)
	}
}

// TestSummaryStoreBesideForeignMessageStore: sessions this database's
// message store does not know (another MessageStore keeps them) get their
// summaries saved and read back, with the stale and epoch rules.
func TestSummaryStoreBesideForeignMessageStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	foreign := memory.NewInMemoryStore()
	res := mustAppend(t, ctx, foreign, "elsewhere", "alice", user("q"), assistant("a"))
	sm := summary.Summary{SessionID: "elsewhere", Epoch: res.Epoch, Narrative: "kept", UpToSeq: res.LastSeq,
		Facts: []summary.Fact{{Key: "k", Value: "v", Category: summary.Entity}}}
	if err := f.sums.Save(ctx, sm); err != nil {
		t.Fatalf("Save for a foreign store's session: %v", err)
	}
	got, err := f.sums.Get(ctx, "elsewhere")
	if err != nil || got == nil || got.Narrative != "kept" || got.Epoch != res.Epoch || got.UpToSeq != res.LastSeq || len(got.Facts) != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "elsewhere", Epoch: res.Epoch, Narrative: "older", UpToSeq: res.LastSeq - 1}); !errors.Is(err, summary.ErrStale) {
		t.Errorf("lower cursor: %v, want ErrStale", err)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "elsewhere", Epoch: res.Epoch + 1, Narrative: "successor", UpToSeq: 1}); err != nil {
		t.Errorf("other epoch: %v, want it to replace", err)
	}
	if got, _ := f.sums.Get(ctx, "elsewhere"); got == nil || got.Narrative != "successor" || got.Version != 1 {
		t.Errorf("after an epoch change: %+v", got)
	}
	if err := f.sums.Delete(ctx, "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if got, err := f.sums.Get(ctx, "elsewhere"); got != nil || err != nil {
		t.Errorf("after Delete: %+v, %v", got, err)
	}
	if err := f.sums.Save(ctx, summary.Summary{Narrative: "no id"}); !errors.Is(err, summary.ErrNoSessionID) {
		t.Errorf("Save without a session id: %v, want ErrNoSessionID", err)
	}
}

// TestSummarySaveRacesWithDelete runs a save and a delete of the same
// session concurrently, many times: afterwards the session is gone and so
// must be its summary, whichever ran first, and a refused save says
// ErrSessionGone.
func TestSummarySaveRacesWithDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var saved, refused int
	for i := range 60 {
		session := fmt.Sprint("s", i)
		res := mustAppend(t, ctx, f.messages, session, "alice", user("q"), assistant("a"))
		var wg sync.WaitGroup
		var saveErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			saveErr = f.sums.Save(ctx, summary.Summary{SessionID: session, Epoch: res.Epoch, Narrative: "n", UpToSeq: res.LastSeq})
		}()
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			}
			if err := f.messages.Delete(ctx, session, "alice"); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		switch {
		case saveErr == nil:
			saved++
		case errors.Is(saveErr, summary.ErrSessionGone):
			refused++
		default:
			t.Fatalf("iteration %d: save: %v", i, saveErr)
		}
		if n := countRows(t, ctx, f.d, "strata_summaries", session); n != 0 {
			t.Fatalf("iteration %d: orphan summary after delete", i)
		}
	}
	t.Logf("saves before the delete %d, refused after it %d", saved, refused)
}

// TestSummarySaveWaitsForDeleteInFlight holds a delete's transaction open
// (its row lock taken) while a save of the same session starts: the save
// must wait for it and, once it commits, see the tombstone rather than the
// live session of its snapshot.
func TestSummarySaveWaitsForDeleteInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	tx, err := f.d.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	// What MessageStore.Delete does, held open half-way.
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM strata_sessions WHERE session_id = 's' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `WITH m AS (DELETE FROM strata_messages WHERE session_id = 's')
		UPDATE strata_sessions SET user_id = NULL, deleted_at = now(), message_count = 0, first_user_message = NULL WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, Narrative: "late", UpToSeq: res.LastSeq})
	}()
	waitForLockWait(t, ctx, f.schema.Name)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, summary.ErrSessionGone) {
			t.Fatalf("save racing a delete: %v, want ErrSessionGone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the save did not return after the delete committed")
	}
	if n := countRows(t, ctx, f.d, "strata_summaries", "s"); n != 0 {
		t.Fatal("summary written for a session deleted while the save waited")
	}
}

// waitForLockWait waits until a backend of the test's pools waits for a
// row lock.
func waitForLockWait(t *testing.T, ctx context.Context, app string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := dbtest.Admin(t).GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, app); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no statement ever waited for the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSummaryCursorNeverRegressesUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var seqs []int64
	var epoch int64
	for i := range 10 {
		res := mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant("a"))
		seqs, epoch = append(seqs, res.LastSeq), res.Epoch
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			upTo := seqs[rand.IntN(len(seqs))]
			if i == 17 {
				upTo = seqs[len(seqs)-1]
			}
			err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: epoch, Narrative: fmt.Sprint("through ", upTo), UpToSeq: upTo})
			if err != nil && !errors.Is(err, summary.ErrStale) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if want := seqs[len(seqs)-1]; got.UpToSeq != want || got.Narrative != fmt.Sprint("through ", want) {
		t.Errorf("final summary %+v, want the one through %d", got, want)
	}
}

func TestSummaryCorruptFactsYieldEmptyFactsAndWarning(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	cases := []struct {
		json string
		keep int
		warn bool
	}{
		{`{"not": "an array"}`, 0, true},
		{`"just a string"`, 0, true},
		{`[1, 2, 3]`, 0, true},
		{`[{"key": 5, "value": "v"}]`, 0, true},
		{`[{"value": "no key"}]`, 0, true},
		{`[{"key": "ok", "value": "v", "category": "ENTITY"}, 7, {"key": "ok2", "value": "w"}]`, 2, true},
		{`[{"key": "k", "value": "v", "category": "bogus", "unknown": {"x": 1}, "extractedAt": "yesterday"}]`, 1, false},
		{`null`, 0, false},
		{`[]`, 0, false},
	}
	for i, c := range cases {
		saveSummary(t, ctx, f, "s", res.Epoch, res.LastSeq, 2)
		if _, err := f.d.ExecContext(ctx, `UPDATE strata_summaries SET facts_json = $1::jsonb WHERE session_id = 's'`, c.json); err != nil {
			t.Fatal(err)
		}
		logsBefore := len(f.logs.String())
		got, err := f.sums.Get(ctx, "s")
		if err != nil || got == nil {
			t.Fatalf("case %d: Get = %v, %v; a bad facts_json must not fail the load", i, got, err)
		}
		if len(got.Facts) != c.keep || got.Narrative != "narrative of s" || got.UpToSeq != res.LastSeq {
			t.Errorf("case %d (%s): %+v, want %d facts and the rest intact", i, c.json, got, c.keep)
		}
		warned := strings.Contains(f.logs.String()[logsBefore:], "level=WARN")
		if warned != c.warn {
			t.Errorf("case %d (%s): warning logged = %v, want %v", i, c.json, warned, c.warn)
		}
	}
	got, _ := f.sums.Get(ctx, "s")
	if got.Facts != nil {
		t.Errorf("Facts = %#v, want nil", got.Facts)
	}
	// The lenient case: unknown category → GENERAL, bad time → zero.
	if _, err := f.d.ExecContext(ctx, `UPDATE strata_summaries SET facts_json = '[{"key":"k","value":"v","category":"bogus","extractedAt":"yesterday"}]' WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	got, _ = f.sums.Get(ctx, "s")
	if len(got.Facts) != 1 || got.Facts[0].Category != summary.General || !got.Facts[0].ExtractedAt.IsZero() {
		t.Errorf("lenient decode = %+v", got.Facts)
	}
}

func TestSummaryErrorsAreWrappedAndDataIntact(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	saveSummary(t, ctx, f, "s", res.Epoch, res.LastSeq, 4)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for name, err := range map[string]error{
		"Get":    func() error { _, err := f.sums.Get(cancelled, "s"); return err }(),
		"Save":   f.sums.Save(cancelled, summary.Summary{SessionID: "s", Epoch: res.Epoch, Narrative: "lost", UpToSeq: res.LastSeq}),
		"Delete": f.sums.Delete(cancelled, "s"),
		"Tail":   func() error { _, err := f.messages.Tail(cancelled, "s", "alice", 5); return err }(),
		"Append": func() error { _, err := f.messages.Append(cancelled, "s", "alice", user("x")); return err }(),
	} {
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "db: ") {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
		// A call its caller cancelled is not an outage.
		if errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with a cancelled context reports an outage: %v", name, err)
		}
	}

	// Nothing of the failed calls reached the stored data.
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil || got.Narrative != "narrative of s" || len(got.Facts) != 4 || got.Version != 1 {
		t.Errorf("stored summary damaged: %+v, %v", got, err)
	}
	if n := countRows(t, ctx, f.d, "strata_messages", "s"); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

func TestSummarySanitizesText(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"))
	err := f.sums.Save(ctx, summary.Summary{
		SessionID: "s", Epoch: res.Epoch, Narrative: "nul\x00here", UpToSeq: res.LastSeq,
		Facts: []summary.Fact{{Key: "k\x00", Value: "bad \xff utf8", Category: "weird"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.sums.Get(ctx, "s")
	if got.Narrative != "nulhere" || got.Facts[0].Key != "k" || got.Facts[0].Value != "bad \uFFFD utf8" || got.Facts[0].Category != summary.General {
		t.Errorf("got %+v", got)
	}
}
