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

func saveSummary(t testing.TB, ctx context.Context, f *fixture, session string, upTo int64, nFacts int) {
	t.Helper()
	err := f.sums.Save(ctx, summary.Summary{SessionID: session, Narrative: "narrative of " + session, Facts: makeFacts(nFacts, session), UpToSeq: upTo})
	if err != nil {
		t.Fatalf("Save(%q): %v", session, err)
	}
}

func equalFacts(a, b []summary.Fact) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Category != b[i].Category || !a[i].ExtractedAt.Equal(b[i].ExtractedAt) {
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
	facts[0] = summary.Fact{Key: "order_id", Value: "#1234", Category: summary.Entity}
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
		Title:     "Order #1234 ✈️",
	}
	before := time.Now()
	if err := f.sums.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if got.SessionID != want.SessionID || got.Narrative != want.Narrative || got.UpToSeq != want.UpToSeq || got.Title != want.Title {
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
	saveSummary(t, ctx, f, "s", r1.LastSeq, 10)
	first, _ := f.sums.Get(ctx, "s")
	time.Sleep(10 * time.Millisecond)

	r2 := mustAppend(t, ctx, f.messages, "s", "alice", user("q2"), assistant("a2"))
	saveSummary(t, ctx, f, "s", r2.LastSeq, 100)
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

	// The same cursor may be saved again (a re-summarization), and an
	// empty title keeps the stored one.
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Narrative: "titled", UpToSeq: r2.LastSeq, Title: "Trip"}); err != nil {
		t.Fatal(err)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Narrative: "again", UpToSeq: r2.LastSeq}); err != nil {
		t.Fatal(err)
	}
	third, _ := f.sums.Get(ctx, "s")
	if third.Narrative != "again" || third.Title != "Trip" || third.Version != 4 || len(third.Facts) != 0 {
		t.Errorf("third = %+v", third)
	}
}

func TestSummaryLowerCursorIgnored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	r1 := mustAppend(t, ctx, f.messages, "s", "alice", user("q1"), assistant("a1"))
	r2 := mustAppend(t, ctx, f.messages, "s", "alice", user("q2"), assistant("a2"))
	saveSummary(t, ctx, f, "s", r2.LastSeq, 3)
	before, _ := f.sums.Get(ctx, "s")
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Narrative: "stale", UpToSeq: r1.LastSeq}); err != nil {
		t.Fatalf("a stale save must be ignored without error, got %v", err)
	}
	after, _ := f.sums.Get(ctx, "s")
	if after.Narrative != before.Narrative || after.UpToSeq != r2.LastSeq || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("stale save changed the summary: %+v → %+v", before, after)
	}
}

func TestSummarySaveAfterDeleteWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	// A fold read the session and is summarizing; the session is deleted.
	if err := f.messages.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	saveSummary(t, ctx, f, "s", res.LastSeq, 5)
	if sm, _ := f.sums.Get(ctx, "s"); sm != nil {
		t.Fatalf("summary written for a deleted session: %+v", sm)
	}
	// The session comes back under the same id: the old fold's cursor
	// still matches nothing.
	mustAppend(t, ctx, f.messages, "s", "alice", user("new q"), assistant("new a"))
	saveSummary(t, ctx, f, "s", res.LastSeq, 5)
	if sm, _ := f.sums.Get(ctx, "s"); sm != nil {
		t.Fatalf("stale summary attached to the re-created session: %+v", sm)
	}
	// Never-seen sessions get nothing either.
	saveSummary(t, ctx, f, "ghost", 0, 1)
	if n := countRows(t, ctx, f.d, "conversation_summaries", "ghost"); n != 0 {
		t.Errorf("summary stored for an unknown session")
	}
	if !strings.Contains(f.logs.String(), "summary not saved") {
		t.Errorf("skipped saves are not logged at debug level: %s", f.logs.String())
	}
}

// TestSummarySaveRacesWithDelete runs a save and a delete of the same
// session concurrently, many times: afterwards the session is gone and so
// must be its summary, whichever ran first.
func TestSummarySaveRacesWithDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for i := range 40 {
		session := fmt.Sprint("s", i)
		res := mustAppend(t, ctx, f.messages, session, "alice", user("q"), assistant("a"))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := f.sums.Save(ctx, summary.Summary{SessionID: session, Narrative: "n", UpToSeq: res.LastSeq}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			}
			if err := f.messages.Delete(ctx, session); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if n := countRows(t, ctx, f.d, "conversation_summaries", session); n != 0 {
			t.Fatalf("iteration %d: orphan summary after delete", i)
		}
	}
}

func TestSummaryCursorNeverRegressesUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var seqs []int64
	for i := range 10 {
		seqs = append(seqs, mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant("a")).LastSeq)
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
			if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Narrative: fmt.Sprint("through ", upTo), UpToSeq: upTo}); err != nil {
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
		saveSummary(t, ctx, f, "s", res.LastSeq, 2)
		if _, err := f.d.ExecContext(ctx, `UPDATE conversation_summaries SET facts_json = $1::jsonb WHERE session_id = 's'`, c.json); err != nil {
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
	if _, err := f.d.ExecContext(ctx, `UPDATE conversation_summaries SET facts_json = '[{"key":"k","value":"v","category":"bogus","extractedAt":"yesterday"}]' WHERE session_id = 's'`); err != nil {
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
	saveSummary(t, ctx, f, "s", res.LastSeq, 4)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.sums.Get(cancelled, "s"); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "db: get summary") {
		t.Errorf("Get with a cancelled context: %v", err)
	}
	err := f.sums.Save(cancelled, summary.Summary{SessionID: "s", Narrative: "lost", UpToSeq: res.LastSeq})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "db: save summary") {
		t.Errorf("Save with a cancelled context: %v", err)
	}
	if err := f.sums.Delete(cancelled, "s"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v", err)
	}

	// Nothing of the failed calls reached the stored data.
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil || got.Narrative != "narrative of s" || len(got.Facts) != 4 || got.Version != 1 {
		t.Errorf("stored summary damaged: %+v, %v", got, err)
	}
	if _, err := f.messages.Tail(cancelled, "s", 5); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "db: tail") {
		t.Errorf("Tail with a cancelled context: %v", err)
	}
	if _, err := f.messages.Append(cancelled, "s", "alice", user("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: %v", err)
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
		SessionID: "s", Narrative: "nul\x00here", UpToSeq: res.LastSeq,
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
