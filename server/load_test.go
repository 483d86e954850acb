package server

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLoad drives the server with 50 concurrent clients over loopback for
// a bounded time — 3 s by default, 300 ms under -short, 20 s with
// STRATA_LOAD_TEST=1 — and reports
// requests/s and latency percentiles. Pairs of clients share a session, so
// appends race on it. It asserts no 5xx, no transport error, and no lost or
// interleaved message; it makes no timing assertion.
func TestLoad(t *testing.T) {
	runLoad(t, stack{})
}

// TestLoadPostgres is TestLoad against PostgreSQL stores (skipped without a
// database; see db/dbtest).
func TestLoadPostgres(t *testing.T) {
	runLoad(t, stack{pg: true})
}

func runLoad(t *testing.T, st stack) {
	const clients = 50
	duration := 3 * time.Second
	switch {
	case os.Getenv("STRATA_LOAD_TEST") == "1":
		duration = 20 * time.Second
	case testing.Short():
		duration = 300 * time.Millisecond // the races and checks, briefly
	}
	ts := st.start(t)
	// One session per pair of clients, half of them bob's.
	sessions := make([]string, clients/2)
	for i := range sessions {
		key := keyAlice
		if (2*i)%4 >= 2 {
			key = keyBob
		}
		sessions[i] = ts.create(key, nil)
	}

	type result struct {
		latencies []time.Duration
		appended  int // turns appended (2 messages each)
		byStatus  map[int]int
		errs      []error
	}
	results := make([]result, clients)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[c]
			res.byStatus = map[int]int{}
			session := sessions[c/2]
			key := keyAlice
			if c%4 >= 2 { // half the sessions belong to bob
				key = keyBob
			}
			call := func(method, path string, body any) (reply, bool) {
				t0 := time.Now()
				r, err := ts.try(context.Background(), method, path, key, body)
				if err != nil {
					res.errs = append(res.errs, err)
					return r, false
				}
				res.latencies = append(res.latencies, time.Since(t0))
				res.byStatus[r.status]++
				return r, true
			}
			for i := 0; ctx.Err() == nil; i++ {
				body := map[string]any{"turn": map[string]string{
					"user":          fmt.Sprintf("c%d-t%d user: what about the order #L-%d and $%d.99?", c, i, c, i),
					"assistant":     fmt.Sprintf("c%d-t%d assistant: noted.", c, i),
					"model_variant": "arco",
				}}
				if r, ok := call("POST", "/v1/sessions/"+session+"/messages", body); ok && r.status == 200 {
					res.appended++
				}
				switch {
				case i%5 == 4:
					call("GET", "/v1/sessions/"+session+"/context?budget=2000", nil)
				case i%10 == 7:
					call("GET", "/v1/sessions/"+session+"?limit=5", nil)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	var all []time.Duration
	statuses := map[int]int{}
	for c, res := range results {
		all = append(all, res.latencies...)
		for s, n := range res.byStatus {
			statuses[s] += n
		}
		for _, err := range res.errs {
			t.Errorf("client %d: %v", c, err)
		}
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	t.Logf("load: %d clients, %s, %d requests, %.0f requests/s, p50 %s, p99 %s, max %s, statuses %v, folds %d",
		clients, elapsed.Round(time.Millisecond), len(all), float64(len(all))/elapsed.Seconds(),
		pct(0.50), pct(0.99), pct(1), statuses, ts.srv.mgr.Stats().Folds)
	for s, n := range statuses {
		if s >= 500 {
			t.Errorf("%d responses with status %d", n, s)
		}
		if s != 200 {
			t.Errorf("%d unexpected responses with status %d", n, s)
		}
	}

	// No message lost, none interleaved: each session holds exactly the
	// turns its two clients had acknowledged, every user message directly
	// followed by its answer.
	ts.flush()
	for sIdx := 0; sIdx < clients/2; sIdx++ {
		key := keyAlice
		if (2*sIdx)%4 >= 2 {
			key = keyBob
		}
		want := 2 * (results[2*sIdx].appended + results[2*sIdx+1].appended)
		var msgs []storedMessage
		for after := int64(0); ; {
			var page wireSession
			ts.must(200, "GET", fmt.Sprintf("/v1/sessions/%s?limit=1000&after_seq=%d", sessions[sIdx], after), key, nil, &page)
			msgs = append(msgs, page.Messages...)
			if page.MessageCount != want {
				t.Fatalf("session load-%d: %d messages stored, %d acknowledged", sIdx, page.MessageCount, want)
			}
			if page.NextAfterSeq == nil {
				break
			}
			after = *page.NextAfterSeq
		}
		if len(msgs) != want {
			t.Fatalf("session load-%d: %d messages read, %d acknowledged", sIdx, len(msgs), want)
		}
		for i := 0; i+1 < len(msgs); i += 2 {
			u, a := msgs[i], msgs[i+1]
			var c, n int
			if _, err := fmt.Sscanf(u.Content, "c%d-t%d user", &c, &n); err != nil || u.Role != "user" || a.Role != "assistant" ||
				a.Content != fmt.Sprintf("c%d-t%d assistant: noted.", c, n) {
				t.Fatalf("session load-%d: turn at %d is split or interleaved: %q / %q", sIdx, i, u.Content, a.Content)
			}
		}
	}
}
