package db_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

// wireCounter counts the statements a client sends PostgreSQL (Execute
// and simple Query messages) and its round trips (Sync and simple Query
// messages: each waits for the server's answer).
type wireCounter struct {
	mu                 sync.Mutex
	statements, rounds int
}

func (c *wireCounter) get() (statements, rounds int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statements, c.rounds
}

func (c *wireCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statements, c.rounds = 0, 0
}

// countingConn parses what the client writes as PostgreSQL frontend
// messages (the first one, the startup message, has no type byte).
type countingConn struct {
	net.Conn
	c       *wireCounter
	started bool
	buf     []byte
}

func (cc *countingConn) Write(p []byte) (int, error) {
	cc.buf = append(cc.buf, p...)
	for {
		if !cc.started {
			if len(cc.buf) < 4 {
				break
			}
			n := int(binary.BigEndian.Uint32(cc.buf))
			if len(cc.buf) < n {
				break
			}
			cc.buf, cc.started = cc.buf[n:], true
			continue
		}
		if len(cc.buf) < 5 {
			break
		}
		n := 1 + int(binary.BigEndian.Uint32(cc.buf[1:]))
		if len(cc.buf) < n {
			break
		}
		cc.c.mu.Lock()
		switch cc.buf[0] {
		case 'E':
			cc.c.statements++
		case 'S':
			cc.c.rounds++
		case 'Q':
			cc.c.statements++
			cc.c.rounds++
		}
		cc.c.mu.Unlock()
		cc.buf = cc.buf[n:]
	}
	return cc.Conn.Write(p)
}

// TestFoldSaveIsOneStatement: a fold's save under its lease, carrying
// its journal record as data (store.WithJournalRecord), is one statement
// on the wire — the save, the lease's release, the record's append and
// the read of the saved row's identity for the summary cache — where the
// same save with the record as an edit only is a transaction of several;
// both store the same journal and leave the summary cached. An append to
// a journal already holding the retention (200 records) is one statement
// too.
func TestFoldSaveIsOneStatement(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	var wc wireCounter
	d, err := db.Open(ctx, s.URL, db.WithDialer(func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, c: &wc}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ms := db.NewMessageStore(d)
	fold := func(session string, asData bool) (statements, rounds int) {
		t.Helper()
		mustAppend(t, ctx, ms, session, "alice", user("q"), assistant("a"))
		tail, err := ms.Tail(ctx, session, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			r := store.JournalRecord{Kind: "fold", Outcome: "failed", At: time.Now(), FromSeq: int64(i)}
			if err := ms.EditJournal(store.WithJournalRecord(ctx, r, 200), session, tail.Epoch, func(j *store.Journal) { j.Add(r, 200) }); err != nil {
				t.Fatal(err)
			}
		}
		_, save, ok, err := ms.TryLockFold(ctx, session, time.Minute)
		if err != nil || !ok {
			t.Fatalf("TryLockFold: %v %v", ok, err)
		}
		rec := store.JournalRecord{Kind: "fold", Outcome: "saved", At: time.Now(), InputTokens: 7, Calls: 1,
			Changes: []store.FactChange{{Op: "added", Key: "city", To: "Lisbon"}}}
		applied := false
		jctx := store.WithJournalEdit(ctx, func(j *store.Journal) { applied = true; j.Add(rec, 200) })
		if asData {
			jctx = store.WithJournalRecord(jctx, rec, 200)
		}
		sm := randomSummary(rand.New(rand.NewPCG(1, 2)), session, tail.Epoch, 2)
		wc.reset()
		if err := save(jctx, sm); err != nil {
			t.Fatal(err)
		}
		statements, rounds = wc.get()
		if !applied {
			t.Fatalf("as data %v: the save did not say it applied the record", asData)
		}
		j, err := ms.ReadJournal(ctx, session, tail.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.Records) != 200 || j.Totals.Records != 201 || j.Rolled.Records != 1 || j.Totals.Folds != 1 || j.Totals.InputTokens != 7 ||
			j.Records[199].N != 201 || j.Records[199].Changes[0].To != "Lisbon" {
			t.Fatalf("as data %v: journal after the save: %d records, totals %+v, rolled %+v", asData, len(j.Records), j.Totals, j.Rolled)
		}
		return statements, rounds
	}
	es, er := fold("edit", false)
	ds, dr := fold("data", true)
	t.Logf("a fold's save with its record: as an edit %d statements in %d round trips; as data %d in %d", es, er, ds, dr)
	if ds != 1 {
		t.Fatalf("a fold's save with its record as data took %d statements, want 1", ds)
	}
	if es <= ds || er <= dr {
		t.Fatalf("as an edit %d statements in %d round trips, as data %d in %d", es, er, ds, dr)
	}
	// One append beyond the retention is one statement as well.
	tail, err := ms.Tail(ctx, "data", "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	r := store.JournalRecord{Kind: "fold", Outcome: "stale", At: time.Now()}
	wc.reset()
	if err := ms.EditJournal(store.WithJournalRecord(ctx, r, 200), "data", tail.Epoch, func(j *store.Journal) { j.Add(r, 200) }); err != nil {
		t.Fatal(err)
	}
	if st, _ := wc.get(); st != 1 {
		t.Fatalf("a journal append took %d statements, want 1", st)
	}
}

// TestJournalScrubRewritesOnlyAffectedRows: an edit that scrubs one
// record (as an erasure does) and appends another rewrites that record's
// row and inserts the new one; every other record's row is left as it was
// (its row version, xmin, unchanged); what reads back is the edited
// journal.
func TestJournalScrubRewritesOnlyAffectedRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	for i := range 10 {
		r := store.JournalRecord{Kind: "fold", Outcome: "saved", At: time.Now(), Changes: []store.FactChange{{Op: "added", Key: "k", To: fmt.Sprint("v", i)}}}
		if err := f.messages.EditJournal(store.WithJournalRecord(ctx, r, 200), "s", res.Epoch, func(j *store.Journal) { j.Add(r, 200) }); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() map[int64]string {
		t.Helper()
		var rows []struct {
			N    int64  `db:"n"`
			Xmin string `db:"xmin"`
		}
		if err := f.d.SelectContext(ctx, &rows, `SELECT n, xmin::text AS xmin FROM strata_journal_records WHERE session_id = 's'`); err != nil {
			t.Fatal(err)
		}
		m := map[int64]string{}
		for _, r := range rows {
			m[r.N] = r.Xmin
		}
		return m
	}
	before := versions()
	err := f.messages.EditJournal(ctx, "s", res.Epoch, func(j *store.Journal) {
		j.Records[3].Changes, j.Records[3].Scrubbed = nil, true
		j.Add(store.JournalRecord{Kind: "forget", Outcome: "done", At: time.Now(), Seqs: []int64{1}}, 200)
	})
	if err != nil {
		t.Fatal(err)
	}
	after := versions()
	if len(after) != 11 {
		t.Fatalf("%d record rows after the scrub, want 11", len(after))
	}
	for n := int64(1); n <= 10; n++ {
		if changed := after[n] != before[n]; changed != (n == 4) {
			t.Errorf("record %d: row rewritten %v, want %v", n, changed, n == 4)
		}
	}
	j, err := f.messages.ReadJournal(ctx, "s", res.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Records) != 11 || !j.Records[3].Scrubbed || j.Records[3].Changes != nil || j.Records[4].Changes[0].To != "v4" ||
		j.Records[10].Kind != "forget" || j.Totals.Records != 11 {
		t.Fatalf("after the scrub: %+v", j)
	}
}

// TestJournalAppendWritesHeaderOnce: a journal append (migration 22)
// writes the header row of a session that has one once — one UPDATE, no
// insert, counted by PostgreSQL for the append's own transaction — and
// inserts it for a session that has none. Writers racing to append a
// session's first records all land: every record is numbered once, in
// one header, whose totals count them all.
func TestJournalAppendWritesHeaderOnce(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	d := dbtest.Open(t, s.URL)
	ms := db.NewMessageStore(d)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 22))
	appendSQL := `SELECT strata_journal_append($1, $2, '{"kind":"fold"}'::jsonb, '{"records":1}'::jsonb, '2026-11-28', 0, 200, true)`
	writes := func(session string, epoch int64) (ins, upd int64) {
		t.Helper()
		tx, err := d.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		// The view also counts earlier transactions of the connection
		// whose counts the server has not yet published: the append's
		// are the difference.
		counts := func() (ins, upd int64) {
			if err := tx.QueryRowxContext(ctx, `SELECT COALESCE(sum(n_tup_ins), 0), COALESCE(sum(n_tup_upd), 0)
				FROM pg_stat_xact_user_tables WHERE relname = 'strata_journals' AND schemaname = current_schema()`).Scan(&ins, &upd); err != nil {
				t.Fatal(err)
			}
			return ins, upd
		}
		ins0, upd0 := counts()
		var n int64
		if err := tx.QueryRowxContext(ctx, appendSQL, session, epoch).Scan(&n); err != nil {
			t.Fatal(err)
		}
		ins, upd = counts()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return ins - ins0, upd - upd0
	}
	res := mustAppend(t, ctx, ms, "once", "alice", user("q"), assistant("a"))
	if ins, upd := writes("once", res.Epoch); ins != 1 || upd != 1 {
		t.Fatalf("first append: %d inserts and %d updates of the header, want 1 and 1", ins, upd)
	}
	for range 1 + rng.IntN(5) {
		if ins, upd := writes("once", res.Epoch); ins != 0 || upd != 1 {
			t.Fatalf("later append: %d inserts and %d updates of the header, want 0 and 1", ins, upd)
		}
	}

	writers, each := 2+rng.IntN(6), 1+rng.IntN(8)
	res = mustAppend(t, ctx, ms, "race", "alice", user("q"), assistant("a"))
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := store.JournalRecord{Kind: "fold", Outcome: "saved", At: time.Now(), FromSeq: int64(w*100 + i)}
				if err := ms.EditJournal(store.WithJournalRecord(ctx, r, 200), "race", res.Epoch, nil); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	j, err := ms.ReadJournal(ctx, "race", res.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	want := writers * each
	if len(j.Records) != want || j.Totals.Records != int64(want) || j.Totals.Folds != int64(want) {
		t.Fatalf("%d writers × %d appends: %d records, totals %+v", writers, each, len(j.Records), j.Totals)
	}
	seen := map[int64]bool{}
	for _, r := range j.Records {
		if r.N < 1 || r.N > int64(want) || seen[r.N] {
			t.Fatalf("record number %d repeated or out of 1..%d", r.N, want)
		}
		seen[r.N] = true
	}
}
