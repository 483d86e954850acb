package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
)

// BenchmarkJournalAppend measures one fold record appended to a
// session's journal holding already 0, 50 or 200 records (the manager's
// retention) of LoCoMo-sized fact changes, as the manager appends it
// (via=record: store.WithJournalRecord, one row inserted, the records
// past the retention deleted, the header updated, what a fold's save
// does in its statement) and as a general edit (via=edit: the records
// read, edited and the changed ones written, what an erasure's scrub
// does). Besides wall time it reports the CPU time per append of this
// process and, when the server runs on this machine, of PostgreSQL.
func BenchmarkJournalAppend(b *testing.B) {
	for _, via := range []string{"record", "edit"} {
		for _, held := range []int{0, 50, 200} {
			b.Run(fmt.Sprintf("via=%s/records=%d", via, held), func(b *testing.B) { benchJournalAppend(b, via == "record", held) })
		}
	}
}

func benchJournalAppend(b *testing.B, asRecord bool, held int) {
	f := newFixture(b)
	ctx := context.Background()
	mustAppend(b, ctx, f.messages, "s", "bench", user("q"), assistant("a"))
	tail, err := f.messages.Tail(ctx, "s", "bench", 1)
	if err != nil {
		b.Fatal(err)
	}
	rec := func(i int) store.JournalRecord {
		r := store.JournalRecord{Kind: "fold", Trigger: "overflow", Outcome: "saved", At: time.Now(), FromSeq: int64(i * 20), ToSeq: int64(i*20 + 20),
			Summarizer: "extractive", Calls: 1, Duration: time.Millisecond}
		for k := range 6 {
			r.Changes = append(r.Changes, store.FactChange{Key: fmt.Sprintf("event_date_%d", k), To: fmt.Sprintf("Caroline went to the LGBTQ support group on %d May 2023", k)})
		}
		return r
	}
	for i := range held {
		r := rec(i)
		if err := f.messages.EditJournal(store.WithJournalRecord(ctx, r, 200), "s", tail.Epoch, func(j *store.Journal) { j.Add(r, 200) }); err != nil {
			b.Fatal(err)
		}
	}
	i := held
	c0 := processCPU()
	p0, pgOK := serverCPU(f.schema.URL)
	for b.Loop() {
		r := rec(i)
		actx := ctx
		if asRecord {
			actx = store.WithJournalRecord(ctx, r, 200)
		}
		if err := f.messages.EditJournal(actx, "s", tail.Epoch, func(j *store.Journal) { j.Add(r, 200) }); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64((processCPU()-c0).Microseconds())/float64(b.N), "go-cpu-µs/op")
	if p1, ok := serverCPU(f.schema.URL); ok && pgOK {
		b.ReportMetric(float64((p1-p0).Microseconds())/float64(b.N), "pg-cpu-µs/op")
	}
}
