package memory

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/internal/backoff"
	"github.com/strata-go/strata/internal/clock"
	"github.com/strata-go/strata/memory/store"
)

func recordEngine(clk clock.Clock) *engine {
	return &engine{sessions: map[string]*slot{}, engineDeps: engineDeps{clk: clk,
		cfg: Config{FailureCooldown: time.Second, MaxFailureCooldown: time.Minute}}}
}

// A session's cool-down lives on its record: failures push the next try
// back exponentially, a success clears it and drops the record, which is
// kept no longer than something needs it.
func TestSessionRecordCooldown(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := recordEngine(clk)
	if !e.coolReady("a") || len(e.sessions) != 0 {
		t.Fatalf("a session never folded: ready %v, records %d", e.coolReady("a"), len(e.sessions))
	}
	e.coolFail("a")
	e.coolFail("a")
	if e.coolReady("a") || len(e.sessions) != 1 {
		t.Fatalf("after two failures: ready %v, records %d", e.coolReady("a"), len(e.sessions))
	}
	if !e.coolReady("b") {
		t.Fatal("another session cools down too")
	}
	clk.Advance(backoff.Delay(time.Second, time.Minute, 2) - time.Nanosecond)
	if e.coolReady("a") {
		t.Fatal("ready before the second failure's delay")
	}
	clk.Advance(time.Nanosecond)
	if !e.coolReady("a") {
		t.Fatal("not ready after the second failure's delay")
	}
	e.coolSucceed("a")
	if len(e.sessions) != 0 {
		t.Fatalf("a success left %d records", len(e.sessions))
	}
	// A saved session cooling down is not due.
	e.coolFail("c")
	if e.saveDue("c", store.AppendResult{Total: 10}, nil) || !e.saveDue("d", store.AppendResult{Total: 10}, nil) {
		t.Fatal("saveDue ignores the cool-down")
	}
}

// The records are bounded: idle ones (a cool-down or a backlog only) are
// dropped past maxIdleRecords, one in use never is.
func TestSessionRecordsBounded(t *testing.T) {
	e := recordEngine(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
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
	e := recordEngine(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
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
