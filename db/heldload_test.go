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

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// richMessage is a random message of the kinds a load must return exactly
// as stored: Korean and odd-whitespace text, tool calls with JSON
// arguments, tool results, metadata, another author.
func richMessage(rng *rand.Rand, i int) store.Message {
	texts := []string{"안녕하세요, 세션 %d", "  spaced\t%d \n", "plain %d", "<html> & \"quotes\" %d", "emoji 🎉 %d"}
	m := store.Message{Role: store.RoleUser, Content: fmt.Sprintf(texts[rng.IntN(len(texts))], i)}
	switch rng.IntN(5) {
	case 1:
		m.Role = store.RoleAssistant
		m.ToolCalls = []llms.ToolCall{{ID: fmt.Sprint("call-", i), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "검색", Arguments: fmt.Sprintf(`{"q": "서울 날씨", "n": %d, "x": "<&>"}`, i)}}}
	case 2:
		m.Role = store.RoleTool
		m.ToolCallID, m.Name = fmt.Sprint("call-", i), "검색"
	case 3:
		m.Role = store.RoleAssistant
		m.Metadata = map[string]string{"언어": "ko", "k": fmt.Sprint(i), "html": "<b>"}
	case 4:
		m.UserID = "carol" // another author
	}
	return m
}

// TestHeldLoadEqualsFreshStore: the agent loop — load, append a turn,
// load — on one store answers every load after the first from the tail
// it holds, extended by its own appends, without strata_load (HeldLoads
// counts them), and every such load equals, message for message (seq,
// role, content, tool calls, metadata, author, stored time), the load of
// a store just made, which holds nothing; so does the load after a fold
// saved a new summary (the plain statement sends it). Random turns (seed printed),
// Tail, Snapshot and SnapshotAfterSummary, with and without a summary,
// prepared statements off and on.
func TestHeldLoadEqualsFreshStore(t *testing.T) {
	t.Parallel()
	for _, prepared := range []bool{false, true} {
		t.Run(fmt.Sprint("prepared=", prepared), func(t *testing.T) {
			t.Parallel()
			s := dbtest.NewSchema(t)
			d := dbtest.Open(t, s.URL)
			ctx := testCtx(t)
			var opts []db.Option
			if prepared {
				opts = append(opts, db.WithPreparedStatements())
			}
			ms := db.NewMessageStore(d, opts...)
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(uint64(seed), 3))
			mustAppend(t, ctx, ms, "s", "alice", richMessage(rng, 0))
			next := 1
			for mode := range 3 {
				n := []int{4, 20, 50}[mode]
				load := func(st *db.MessageStore) (store.Tail, *summary.Summary) {
					t.Helper()
					var (
						tl  store.Tail
						sm  *summary.Summary
						err error
					)
					switch mode {
					case 0:
						tl, err = st.Tail(ctx, "s", "alice", n)
					case 1:
						tl, sm, err = st.Snapshot(ctx, "s", "alice", n)
					default:
						tl, sm, err = st.SnapshotAfterSummary(ctx, "s", "alice", n)
					}
					if err != nil {
						t.Fatal(err)
					}
					return tl, sm
				}
				load(ms) // reads the tail (and summary) it then holds
				for turn := range 25 {
					turnMsgs := make([]store.Message, 1+rng.IntN(3))
					for i := range turnMsgs {
						turnMsgs[i] = richMessage(rng, next)
						next++
					}
					if _, err := ms.Append(ctx, "s", "alice", turnMsgs...); err != nil {
						t.Fatal(err)
					}
					before, _ := db.HeldLoads(ms)
					got, gs := load(ms)
					after, _ := db.HeldLoads(ms)
					if after != before+1 {
						t.Fatalf("seed %d, mode %d, turn %d: the load after the store's own append was not answered from the held tail", seed, mode, turn)
					}
					fresh := db.NewMessageStore(dbtest.Open(t, s.URL))
					want, ws := load(fresh)
					if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gs, ws) {
						t.Fatalf("seed %d, mode %d, turn %d:\n held %+v %+v\nfresh %+v %+v", seed, mode, turn, got, gs, want, ws)
					}
					if mode >= 1 && turn%5 == 4 {
						// A fold saves a new summary (another replica's store): it
						// raises the session's summary_writes, so the next load is
						// not answered from the held tail (its one-row check sees the
						// changed stamp) but by strata_tail, which equals a fresh
						// store's; the load after it is held again.
						err := db.NewSummaryStore(dbtest.Open(t, s.URL)).Save(ctx, summary.Summary{SessionID: "s", Epoch: got.Epoch,
							UpToSeq: got.Messages[len(got.Messages)/2].Seq, Narrative: fmt.Sprint("요약 ", turn),
							Facts: []summary.Fact{{Key: "k", Value: fmt.Sprint("v", turn)}}})
						if err != nil {
							t.Fatal(err)
						}
						b, _ := db.HeldLoads(ms)
						got, gs := load(ms)
						if a, _ := db.HeldLoads(ms); a != b {
							t.Fatalf("seed %d, mode %d, turn %d: the load after a new summary was answered from the held tail", seed, mode, turn)
						}
						if again, againS := load(ms); !reflect.DeepEqual(again, got) || !reflect.DeepEqual(againS, gs) {
							t.Fatalf("seed %d, mode %d, turn %d: a second load after a new summary differs:\n%+v %+v\n%+v %+v", seed, mode, turn, again, againS, got, gs)
						} else if a, _ := db.HeldLoads(ms); a != b+1 {
							t.Fatalf("seed %d, mode %d, turn %d: the second load after a new summary was not held", seed, mode, turn)
						}
						want, ws := load(db.NewMessageStore(dbtest.Open(t, s.URL)))
						if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gs, ws) || gs == nil || gs.Narrative != fmt.Sprint("요약 ", turn) {
							t.Fatalf("seed %d, mode %d, turn %d, after a new summary:\n held %+v %+v\nfresh %+v %+v", seed, mode, turn, got, gs, want, ws)
						}
					}
				}
			}
			loads, ext := db.HeldLoads(ms)
			t.Logf("%d held loads, %d extended tails", loads, ext)
		})
	}
}

// TestHeldLoadNeverServesStale: a store that holds a session's tail and
// summary never answers from them once another replica (of this build or
// an older one) appended, erased one of the
// messages, deleted the session (and re-created it, empty, for the same
// or another owner, the seq counter unchanged), or saved a new summary;
// a missing session and another owner's give store.ErrNotFound and
// memory.ErrNotOwner, as without a held tail.
func TestHeldLoadNeverServesStale(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	ms := db.NewMessageStore(dbtest.Open(t, s.URL))
	other := db.NewMessageStore(dbtest.Open(t, s.URL))
	mustAppend(t, ctx, ms, "s", "alice", user("q1"), assistant("a1"), user("q2"), assistant("a2"))
	snap := func(userID string) (store.Tail, *summary.Summary, error) {
		return ms.SnapshotAfterSummary(ctx, "s", userID, 10)
	}
	hold := func() {
		t.Helper()
		if _, _, err := snap("alice"); err != nil {
			t.Fatal(err)
		}
		b, _ := db.HeldLoads(ms)
		if _, _, err := snap("alice"); err != nil {
			t.Fatal(err)
		}
		if a, _ := db.HeldLoads(ms); a != b+1 {
			t.Fatal("an unchanged session's load was not answered from the held tail")
		}
	}
	hold()

	// An append by a replica of an older build (strata_append's result
	// read by its first four columns), which extends no held tail.
	if _, err := db.AppendAsOlderBuild(ctx, dbtest.Open(t, s.URL), "s", "alice", user("old build")); err != nil {
		t.Fatal(err)
	}
	if tl, _, err := snap("alice"); err != nil || !slices.Equal(contents(tl.Messages), []string{"q1", "a1", "q2", "a2", "old build"}) {
		t.Fatalf("after an older build's append: %q, %v", contents(tl.Messages), err)
	}
	hold()

	// An erasure by another replica.
	if err := other.Forget(ctx, "s", "alice", []int64{2}, nil); err != nil {
		t.Fatal(err)
	}
	tl, _, err := snap("alice")
	if err != nil || !slices.Equal(contents(tl.Messages), []string{"q1", "q2", "a2", "old build"}) {
		t.Fatalf("after an erasure: %q, %v", contents(tl.Messages), err)
	}

	// A new summary by another replica.
	hold()
	if err := db.NewSummaryStore(dbtest.Open(t, s.URL)).Save(ctx, summary.Summary{SessionID: "s", Epoch: tl.Epoch, UpToSeq: 3, Narrative: "n"}); err != nil {
		t.Fatal(err)
	}
	tl, sm, err := snap("alice")
	if err != nil || sm == nil || sm.UpToSeq != 3 || !slices.Equal(contents(tl.Messages), []string{"a2", "old build"}) {
		t.Fatalf("after a new summary: %q, %+v, %v", contents(tl.Messages), sm, err)
	}

	// The summary deleted alone (SummaryStore.Delete), by another replica:
	// the held summary is not served; every message counts again.
	hold()
	if err := db.NewSummaryStore(dbtest.Open(t, s.URL)).Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if tl, sm, err := snap("alice"); err != nil || sm != nil || !slices.Equal(contents(tl.Messages), []string{"q1", "q2", "a2", "old build"}) {
		t.Fatalf("after the summary's delete: %q, %+v, %v", contents(tl.Messages), sm, err)
	}

	// Two folds' saves, another replica's, then this store's under its
	// lease: the load shows this store's, the stored one.
	hold()
	if err := db.NewSummaryStore(dbtest.Open(t, s.URL)).Save(ctx, summary.Summary{SessionID: "s", Epoch: tl.Epoch, UpToSeq: 1, Narrative: "other"}); err != nil {
		t.Fatal(err)
	}
	release, save, ok, err := ms.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLockFold: %v, %v", ok, err)
	}
	rec := store.JournalRecord{Kind: "fold", Outcome: "saved"}
	jctx := store.WithJournalRecord(store.WithJournalEdit(ctx, func(j *store.Journal) { j.Add(rec, 10) }), rec, 10)
	if err := save(jctx, summary.Summary{SessionID: "s", Epoch: tl.Epoch, UpToSeq: 3, Narrative: "mine"}); err != nil {
		t.Fatal(err)
	}
	release()
	if tl, sm, err := snap("alice"); err != nil || sm == nil || sm.Narrative != "mine" || !slices.Equal(contents(tl.Messages), []string{"a2", "old build"}) {
		t.Fatalf("after two saves: %q, %+v, %v", contents(tl.Messages), sm, err)
	}
	// Alone, this store's save keeps the tail held, with the new summary.
	hold()
	release, save, ok, err = ms.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLockFold: %v, %v", ok, err)
	}
	if err := save(jctx, summary.Summary{SessionID: "s", Epoch: tl.Epoch, UpToSeq: 4, Narrative: "mine again"}); err != nil {
		t.Fatal(err)
	}
	release()
	b, _ := db.HeldLoads(ms)
	if tl, sm, err := snap("alice"); err != nil || sm == nil || sm.Narrative != "mine again" || !slices.Equal(contents(tl.Messages), []string{"old build"}) {
		t.Fatalf("after this store's save: %q, %+v, %v", contents(tl.Messages), sm, err)
	} else if a, _ := db.HeldLoads(ms); a != b+1 {
		t.Fatal("the load after this store's own save was not answered from the held tail")
	}
	if _, sm, err := other.SnapshotAfterSummary(ctx, "s", "alice", 10); err != nil || sm == nil || sm.Narrative != "mine again" || sm.UpToSeq != 4 {
		t.Fatalf("another replica after this store's save: %+v, %v", sm, err)
	}

	// Deleted: not found; another user: not the owner.
	hold()
	if _, _, err := snap("mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's load = %v, want ErrNotOwner", err)
	}
	if err := other.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	hold2 := func() { // hold again after re-creation
		t.Helper()
		mustAppend(t, ctx, other, "s", "alice", user("x"))
		hold()
	}
	if _, _, err := snap("alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted session's load = %v, want ErrNotFound", err)
	}

	// Re-created empty, for the same owner and for another: the seq counter
	// and erasures are the held ones, only the epoch differs.
	for _, owner := range []string{"alice", "bob"} {
		hold2()
		if err := other.Delete(ctx, "s", "alice"); err != nil {
			t.Fatal(err)
		}
		if err := other.Create(ctx, "s", owner); err != nil {
			t.Fatal(err)
		}
		tl, sm, err := snap(owner)
		if err != nil || len(tl.Messages) != 0 || sm != nil {
			t.Fatalf("re-created for %s: %q, %+v, %v", owner, contents(tl.Messages), sm, err)
		}
		if owner == "bob" {
			if _, _, err := snap("alice"); !errors.Is(err, memory.ErrNotOwner) {
				t.Fatalf("the former owner's load = %v, want ErrNotOwner", err)
			}
			if err := other.Delete(ctx, "s", "bob"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := ms.Snapshot(ctx, "missing", "alice", 10); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing session's load = %v, want ErrNotFound", err)
	}
}

// TestHeldLoadAgentLoopRace: agent loops (load, append a turn, load) on
// one store, several sessions and several loops per session, while
// another replica appends to and erases from the same sessions. Every load
// returns stored messages under their seqs, none erased before the load
// began, and includes the loop's own last acknowledged turn.
func TestHeldLoadAgentLoopRace(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	a, b := db.NewMessageStore(dbtest.Open(t, s.URL)), db.NewMessageStore(dbtest.Open(t, s.URL))
	sessions := []string{"s0", "s1"}
	type seen struct {
		id   string
		gone map[int64]bool // erased before the load began
		tail store.Tail
	}
	var (
		mu       sync.Mutex
		content  = map[string]map[int64]string{}
		erased   = map[string]map[int64]bool{}
		failures atomic.Int64
		wg       sync.WaitGroup
		loads    []seen
	)
	for _, id := range sessions {
		content[id], erased[id] = map[int64]string{}, map[int64]bool{}
		res := mustAppend(t, ctx, a, id, "alice", user("seed"))
		content[id][res.LastSeq] = "seed"
	}
	fail := func(err error) {
		failures.Add(1)
		t.Error(err)
	}
	stop := time.Now().Add(2 * time.Second)
	for w := range 4 {
		id := sessions[w%2]
		wg.Add(1)
		go func() { // agent loop on a
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				c := fmt.Sprintf("w%d-%d", w, i)
				res, err := a.Append(ctx, id, "alice", user(c+"-q"), assistant(c+"-a"))
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				content[id][res.LastSeq-1], content[id][res.LastSeq] = c+"-q", c+"-a"
				gone := make(map[int64]bool, len(erased[id]))
				for k := range erased[id] {
					gone[k] = true
				}
				mu.Unlock()
				tl, _, err := a.SnapshotAfterSummary(ctx, id, "alice", 20)
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				loads = append(loads, seen{id: id, gone: gone, tail: tl})
				mu.Unlock()
				if len(tl.Messages) == 0 || tl.Messages[len(tl.Messages)-1].Seq < res.LastSeq {
					fail(fmt.Errorf("%s: the load after the append of seq %d returned %d messages, newest not it", id, res.LastSeq, len(tl.Messages)))
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the other replica
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			id := sessions[i%2]
			if i%3 == 0 {
				mu.Lock()
				var seq int64
				for k := range content[id] {
					if !erased[id][k] {
						seq = k
						break
					}
				}
				mu.Unlock()
				if seq == 0 {
					continue
				}
				if err := b.Forget(ctx, id, "alice", []int64{seq}, nil); err != nil {
					fail(err)
					return
				}
				mu.Lock()
				erased[id][seq] = true
				mu.Unlock()
				continue
			}
			res, err := b.Append(ctx, id, "alice", user(fmt.Sprint("b-", i)))
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			content[id][res.LastSeq] = fmt.Sprint("b-", i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // paces the other replica (not synchronisation)
		}
	}()
	wg.Wait()
	if failures.Load() > 0 {
		return
	}
	for i, l := range loads {
		for _, m := range l.tail.Messages {
			if m.Content != content[l.id][m.Seq] || l.gone[m.Seq] {
				t.Fatalf("load %d of %s, seq %d: %q, stored %q, erased before the load: %v",
					i, l.id, m.Seq, m.Content, content[l.id][m.Seq], l.gone[m.Seq])
			}
		}
	}
	held, ext := db.HeldLoads(a)
	t.Logf("%d loads checked, %d held loads, %d extended tails", len(loads), held, ext)
	if held == 0 {
		t.Fatal("no load was answered from a held tail")
	}
}

// TestHeldSQLPlan: the held load's plain statement is one primary-key
// lookup of strata_sessions (strata_sessions_pkey): no scan, no function,
// and not the summary's table, planned and run on a database of 3 000
// sessions with summaries.
func TestHeldSQLPlan(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if _, err := d.ExecContext(ctx, `
INSERT INTO strata_sessions (session_id, user_id) SELECT 's' || g, 'alice' FROM generate_series(1, 3000) g;
INSERT INTO strata_summaries (session_id, epoch, narrative, up_to_seq)
SELECT session_id, epoch, 'n', 1 FROM strata_sessions;
ANALYZE strata_sessions, strata_summaries`); err != nil {
		t.Fatal(err)
	}
	var plan []string
	if err := d.SelectContext(ctx, &plan, `EXPLAIN `+db.HeldSQL, "s42"); err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(plan)
	t.Logf("plan:\n%s", all)
	if !strings.Contains(all, "strata_sessions_pkey") {
		t.Errorf("plan without strata_sessions_pkey")
	}
	if strings.Contains(all, "strata_summaries") || strings.Contains(all, "Seq Scan") || strings.Contains(all, "Function Scan") {
		t.Errorf("plan reads the summaries, scans a table or calls a function")
	}
	if err := d.QueryRowxContext(ctx, db.HeldSQL, "s42").Scan(new(string), new(int64), new(int64), new(int64), new(int64), new(int64)); err != nil {
		t.Fatalf("the statement on a session with a summary: %v", err)
	}
}

// TestManagerAgentLoopHeldLoads: a manager's agent loop — save a turn
// (its fold runs and saves a new summary), load — on one store answers
// every load after the first from the held tail, extended by the turn's
// append, with the new summary sent by the plain statement; and every
// load shows what a manager over a fresh store shows. Parity and chunked.
func TestManagerAgentLoopHeldLoads(t *testing.T) {
	t.Parallel()
	for _, policy := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			s := dbtest.NewSchema(t)
			ctx := testCtx(t)
			cfg := hierarchicalConfig(policy)
			r := newReplica(t, s.URL, cfg, newRecordingService(0, nil))
			shown := func(m *memory.Manager) (string, memory.Mode) {
				t.Helper()
				h, err := m.Load(ctx, "s", "alice")
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, msg := range h.Messages {
					out = append(out, msg.GetContent())
				}
				return fmt.Sprint(out), h.Mode
			}
			misses := 0
			for k := range 20 {
				if err := r.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprint("질문 ", k), fmt.Sprint("answer ", k)); err != nil {
					t.Fatal(err)
				}
				if err := r.mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				before, _ := db.HeldLoads(r.d)
				got, mode := shown(r.mgr)
				if after, _ := db.HeldLoads(r.d); after != before+1 && k > 0 {
					misses++
				}
				fresh := newReplica(t, s.URL, cfg, newRecordingService(0, nil))
				if want, wmode := shown(fresh.mgr); got != want || mode != wmode {
					t.Fatalf("turn %d: held %s %s\nfresh %s %s", k, mode, got, wmode, want)
				}
			}
			loads, ext := db.HeldLoads(r.d)
			t.Logf("%d held loads, %d extended tails, %d loads after the first not held", loads, ext, misses)
			if misses > 0 {
				t.Errorf("%d of the agent loop's loads after the first ran strata_load", misses)
			}
		})
	}
}
