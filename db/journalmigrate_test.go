package db_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

// TestMigration16MovesJournalRecords: a journal stored as one JSON value
// (version 15) reads back the same after migration 16 moved its records
// to rows; its records' counts, computed by the migration, roll out of
// the retention exactly as Journal.Add rolls them; and down to 15 puts
// the records back into the JSON value, as Journal.Add left them.
func TestMigration16MovesJournalRecords(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.MigrateTo(ctx, d, 15); err != nil {
		t.Fatal(err)
	}
	// Only the journal's statements run at versions 15 and 16: the
	// session is created, its epoch read, by plain SQL of those versions.
	ms := db.NewMessageStore(d)
	if err := ms.Create(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	var res struct{ Epoch int64 }
	if err := d.GetContext(ctx, &res.Epoch, `SELECT epoch FROM strata_sessions WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	rec := func(i int) store.JournalRecord {
		r := store.JournalRecord{At: at.Add(time.Duration(i) * 2 * time.Hour), Kind: "fold", Outcome: []string{"saved", "failed", "abandoned", "stale"}[i%4],
			Calls: i % 3, InputTokens: 10 * i, OutputTokens: i, EstimatedInputTokens: i % 2, EstimatedOutputTokens: 3 * (i % 2),
			FromSeq: int64(i), ToSeq: int64(i + 1), Changes: []store.FactChange{{Op: "added", Key: fmt.Sprint("k", i), To: "v"}}}
		if i%5 == 0 {
			r.Fallback = "budget"
		}
		if i%7 == 0 {
			r.Kind, r.Outcome = "forget", "done"
		}
		return r
	}
	const keep = 6
	want := store.Journal{Epoch: res.Epoch}
	for i := 1; i <= 15; i++ {
		want.Add(rec(i), keep)
	}
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `INSERT INTO strata_journals (session_id, epoch, journal) VALUES ('s', $1, $2::jsonb)`, res.Epoch, string(raw)); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got, err := ms.ReadJournal(ctx, "s", res.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s: the journal reads\n%s\nwant\n%s", when, g, w)
		}
	}
	if err := db.MigrateTo(ctx, d, 16); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := d.GetContext(ctx, &rows, `SELECT count(*) FROM strata_journal_records WHERE session_id = 's'`); err != nil || rows != keep {
		t.Fatalf("%d record rows (%v), want %d", rows, err, keep)
	}
	check("after migration 16")
	for i := 16; i <= 30; i++ { // rolls every migrated record out
		r := rec(i)
		want.Add(r, keep)
		if err := ms.EditJournal(store.WithJournalRecord(ctx, r, keep), "s", res.Epoch, func(j *store.Journal) { j.Add(r, keep) }); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint("after the append of record ", i))
	}
	if err := db.MigrateTo(ctx, d, 15); err != nil {
		t.Fatal(err)
	}
	var back []byte
	if err := d.GetContext(ctx, &back, `SELECT journal FROM strata_journals WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	var got store.Journal
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("down to 15: the JSON journal is\n%s\nwant\n%s", g, w)
	}
}
