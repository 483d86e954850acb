package memory

import (
	"fmt"
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
