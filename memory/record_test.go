package memory

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/internal/backoff"
	"github.com/strata-go/strata/memory/store"
)

// recordEngine is the engine of a manager whose folds cool down for a
// minute after a first failure, up to an hour.
func recordEngine(t *testing.T) *engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.FailureCooldown, cfg.MaxFailureCooldown = time.Minute, time.Hour
	m, err := NewManager(NewInMemoryStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m.eng
}

// A session's cool-down lives on its record: failures push the next try
// back exponentially, a success clears it and drops the record, which is
// kept no longer than something needs it. (Its course in time, through
// loads and saves: TestCooldownAfterFailure.)
func TestSessionRecordCooldown(t *testing.T) {
	e := recordEngine(t)
	if !e.coolReady("a") || len(e.sessions) != 0 {
		t.Fatalf("a session never folded: ready %v, records %d", e.coolReady("a"), len(e.sessions))
	}
	e.coolFail("a")
	before := time.Now()
	e.coolFail("a")
	after := time.Now()
	if e.coolReady("a") || len(e.sessions) != 1 {
		t.Fatalf("after two failures: ready %v, records %d", e.coolReady("a"), len(e.sessions))
	}
	d := backoff.Delay(time.Minute, time.Hour, 2)
	e.mu.Lock()
	st := e.sessions["a"]
	until := st.until
	st.until = time.Now().Add(-time.Nanosecond) // the delay has passed
	e.mu.Unlock()
	if until.Before(before.Add(d)) || until.After(after.Add(d)) {
		t.Fatalf("second failure: cools down until %v, want %v after it", until, d)
	}
	if !e.coolReady("b") {
		t.Fatal("another session cools down too")
	}
	if !e.coolReady("a") {
		t.Fatal("not ready after the delay")
	}
	e.coolSucceed("a")
	if len(e.sessions) != 0 {
		t.Fatalf("a success left %d records", len(e.sessions))
	}
	// A save of a session cooling down is not due.
	e.coolFail("c")
	if e.saveDue("c", store.AppendResult{Total: 10}, nil) || !e.saveDue("d", store.AppendResult{Total: 10}, nil) {
		t.Fatal("saveDue ignores the cool-down")
	}
}

// The records are bounded: idle ones (a cool-down or a backlog only) are
// dropped past maxIdleRecords, one in use never is.
func TestSessionRecordsBounded(t *testing.T) {
	e := recordEngine(t)
	e.mu.Lock()
	held := e.acquireLocked("held")
	e.mu.Unlock()
	for i := range 3 * maxIdleRecords {
		e.coolFail(fmt.Sprint("s", i))
		if i%2 == 0 {
			e.mu.Lock()
			st := e.acquireLocked(fmt.Sprint("t", i))
			st.trackLocked(tracked{epoch: 1, total: 3})
			e.releaseLocked(fmt.Sprint("t", i), st)
			e.mu.Unlock()
		}
	}
	if n := len(e.sessions); n > maxIdleRecords+1 {
		t.Fatalf("%d records, want at most %d", n, maxIdleRecords+1)
	}
	if e.sessions["held"] != held {
		t.Fatal("a record in use was dropped")
	}
}

// The record is shared by loads, saves, folds and deletes of a session at
// once (run with -race).
func TestSessionRecordConcurrent(t *testing.T) {
	e := recordEngine(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := fmt.Sprint("s", (g+i)%5)
				switch i % 5 {
				case 0:
					e.coolFail(id)
				case 1:
					e.coolReady(id)
				case 2:
					e.saveDue(id, store.AppendResult{Total: i}, nil)
				case 3:
					e.forgetBacklog(id)
				default:
					e.coolSucceed(id)
				}
			}
		}()
	}
	wg.Wait()
	for id := range e.sessions {
		e.coolSucceed(id)
		e.forgetBacklog(id)
	}
	if len(e.sessions) != 0 {
		t.Fatalf("%d records left once nothing needs them", len(e.sessions))
	}
}

// chunkedEngine is the engine of a manager under the chunked policy.
func chunkedEngine(t *testing.T) *engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = PolicyChunked
	m, err := NewManager(NewInMemoryStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m.eng
}

// TestTrackCompletesMissedSaves: a plan's read that missed saves this
// process had already counted (its session's writer went on while the
// fold planned) leaves the same tracked backlog — messages, turns,
// tokens, not partial — as if the read had been measured before those
// saves; so the next fold due takes the lease and plans once instead of
// planning first without it. Saves it cannot account for (another
// process's appends, or more than the log keeps) still make the record
// partial. Randomized: save sizes, roles, texts, and which saves the read
// saw.
func TestTrackCompletesMissedSaves(t *testing.T) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("STRATA_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	words := []string{"Lisbon", "nurse", "March", "Anna", "hospital", "çava", "東京", "ok", "the", "trip"}
	for round := range 200 {
		e := chunkedEngine(t)
		const epoch = 7
		var all []store.Message
		var saves [][]store.Message
		for range 2 + rng.IntN(2*maxLoggedSaves) {
			var batch []store.Message
			for range 1 + rng.IntN(3) {
				role := store.RoleUser
				if rng.IntN(2) == 0 {
					role = store.RoleAssistant
				}
				var text []string
				for range 1 + rng.IntN(30) {
					text = append(text, words[rng.IntN(len(words))])
				}
				m := store.Message{Seq: int64(len(all) + 1), Role: role, Content: strings.Join(text, " ")}
				all = append(all, m)
				batch = append(batch, m)
			}
			saves = append(saves, batch)
		}
		// The read saw the first seen saves; the first before of them were
		// counted before it measured, as were the missed ones after it.
		seen := 1 + rng.IntN(len(saves)-1)
		before := rng.IntN(seen + 1)
		foreign := -1 // a missed save no save of this process reported
		if rng.IntN(4) == 0 {
			foreign = seen + rng.IntN(len(saves)-seen)
		}
		totalAt := func(i int) int { // messages after the first i saves
			n := 0
			for _, b := range saves[:i] {
				n += len(b)
			}
			return n
		}
		read := func(i int) (view, []store.Message) {
			n := totalAt(i)
			return view{total: n, epoch: epoch, msgs: all[:n], all: true}, all[:n]
		}
		save := func(id string, i int) {
			if i != foreign {
				e.saveDue(id, store.AppendResult{Total: totalAt(i + 1), Epoch: epoch}, saves[i])
			}
		}
		// Reference: measured, then the missed saves counted after it.
		v0, u0 := read(0)
		e.measured("ref", v0, nil, u0)
		for i := range before {
			save("ref", i)
		}
		v, u := read(seen)
		e.measured("ref", v, nil, u)
		for i := seen; i < len(saves); i++ {
			save("ref", i)
		}
		// Under test: the missed saves counted before the read measured.
		e.measured("got", v0, nil, u0)
		for i := range before {
			save("got", i)
		}
		for i := seen; i < len(saves); i++ {
			save("got", i)
		}
		e.measured("got", v, nil, u)

		e.mu.Lock()
		ref, got := e.sessions["ref"].bl, e.sessions["got"].bl
		e.mu.Unlock()
		// A foreign save that came last was reported by no save of this
		// process: the record does not know of it at all, as the reference.
		missed, lastForeign := len(saves)-seen, foreign == len(saves)-1
		if lastForeign {
			missed--
		}
		switch {
		case (foreign >= 0 && !lastForeign) || missed > maxLoggedSaves:
			if !got.partial || got.messages != ref.messages || got.total != ref.total {
				t.Fatalf("round %d (foreign %d, missed %d): tracked %+v, want partial with %d messages", round, foreign, missed, got, ref.messages)
			}
		default:
			if got != ref {
				t.Fatalf("round %d (seen %d of %d saves): tracked %+v, want %+v", round, seen, len(saves), got, ref)
			}
		}
	}
}

// TestTrackConcurrent runs saves, plans' measurements, forgotten backlogs
// and trigger checks of a few sessions at once (run with -race): the save
// log stays within its bound and a measured record never counts more
// messages than were saved.
func TestTrackConcurrent(t *testing.T) {
	e := chunkedEngine(t)
	msg := []store.Message{{Role: store.RoleUser, Content: "I moved to Lisbon in March."}}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 400 {
				id := fmt.Sprint("s", (g+i)%3)
				switch g % 3 {
				case 0:
					e.saveDue(id, store.AppendResult{Total: i + 1, Epoch: 1}, msg)
				case 1:
					e.measured(id, view{total: i / 2, epoch: 1}, nil, nil)
				default:
					if i%50 == 0 {
						e.forgetBacklog(id)
					}
					e.trackedDue(id)
				}
			}
		})
	}
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, st := range e.sessions {
		if len(st.saves) > maxLoggedSaves {
			t.Fatalf("%s: %d logged saves, bound %d", id, len(st.saves), maxLoggedSaves)
		}
		if st.tracking && st.bl.total > 400 {
			t.Fatalf("%s: %d messages tracked, at most 400 saved", id, st.bl.total)
		}
	}
}

// MaxConcurrentFolds 0 means half of GOMAXPROCS, at least 1; a set value
// is kept.
func TestFoldSlotsDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 16: 8} {
		runtime.GOMAXPROCS(procs)
		if got := DefaultConfig().foldSlots(); got != want {
			t.Errorf("GOMAXPROCS %d: %d fold slots, want %d", procs, got, want)
		}
	}
	c := DefaultConfig()
	c.MaxConcurrentFolds = 5
	if got := c.foldSlots(); got != 5 {
		t.Errorf("MaxConcurrentFolds 5: %d slots", got)
	}
}
