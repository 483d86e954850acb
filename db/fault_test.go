package db_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

// terminateBackends kills every server connection of the test's own pools
// (they carry the schema name as application_name) and returns how many.
func terminateBackends(t testing.TB, ctx context.Context, app string) int {
	t.Helper()
	var n int
	err := dbtest.Admin(t).GetContext(ctx, &n, `
		SELECT count(*) FROM (
		  SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		   WHERE application_name = $1 AND pid <> pg_backend_pid()) k`, app)
	if err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	return n
}

// TestAppendKilledMidTransaction terminates the backend while it is inside
// an append transaction (a trigger holds it there): the caller gets a
// wrapped error, nothing of the batch is stored, and the next call works.
func TestAppendKilledMidTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	mustAppend(t, ctx, f.messages, "s", "alice", user("q0"), assistant("a0"))
	appendKilledInTrigger(t, ctx, f, f.messages)

	// Nothing half-written, and the store works again at once.
	assertConsistent(t, ctx, f, "s")
	tail, err := f.messages.Tail(ctx, "s", "alice", 10)
	if err != nil {
		t.Fatalf("Tail after the fault: %v", err)
	}
	if tail.Total != 2 {
		t.Errorf("Total = %d after a killed append, want 2", tail.Total)
	}
	if _, err := f.d.ExecContext(ctx, `DROP TRIGGER strata_test_slow ON strata_messages`); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, ctx, f.messages, "s", "alice", user("q1"), assistant("a1")); res.Total != 4 {
		t.Errorf("Total = %d, want 4", res.Total)
	}
}

// TestConnectionsKilledUnderLoad terminates the pool's backends again and
// again while workers append pairs and load tails: every failure is a
// returned error (no panic, no hang), no partial pair is ever stored, the
// count stays exact, every acknowledged append is stored, and the store
// recovers by itself once the killing stops.
func TestConnectionsKilledUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault injection under load skipped in -short mode")
	}
	f := newFixture(t)
	ctx := testCtx(t)
	const workers = 6
	sessions := []string{"s0", "s1", "s2"}
	for _, s := range sessions { // so that loads never meet a missing session
		mustAppend(t, ctx, f.messages, s, "alice", user("qinit"), assistant("ainit"))
	}

	var (
		wg                 sync.WaitGroup
		stop               atomic.Bool
		okAppends, failed  atomic.Int64
		mu                 sync.Mutex
		acked              = map[string][]int64{}
		sampleErr          error
		kills, killRounds  int
		loadOK, loadFailed atomic.Int64
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				s := sessions[(w+i)%len(sessions)]
				res, err := f.messages.Append(ctx, s, "alice", user(fmt.Sprintf("q%d-%d", w, i)), assistant(fmt.Sprintf("a%d-%d", w, i)))
				if err != nil {
					if !strings.HasPrefix(err.Error(), "db: ") || errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("unexpected append error: %v", err)
						return
					}
					failed.Add(1)
					mu.Lock()
					sampleErr = err
					mu.Unlock()
				} else {
					okAppends.Add(1)
					mu.Lock()
					acked[s] = append(acked[s], res.LastSeq)
					mu.Unlock()
				}
				if _, err := f.messages.Tail(ctx, s, "alice", 10); err != nil {
					if !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("unexpected load error: %v", err)
						return
					}
					loadFailed.Add(1)
				} else {
					loadOK.Add(1)
				}
			}
		}()
	}
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(15 * time.Millisecond)
		kills += terminateBackends(t, ctx, f.schema.Name)
		killRounds++
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d kill rounds terminated %d backends; appends ok %d failed %d; loads ok %d failed %d; sample error: %v",
		killRounds, kills, okAppends.Load(), failed.Load(), loadOK.Load(), loadFailed.Load(), sampleErr)
	if okAppends.Load() == 0 {
		t.Fatal("no append succeeded while connections were being killed")
	}
	if kills == 0 {
		t.Fatal("no backend was terminated")
	}

	// Recovery: every call works again, without any intervention.
	for _, s := range sessions {
		mustAppend(t, ctx, f.messages, s, "alice", user("qafter"), assistant("aafter"))
	}
	for _, s := range sessions {
		assertConsistent(t, ctx, f, s)
		stored := map[int64]bool{}
		for _, m := range allMessages(t, ctx, f.messages, s, "alice") {
			stored[m.Seq] = true
		}
		for _, seq := range acked[s] {
			if !stored[seq] {
				t.Errorf("%s: acknowledged append (seq %d) is not stored", s, seq)
			}
		}
	}
}

// EnvRestartCommand names a shell command that restarts the test server.
// scripts/test.sh sets it, for a separate run of TestServerRestartUnderLoad
// alone, when it started a private server (restarting a shared one would
// break other tests).
const EnvRestartCommand = "STRATA_TEST_PG_RESTART"

// TestServerRestartUnderLoad restarts PostgreSQL while workers append pairs
// and load tails: calls fail with errors while it is down, nothing
// half-written remains, and calls succeed again on their own once it is
// back.
func TestServerRestartUnderLoad(t *testing.T) {
	restart := os.Getenv(EnvRestartCommand)
	if restart == "" {
		t.Skip(EnvRestartCommand + " is not set: scripts/test.sh runs this test on its private server")
	}
	f := newFixture(t)
	ctx := testCtx(t)
	var (
		stop          atomic.Bool
		ok, failed    atomic.Int64
		mu            sync.Mutex
		sampleErr     error
		lastOK        atomic.Int64 // unix nanos of the latest success
		wg            sync.WaitGroup
		sessions      = []string{"r0", "r1"}
		restartedAt   time.Time
		firstOKAfter  time.Duration
		restartOutput []byte
	)
	for _, s := range sessions {
		ensureSession(t, ctx, f.messages, s, "alice")
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				s := sessions[(w+i)%len(sessions)]
				_, err := f.messages.Append(ctx, s, "alice", user(fmt.Sprintf("q%d-%d", w, i)), assistant(fmt.Sprintf("a%d-%d", w, i)))
				if err == nil {
					_, err = f.messages.Tail(ctx, s, "alice", 10)
				}
				if err != nil {
					if !strings.HasPrefix(err.Error(), "db: ") || !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("error not wrapped as an outage: %v", err)
					}
					failed.Add(1)
					mu.Lock()
					sampleErr = err
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				ok.Add(1)
				lastOK.Store(time.Now().UnixNano())
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	restartedAt = time.Now()
	out, err := exec.CommandContext(ctx, "bash", "-c", restart).CombinedOutput()
	restartOutput = out
	if err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("restart command failed: %v\n%s", err, restartOutput)
	}
	back := time.Now()
	// Wait for the workers to succeed again after the restart.
	for time.Since(back) < 20*time.Second {
		if l := lastOK.Load(); l > back.UnixNano() {
			firstOKAfter = time.Unix(0, l).Sub(back)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("restart took %v; calls ok %d, failed %d; first success %v after the server was back; sample error: %v",
		back.Sub(restartedAt).Round(time.Millisecond), ok.Load(), failed.Load(), firstOKAfter, sampleErr)
	if failed.Load() == 0 {
		t.Error("no call failed while the server restarted")
	}
	if lastOK.Load() <= back.UnixNano() {
		t.Fatal("no call succeeded after the server came back")
	}
	for _, s := range sessions {
		assertConsistent(t, ctx, f, s)
	}
}

// TestPooledConnectionsEndedByServerAreNotHandedOut: connections the
// server ended while they sat idle in the pool (a restart, a failover,
// pg_terminate_backend) are discarded before a statement runs on them, so
// the first append afterwards — which is never re-run on another
// connection — succeeds instead of failing on a dead connection. Several
// rounds, with every pooled connection ended each time.
func TestPooledConnectionsEndedByServerAreNotHandedOut(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	d := dbtest.Open(t, s.URL)
	ms := db.NewMessageStore(d)
	ctx := testCtx(t)
	mustAppend(t, ctx, ms, "s", "alice", user("first"))
	for round := range 5 {
		// Fill the pool with idle connections.
		var wg sync.WaitGroup
		for range dbtest.MaxIdleConns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := d.ExecContext(ctx, "SELECT pg_sleep(0.02)"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := terminateBackends(t, ctx, s.Name); n == 0 {
			t.Fatalf("round %d: no pooled connection to end", round)
		}
		// The server's goodbye reaches the client sockets.
		for deadline := time.Now().Add(5 * time.Second); ; {
			var alive int
			if err := dbtest.Admin(t).GetContext(ctx, &alive, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, s.Name); err != nil {
				t.Fatal(err)
			}
			if alive == 0 || time.Now().After(deadline) {
				break
			}

		}
		if _, err := ms.Append(ctx, "s", "alice", user(fmt.Sprint("after round ", round))); err != nil {
			t.Fatalf("round %d: the first append after the server ended the pooled connections: %v", round, err)
		}
	}
}

// appendKilledInTrigger makes an insert of a message "slow" sleep in a
// trigger on strata_messages, starts ms.Append of a turn ("q1", "slow")
// in session "s" as alice, waits until its backend sleeps in that trigger,
// terminates the schema's backends and checks that Append returns a
// wrapped connection error marked store.ErrUnavailable. The trigger stays
// (the caller drops strata_test_slow).
func appendKilledInTrigger(t *testing.T, ctx context.Context, f *fixture, ms *db.MessageStore) {
	t.Helper()
	for _, q := range []string{
		`CREATE FUNCTION strata_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   IF NEW.content = 'slow' THEN PERFORM pg_sleep(30); END IF;
		   RETURN NEW;
		 END $$`,
		`CREATE TRIGGER strata_test_slow BEFORE INSERT ON strata_messages
		 FOR EACH ROW EXECUTE FUNCTION strata_test_slow()`,
	} {
		if _, err := f.d.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := ms.Append(ctx, "s", "alice", user("q1"), assistant("slow"))
		done <- err
	}()
	// Wait until the append is inside its statement, sleeping in the
	// trigger, then kill its backend.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := dbtest.Admin(t).GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event = 'PgSleep'`, f.schema.Name); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the append never reached the trigger")
		}
		time.Sleep(10 * time.Millisecond)
	}
	terminateBackends(t, ctx, f.schema.Name)
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Append did not return after its backend was terminated")
	}
	if err == nil || !strings.HasPrefix(err.Error(), "db: append") || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Append = %v, want a wrapped connection error marked ErrUnavailable", err)
	}
	t.Logf("surfaced error: %v", err)
}
