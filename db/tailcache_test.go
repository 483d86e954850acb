package db_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// contents are the contents of msgs, in order.
func contents(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// TestTailCacheSendsOnlyNewMessages: a load of a session whose tail this
// store already read receives only what was stored since — shown by
// rewriting the stored contents behind the stores' back (no stamp
// change), which the cached store does not see while another replica's
// appends are — and every change of the stored messages that is not an
// append (an erasure, a replace, a delete and re-creation, an import) makes
// the next load read the whole tail again. WithTailCache(0, 0) reads the
// stored rows every time.
func TestTailCacheSendsOnlyNewMessages(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	ms := db.NewMessageStore(d)
	other := db.NewMessageStore(dbtest.Open(t, s.URL)) // another replica
	uncached := db.NewMessageStore(d, db.WithTailCache(0, 0))
	mustAppend(t, ctx, ms, "s", "alice", user("q1"), assistant("a1"), user("q2"), assistant("a2"))
	tail := func(st *db.MessageStore, n int) []string {
		t.Helper()
		tl, err := st.Tail(ctx, "s", "alice", n)
		if err != nil {
			t.Fatal(err)
		}
		return contents(tl.Messages)
	}
	sneak := func() {
		t.Helper()
		if _, err := d.ExecContext(ctx, `UPDATE strata_messages SET content = 'sneaky-' || seq WHERE session_id = 's'`); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	want("first load", tail(ms, 10), "q1", "a1", "q2", "a2")
	sneak()
	want("second load (held)", tail(ms, 10), "q1", "a1", "q2", "a2")
	want("uncached", tail(uncached, 10), "sneaky-1", "sneaky-2", "sneaky-3", "sneaky-4")
	want("fewer messages (held)", tail(ms, 3), "a1", "q2", "a2")

	// Another replica appends: only its messages are sent.
	if _, err := other.Append(ctx, "s", "alice", user("q3"), assistant("a3")); err != nil {
		t.Fatal(err)
	}
	want("newest 3 after another replica's append", tail(ms, 3), "a2", "q3", "a3")
	// The rows sent follow the held tail, which held every message: it
	// holds all six now.
	want("all held, extended by the rows sent", tail(ms, 10), "q1", "a1", "q2", "a2", "q3", "a3")
	// More than a held tail asked for: read again.
	fresh := db.NewMessageStore(d)
	want("a fresh store's newest 3", tail(fresh, 3), "sneaky-4", "q3", "a3")
	want("more than held", tail(fresh, 10), "sneaky-1", "sneaky-2", "sneaky-3", "sneaky-4", "q3", "a3")

	// An erasure, by another replica: read again, the erased message gone.
	if _, err := d.ExecContext(ctx, `UPDATE strata_messages SET content = 'v' || seq WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	want("held again", tail(ms, 20), "q1", "a1", "q2", "a2", "q3", "a3")
	want("held again, the fresh store", tail(fresh, 20), "sneaky-1", "sneaky-2", "sneaky-3", "sneaky-4", "q3", "a3")
	if err := other.Forget(ctx, "s", "alice", []int64{2}, nil); err != nil {
		t.Fatal(err)
	}
	want("after an erasure", tail(ms, 20), "v1", "v3", "v4", "v5", "v6")

	// A replace by another replica.
	sneak()
	if _, err := other.Replace(ctx, "s", "alice", user("r1"), assistant("r2")); err != nil {
		t.Fatal(err)
	}
	want("after a replace", tail(ms, 20), "r1", "r2")

	// A delete and re-creation by another replica, seqs continuing.
	if err := other.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Tail(ctx, "s", "alice", 20); err == nil {
		t.Fatal("Tail of a deleted session succeeded")
	}
	mustAppend(t, ctx, other, "s", "alice", user("n1"))
	want("after delete and re-creation", tail(ms, 20), "n1")
	sneak()
	want("held", tail(ms, 20), "n1")
	if err := other.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	// Re-created by an import, under another owner.
	if _, err := other.Import(ctx, "s", "bob", []store.Message{user("i1"), assistant("i2")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Tail(ctx, "s", "alice", 20); err == nil || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("Tail as the former owner = %v, want a refusal", err)
	}
	if tl, err := ms.Tail(ctx, "s", "bob", 20); err != nil || !slices.Equal(contents(tl.Messages), []string{"i1", "i2"}) {
		t.Fatalf("Tail after an import = %q, %v", contents(tl.Messages), err)
	}

	// The caller may modify what it got.
	tl, err := ms.Tail(ctx, "s", "bob", 20)
	if err != nil {
		t.Fatal(err)
	}
	tl.Messages[0].Content = "mutated"
	tl.Messages[0].Metadata = map[string]string{"x": "y"}
	if tl, err := ms.Tail(ctx, "s", "bob", 20); err != nil || tl.Messages[0].Content != "i1" || tl.Messages[0].Metadata != nil {
		t.Fatalf("after the caller modified its copy: %+v, %v", tl.Messages, err)
	}
}

// TestTailCacheAfterSummaryCursor: a load of the messages after the
// summary's cursor that holds a tail read after an older cursor answers
// from it and the rows after it, and one whose cursor went back (a
// summary of a new incarnation) reads the tail again.
func TestTailCacheAfterSummaryCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var msgs []store.Message
	for i := range 8 {
		msgs = append(msgs, user(fmt.Sprint("m", i+1)))
	}
	res := mustAppend(t, ctx, f.messages, "s", "alice", msgs...)
	load := func() []string {
		t.Helper()
		tl, _, err := f.messages.SnapshotAfterSummary(ctx, "s", "alice", 4)
		if err != nil {
			t.Fatal(err)
		}
		return contents(tl.Messages)
	}
	if got := load(); !slices.Equal(got, []string{"m5", "m6", "m7", "m8"}) {
		t.Fatalf("first load: %q", got)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: 6, Narrative: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.ExecContext(ctx, `UPDATE strata_messages SET content = 'sneaky' WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	if got := load(); !slices.Equal(got, []string{"m7", "m8"}) {
		t.Fatalf("after the cursor moved to 6: %q, want the held m7 m8", got)
	}
	if _, err := f.messages.Append(ctx, "s", "alice", user("m9")); err != nil {
		t.Fatal(err)
	}
	if got := load(); !slices.Equal(got, []string{"m7", "m8", "m9"}) {
		t.Fatalf("after an append: %q", got)
	}
	tl, err := f.messages.Tail(ctx, "s", "alice", 4)
	if err != nil {
		t.Fatal(err)
	}
	// The held tail was read after no cursor (the first load) and the
	// append extended it: it answers a Tail as well.
	if got := contents(tl.Messages); !slices.Equal(got, []string{"m6", "m7", "m8", "m9"}) {
		t.Fatalf("Tail: %q, want the held m6 m7 m8 and the appended m9", got)
	}
	// A tail held after a cursor does not answer a load from before it.
	if _, err := f.d.ExecContext(ctx, `UPDATE strata_messages SET content = 'sneaky' WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	other := db.NewMessageStore(f.d)
	if _, _, err := other.SnapshotAfterSummary(ctx, "s", "alice", 4); err != nil {
		t.Fatal(err)
	}
	if tl, err = other.Tail(ctx, "s", "alice", 4); err != nil {
		t.Fatal(err)
	}
	if got := contents(tl.Messages); !slices.Equal(got, []string{"sneaky", "sneaky", "sneaky", "sneaky"}) {
		t.Fatalf("Tail below the held cursor: %q, want a read of the stored rows", got)
	}
}

// TestTailCacheBounds: the cache keeps at most the sessions and bytes
// WithTailCache allows, a tail larger than the byte bound is not kept,
// and loads are right whatever it evicts.
func TestTailCacheBounds(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := testCtx(t)
	few := db.NewMessageStore(d, db.WithTailCache(3, 1<<30))
	small := db.NewMessageStore(d, db.WithTailCache(1000, 4000))
	for i := range 10 {
		id := fmt.Sprint("s", i)
		mustAppend(t, ctx, few, id, "alice", user(strings.Repeat("x", 100*i)), assistant(id))
	}
	for round := range 2 {
		for i := range 10 {
			id := fmt.Sprint("s", i)
			for _, st := range []*db.MessageStore{few, small} {
				tl, err := st.Tail(ctx, id, "alice", 5)
				if err != nil || len(tl.Messages) != 2 || tl.Messages[1].Content != id || len(tl.Messages[0].Content) != 100*i {
					t.Fatalf("round %d, %s: %+v, %v", round, id, tl, err)
				}
			}
			if n, _ := db.TailCacheUsage(few); n > 3 {
				t.Fatalf("%d tails held, bound 3", n)
			}
			if _, b := db.TailCacheUsage(small); b > 4000 {
				t.Fatalf("%d bytes held, bound 4000", b)
			}
		}
	}
	if n, _ := db.TailCacheUsage(few); n != 3 {
		t.Errorf("%d tails held, want 3", n)
	}
	huge := db.NewMessageStore(d, db.WithTailCache(10, 500))
	if _, err := huge.Tail(ctx, "s9", "alice", 5); err != nil {
		t.Fatal(err)
	}
	if n, b := db.TailCacheUsage(huge); n != 0 || b != 0 {
		t.Errorf("a tail larger than the bound was kept: %d, %d bytes", n, b)
	}
	if n, _ := db.TailCacheUsage(db.NewMessageStore(d, db.WithTailCache(0, 0))); n != 0 {
		t.Error("WithTailCache(0, 0) kept a tail")
	}
}

// TestTailCacheRandomAcrossReplicas compares, after every step of a
// seeded random sequence of appends, erasures, replaces, deletes and
// re-creations, imports and summary saves spread over two replicas (two
// pools, each store with its tail cache), every load of both replicas —
// Tail, Snapshot and SnapshotAfterSummary of random sizes — with the same
// load by a store that caches nothing. Messages carry tool calls,
// metadata, Korean text and other authors. Each replica must have
// answered loads from its held tail without strata_load (HeldLoads) and
// extended held tails by its appends. Directly, through PgBouncer in
// transaction mode (STRATA_PGBOUNCER_URL), and with prepared statements.
func TestTailCacheRandomAcrossReplicas(t *testing.T) {
	t.Parallel()
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		s := dbtest.NewSchema(t)
		randomReplicas(t, func() *sqlx.DB { return dbtest.Open(t, s.URL) })
	})
	t.Run("pooled", func(t *testing.T) {
		t.Parallel()
		p := dbtest.NewPooled(t)
		randomReplicas(t, func() *sqlx.DB { return dbtest.Open(t, p.PooledURL) })
	})
	t.Run("prepared", func(t *testing.T) {
		t.Parallel()
		s := dbtest.NewSchema(t)
		randomReplicas(t, func() *sqlx.DB { return dbtest.Open(t, s.URL) }, db.WithPreparedStatements())
	})
}

func randomReplicas(t *testing.T, open func() *sqlx.DB, opts ...db.Option) {
	ctx := testCtx(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	oracleDB := open()
	oracle := db.NewMessageStore(oracleDB, db.WithTailCache(0, 0), db.WithSummaryCache(0))
	sums := db.NewSummaryStore(oracleDB)
	replicas := []*db.MessageStore{
		db.NewMessageStore(open(), append(opts, db.WithTailCache(4, 1<<20))...),
		db.NewMessageStore(open(), opts...),
	}
	sessions := []string{"s0", "s1", "s2"}
	owner := map[string]string{}
	next := 0
	msg := func() store.Message {
		next++
		m := user(fmt.Sprint("c", next))
		switch next % 3 {
		case 0:
			m = store.Message{Role: store.RoleAssistant, Content: fmt.Sprint("c", next), Metadata: map[string]string{"k": fmt.Sprint(next)}}
		case 1:
			m = richMessage(rng, next) // tool calls, metadata, Korean text, another author
		}
		return m
	}
	msgs := func() []store.Message {
		out := make([]store.Message, 1+rng.IntN(3))
		for i := range out {
			out[i] = msg()
		}
		return out
	}
	for _, id := range sessions {
		owner[id] = "alice"
		mustAppend(t, ctx, replicas[0], id, "alice", msgs()...)
	}
	check := func(step int, what string) {
		t.Helper()
		for _, id := range sessions {
			for ri, r := range replicas {
				n := []int{0, 1, 2, 3, 5, 8, 20}[rng.IntN(7)]
				mode := rng.IntN(3)
				call := func(st *db.MessageStore) (store.Tail, *summary.Summary, error) {
					switch mode {
					case 0:
						tl, err := st.Tail(ctx, id, owner[id], n)
						return tl, nil, err
					case 1:
						return st.Snapshot(ctx, id, owner[id], n)
					}
					return st.SnapshotAfterSummary(ctx, id, owner[id], n)
				}
				got, gs, gerr := call(r)
				want, ws, werr := call(oracle)
				if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) ||
					(gs == nil) != (ws == nil) || (gs != nil && (gs.UpToSeq != ws.UpToSeq || gs.Version != ws.Version ||
					gs.Epoch != ws.Epoch || gs.Narrative != ws.Narrative)) {
					t.Fatalf("seed %d, step %d (%s), replica %d, %s mode %d n %d:\n got %+v, %v\nwant %+v, %v",
						seed, step, what, ri, id, mode, n, got, gerr, want, werr)
				}
			}
		}
	}
	check(0, "start")
	for step := 1; step <= 250; step++ {
		id := sessions[rng.IntN(len(sessions))]
		r := replicas[rng.IntN(2)]
		var what string
		switch op := rng.IntN(20); {
		case op < 9:
			what = "append"
			if _, err := r.Append(ctx, id, owner[id], msgs()...); err != nil {
				t.Fatal(err)
			}
		case op < 11:
			what = "forget"
			tl, err := oracle.Tail(ctx, id, owner[id], 30)
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Messages) > 0 {
				seq := tl.Messages[rng.IntN(len(tl.Messages))].Seq
				if err := r.Forget(ctx, id, owner[id], []int64{seq}, nil); err != nil {
					t.Fatal(err)
				}
			}
		case op < 12:
			what = "replace"
			if _, err := r.Replace(ctx, id, owner[id], msgs()...); err != nil {
				t.Fatal(err)
			}
		case op < 13:
			what = "delete and re-create"
			if err := r.Delete(ctx, id, owner[id]); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, ctx, replicas[rng.IntN(2)], id, owner[id], msgs()...)
		case op < 14:
			what = "delete and import"
			if err := r.Delete(ctx, id, owner[id]); err != nil {
				t.Fatal(err)
			}
			owner[id] = []string{"alice", "bob"}[rng.IntN(2)]
			if _, err := replicas[rng.IntN(2)].Import(ctx, id, owner[id], msgs(), nil); err != nil {
				t.Fatal(err)
			}
		case op < 15:
			what = "summary deleted"
			if err := sums.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		default:
			tl, err := oracle.Tail(ctx, id, owner[id], 1+rng.IntN(10))
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Messages) == 0 {
				what = "no summary"
				break
			}
			up := tl.Messages[rng.IntN(len(tl.Messages))].Seq
			// Narratives as summarizers write them: other scripts, odd
			// whitespace, a rewrite of the same text.
			sm := summary.Summary{SessionID: id, Epoch: tl.Epoch, UpToSeq: up,
				Narrative: []string{fmt.Sprint("n", step), fmt.Sprint("요약  ", step, "\t"), fmt.Sprint("要約\n", step), fmt.Sprint(" n ", step)}[rng.IntN(4)]}
			if rng.IntN(2) == 0 {
				what = "summary saved by the summary store"
				err = sums.Save(ctx, sm)
			} else {
				// A fold's save under the replica's lease, journaled as a
				// fold's is: the replica keeps its tail held with it.
				what = "summary saved by a replica's fold"
				release, save, ok, lerr := r.TryLockFold(ctx, id, time.Minute)
				if lerr != nil || !ok {
					t.Fatalf("seed %d, step %d: fold lease: %v, %v", seed, step, ok, lerr)
				}
				rec := store.JournalRecord{Kind: "fold", Outcome: "saved"}
				err = save(store.WithJournalRecord(store.WithJournalEdit(ctx, func(j *store.Journal) { j.Add(rec, 10) }), rec, 10), sm)
				release()
			}
			if err != nil && !errors.Is(err, store.ErrStale) && !errors.Is(err, summary.ErrStale) {
				t.Fatalf("seed %d, step %d (%s): %v", seed, step, what, err)
			}
		}
		check(step, what)
	}
	// The loads after a replica's own append, and those of an unchanged
	// session, come from its held tail, extended by the append.
	for ri, r := range replicas {
		loads, ext := db.HeldLoads(r)
		t.Logf("replica %d: %d held loads, %d extended tails", ri, loads, ext)
		if loads == 0 || ext == 0 {
			t.Errorf("replica %d: %d held loads, %d extended tails: the hit path or the append's extension never ran", ri, loads, ext)
		}
	}
}

// TestTailCacheRace: two replicas append to one session and erase some of
// its messages while both load it concurrently, with their tail caches.
// Every load returns a tail that was stored: its messages have the
// contents appended under their seqs, none erased before the load began,
// no gap but erased messages, as many as asked for or the session holds,
// and never older than the last append acknowledged before the load
// began.
func TestTailCacheRace(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	a, b := db.NewMessageStore(dbtest.Open(t, s.URL)), db.NewMessageStore(dbtest.Open(t, s.URL))
	mustAppend(t, ctx, a, "s", "alice", user("seed"))
	var (
		mu       sync.Mutex
		content  = map[int64]string{1: "seed"}
		erasing  = map[int64]bool{} // erasures begun
		erased   = map[int64]bool{} // erasures done
		acked    atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	acked.Store(1)
	stop := time.Now().Add(3 * time.Second)
	type seen struct {
		n           int
		startAcked  int64
		startErased map[int64]bool
		tail        store.Tail
	}
	var loads []seen
	for w, st := range []*db.MessageStore{a, b} {
		wg.Add(1)
		go func() { // appender
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				c1, c2 := fmt.Sprintf("w%d-%d-q", w, i), fmt.Sprintf("w%d-%d-a", w, i)
				res, err := st.Append(ctx, "s", "alice", user(c1), assistant(c2))
				if err != nil {
					failures.Add(1)
					t.Error(err)
					return
				}
				mu.Lock()
				content[res.LastSeq-1], content[res.LastSeq] = c1, c2
				mu.Unlock()
				for {
					cur := acked.Load()
					if res.LastSeq <= cur || acked.CompareAndSwap(cur, res.LastSeq) {
						break
					}
				}
			}
		}()
		for range 2 {
			wg.Add(1)
			go func() { // loader
				defer wg.Done()
				for time.Now().Before(stop) {
					n := []int{1, 5, 20, 50}[rand.IntN(4)]
					mu.Lock()
					startErased := make(map[int64]bool, len(erased))
					for k := range erased {
						startErased[k] = true
					}
					mu.Unlock()
					lo := acked.Load()
					tl, err := st.Tail(ctx, "s", "alice", n)
					if err != nil {
						failures.Add(1)
						t.Error(err)
						return
					}
					mu.Lock()
					loads = append(loads, seen{n: n, startAcked: lo, startErased: startErased, tail: tl})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Add(1)
	go func() { // eraser, on replica b
		defer wg.Done()
		for time.Now().Before(stop) {
			time.Sleep(20 * time.Millisecond) // paces the erasures (not synchronisation)
			top := acked.Load()
			if top < 10 {
				continue
			}
			seq := 1 + rand.Int64N(top-1)
			mu.Lock()
			again := erasing[seq]
			erasing[seq] = true
			mu.Unlock()
			if again {
				continue
			}
			if err := b.Forget(ctx, "s", "alice", []int64{seq}, nil); err != nil {
				failures.Add(1)
				t.Error(err)
				return
			}
			mu.Lock()
			erased[seq] = true
			mu.Unlock()
		}
	}()
	wg.Wait()
	if failures.Load() > 0 {
		return
	}
	if len(loads) < 20 {
		t.Fatalf("only %d loads", len(loads))
	}
	for i, l := range loads {
		ms := l.tail.Messages
		if len(ms) != min(l.n, l.tail.Total) {
			t.Fatalf("load %d: %d messages of %d, asked %d", i, len(ms), l.tail.Total, l.n)
		}
		for j, m := range ms {
			if m.Content != content[m.Seq] {
				t.Fatalf("load %d: seq %d is %q, stored %q", i, m.Seq, m.Content, content[m.Seq])
			}
			if l.startErased[m.Seq] {
				t.Fatalf("load %d: seq %d was erased before the load began", i, m.Seq)
			}
			if j > 0 {
				for g := ms[j-1].Seq + 1; g < m.Seq; g++ {
					if !erasing[g] {
						t.Fatalf("load %d: seq %d missing between %d and %d, never erased", i, g, ms[j-1].Seq, m.Seq)
					}
				}
			}
		}
		if last := ms[len(ms)-1].Seq; last < l.startAcked && !erasing[l.startAcked] {
			t.Fatalf("load %d: newest seq %d, but %d was acknowledged before the load began", i, last, l.startAcked)
		}
	}
	t.Logf("%d loads checked, %d erasures", len(loads), len(erased))
}

// TestPreparedStatements: with WithPreparedStatements the load and append
// statements are prepared by the protocol under a name on the connection
// (and the conformance of the store is unchanged: TestPreparedConformance);
// by default none is (the loads' statements are then kept by SQL PREPARE
// under their hash's name: namedStmt, TestNamedHeldStatement).
func TestPreparedStatements(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	for _, prepared := range []bool{false, true} {
		d := dbtest.Open(t, s.URL)
		d.SetMaxOpenConns(1) // one connection: the one asked below
		var opts []db.Option
		if prepared {
			opts = append(opts, db.WithPreparedStatements())
		}
		ms := db.NewMessageStore(d, opts...)
		id := fmt.Sprint("p", prepared)
		mustAppend(t, ctx, ms, id, "alice", user("q"), assistant("a"))
		if tl, err := ms.Tail(ctx, id, "alice", 5); err != nil || len(tl.Messages) != 2 {
			t.Fatalf("Tail: %+v, %v", tl, err)
		}
		var names []string
		if err := d.SelectContext(ctx, &names, `SELECT statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY statement`); err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(names, "\n")
		hasLoad, hasAppend := strings.Contains(joined, "strata_tail("), strings.Contains(joined, "strata_append(")
		if hasLoad != prepared || hasAppend != prepared {
			t.Errorf("prepared=%v: prepared statements %q", prepared, names)
		}
	}
}

// TestPreparedAppendNotRerun: an append by a prepared statement whose
// connection breaks while it runs is not run again on another connection
// (database/sql would, on driver.ErrBadConn): the caller gets
// store.ErrUnavailable, and the batch is stored at most once.
func TestPreparedAppendNotRerun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	ms := db.NewMessageStore(f.d, db.WithPreparedStatements())
	mustAppend(t, ctx, ms, "s", "alice", user("q0"), assistant("a0"))
	appendKilledInTrigger(t, ctx, f, ms)
	var n int
	if err := f.d.GetContext(ctx, &n, `SELECT count(*) FROM strata_messages WHERE session_id = 's' AND content = 'q1'`); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the killed batch is stored %d times", n)
	}
	if _, err := f.d.ExecContext(ctx, `DROP TRIGGER strata_test_slow ON strata_messages`); err != nil {
		t.Fatal(err)
	}
	if res, err := ms.Append(ctx, "s", "alice", user("q1"), assistant("a1")); err != nil || res.Total != 4 {
		t.Fatalf("Append after the fault: %+v, %v", res, err)
	}
}

// TestPreparedConformance runs the memory.MessageStore conformance suite
// against a store with WithPreparedStatements, on PostgreSQL directly.
func TestPreparedConformance(t *testing.T) {
	t.Parallel()
	ms := db.NewMessageStore(dbtest.New(t), db.WithPreparedStatements())
	memorytest.Run(t, func(t *testing.T) store.Store { return ms })
}

// TestManagerLoadUsesHeldTail: a manager's repeated loads of a session
// over this store (both policies, summaries on) are answered from the
// held tail — shown by rewriting the stored contents behind the store's
// back, which the next load does not show — and its own next turn is seen
// by the load after it.
func TestManagerLoadUsesHeldTail(t *testing.T) {
	t.Parallel()
	for _, policy := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			s := dbtest.NewSchema(t)
			ctx := testCtx(t)
			r := newReplica(t, s.URL, hierarchicalConfig(policy), newRecordingService(0, nil))
			d := dbtest.Open(t, s.URL)
			for k := range 8 {
				if err := r.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprint("q", k), fmt.Sprint("a", k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			verbatim := func() []string {
				t.Helper()
				h, err := r.mgr.Load(ctx, "s", "alice")
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, m := range h.Messages {
					out = append(out, m.GetContent())
				}
				return out
			}
			first := verbatim()
			if _, err := d.ExecContext(ctx, `UPDATE strata_messages SET content = 'sneaky' WHERE session_id = 's'`); err != nil {
				t.Fatal(err)
			}
			if got := verbatim(); !slices.Equal(got, first) || strings.Contains(strings.Join(got, " "), "sneaky") {
				t.Fatalf("second load: %q, want the held %q", got, first)
			}
			if err := r.mgr.SaveTurn(ctx, "s", "alice", "q-last", "a-last"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(verbatim(), " "); !strings.Contains(got, "q-last") || !strings.Contains(got, "a-last") {
				t.Fatalf("after a turn: %q", got)
			}
		})
	}
}

// TestHeldLoadUsesEntryExtendedMeanwhile: a load that took the held tail
// from the cache while an append of the session was committing — the
// append extends the entry before the load's statement returns, as when a
// fold plans while the session's writer goes on — is answered from the
// extended entry, which the statement's snapshot proves current, without
// a second read; when the append came from another replica (nothing
// extended here) it is not, and the full read gives the same messages.
func TestHeldLoadUsesEntryExtendedMeanwhile(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	other := db.NewMessageStore(f.d)
	for _, c := range []struct {
		name    string
		via     memory.MessageStore
		wantHit bool
	}{{"extended here", f.messages, true}, {"appended by another replica", other, false}} {
		t.Run(c.name, func(t *testing.T) {
			session := "held-meanwhile-" + strings.ReplaceAll(c.name, " ", "-")
			for i := range 3 {
				mustAppend(t, ctx, f.messages, session, "u", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
			}
			if _, _, err := f.messages.SnapshotAfterSummary(ctx, session, "u", 20); err != nil {
				t.Fatal(err)
			}
			stale := db.HeldTail(f.messages, session)
			if stale == nil {
				t.Fatal("no tail held after a load")
			}
			mustAppend(t, ctx, c.via, session, "u", user("q3"), assistant("a3"))
			got, hit, err := db.LoadHeldFrom(ctx, f.messages, session, "u", 20, stale)
			if err != nil {
				t.Fatal(err)
			}
			if hit != c.wantHit {
				t.Fatalf("answered by the held tail: %v, want %v", hit, c.wantHit)
			}
			want, _, err := db.NewMessageStore(f.d).SnapshotAfterSummary(ctx, session, "u", 20)
			if err != nil {
				t.Fatal(err)
			}
			if hit && !slices.Equal(contents(got.Messages), contents(want.Messages)) {
				t.Fatalf("held load read %q, a fresh read %q", contents(got.Messages), contents(want.Messages))
			}
			if full, _, err := f.messages.SnapshotAfterSummary(ctx, session, "u", 20); err != nil || !slices.Equal(contents(full.Messages), contents(want.Messages)) {
				t.Fatalf("load read %q (%v), a fresh read %q", contents(full.Messages), err, contents(want.Messages))
			}
		})
	}
}
