package server

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
)

// importSnapshot is a minimal valid snapshot of id: one turn.
func importSnapshot(id string) map[string]any {
	return map[string]any{"version": 1, "session_id": id, "user_id": "", "messages": []map[string]any{
		{"seq": 1, "role": "user", "content": "Hello there.", "created_at": "2026-01-02T03:04:05Z"},
		{"seq": 2, "role": "assistant", "content": "Hi.", "created_at": "2026-01-02T03:04:06Z"},
	}}
}

// Import does not tell whether another user's session id exists: bob
// importing alice's id gets the very 404 (status, code, message) that
// every other endpoint gives him for her session, and for an id nobody
// has; alice importing her own id again gets 409. Neither writes
// anything: alice's session is unchanged.
func TestImportDoesNotRevealOtherUsersIDs(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg}.start(t)
			id := "imported-alice-1"
			ts.must(201, "POST", "/v1/sessions/import", keyAlice, importSnapshot(id), nil)
			if e := ts.must(409, "POST", "/v1/sessions/import", keyAlice, importSnapshot(id), nil).errorOf(t); e.Code != "session_exists" {
				t.Fatalf("alice re-importing her own id: code %q", e.Code)
			}
			imp := ts.must(404, "POST", "/v1/sessions/import", keyBob, importSnapshot(id), nil).errorOf(t)
			get := ts.must(404, "GET", "/v1/sessions/"+id, keyBob, nil, nil).errorOf(t)
			none := ts.must(404, "GET", "/v1/sessions/nobody-has-this-id", keyBob, nil, nil).errorOf(t)
			for _, e := range []errorBody{get, none} {
				if imp.Code != e.Code || imp.Error != e.Error {
					t.Errorf("bob importing alice's id: %q %q; another endpoint: %q %q", imp.Code, imp.Error, e.Code, e.Error)
				}
			}
			var got struct {
				MessageCount int `json:"message_count"`
			}
			ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &got)
			if got.MessageCount != 2 {
				t.Fatalf("alice's session holds %d messages, want 2", got.MessageCount)
			}
			// A free id is bob's to take, and then his own conflict is 409.
			ts.must(201, "POST", "/v1/sessions/import", keyBob, importSnapshot("imported-bob-1"), nil)
			ts.must(409, "POST", "/v1/sessions/import", keyBob, importSnapshot("imported-bob-1"), nil)
			ts.must(404, "POST", "/v1/sessions/import", keyAlice, importSnapshot("imported-bob-1"), nil)
		})
	}
}

// withMessage is importSnapshot(id) with its first message changed by set.
func withMessage(id string, set func(m map[string]any)) map[string]any {
	snap := importSnapshot(id)
	set(snap["messages"].([]map[string]any)[0])
	return snap
}

// Timestamps are kept as both stores keep them, in UTC to the microsecond:
// finer digits are cut, not rounded (9999-12-31T23:59:59.9999999Z stays in
// year 9999, where PostgreSQL would round it to year 10000 and break every
// later read), and a time outside the years 1 to 9999 once in UTC
// (…T23:00:00-05:00 on the last day of 9999, year 0) is refused with 400
// at import, in a message or in the summary, writing nothing. After the
// imports, the session page, the export and the listing answer 200.
func TestImportTimestampsOutsideStoresRefused(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg}.start(t)
			refused := map[string]map[string]any{
				"offset-past-9999": withMessage("t-offset", func(m map[string]any) { m["created_at"] = "9999-12-31T23:00:00-05:00" }),
				"year-zero":        withMessage("t-zero", func(m map[string]any) { m["created_at"] = "0000-06-01T00:00:00Z" }),
				"summary-created": func() map[string]any {
					s := importSnapshot("t-summary")
					s["summary"] = map[string]any{"narrative": "n", "facts": []any{}, "up_to_seq": 1, "created_at": "9999-12-31T20:00:00-10:00"}
					return s
				}(),
				"fact-extracted": func() map[string]any {
					s := importSnapshot("t-fact")
					s["summary"] = map[string]any{"narrative": "n", "up_to_seq": 1, "facts": []any{
						map[string]any{"key": "k", "value": "v", "category": "ENTITY", "extracted_at": "9999-12-31T23:30:00-01:00"}}}
					return s
				}(),
			}
			for name, snap := range refused {
				e := ts.must(400, "POST", "/v1/sessions/import", keyAlice, snap, nil).errorOf(t)
				if !strings.Contains(e.Error, "9999") {
					t.Errorf("%s: the error %q does not say which times are kept", name, e.Error)
				}
				ts.must(404, "GET", "/v1/sessions/"+snap["session_id"].(string), keyAlice, nil, nil)
			}
			kept := map[string]string{
				"9999-12-31T23:59:59.9999999Z":        "9999-12-31T23:59:59.999999Z",
				"2026-01-02T03:04:05.1234567+02:00":   "2026-01-02T01:04:05.123456Z",
				"0001-01-01T00:00:00.0000001Z":        "0001-01-01T00:00:00Z",
				"2026-03-04T05:06:07.000000999-05:00": "2026-03-04T10:06:07Z",
			}
			i := 0
			for in, want := range kept {
				i++
				id := fmt.Sprintf("t-kept-%d", i)
				ts.must(201, "POST", "/v1/sessions/import", keyAlice, withMessage(id, func(m map[string]any) { m["created_at"] = in }), nil)
				var page struct {
					Messages []struct {
						CreatedAt string `json:"created_at"`
					} `json:"messages"`
				}
				ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &page)
				if len(page.Messages) == 0 || page.Messages[0].CreatedAt != want {
					t.Errorf("created_at %s: page shows %+v, want %s", in, page.Messages, want)
				}
				var snap memory.Snapshot
				ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, &snap)
				if got := snap.Messages[0].CreatedAt.Format(time.RFC3339Nano); got != want {
					t.Errorf("created_at %s: export has %s, want %s", in, got, want)
				}
			}
			ts.must(200, "GET", "/v1/sessions?limit=100", keyAlice, nil, nil)
		})
	}
}

// A row written with a time out of range before the check (here set by
// SQL: year 10000, as PostgreSQL rounded 9999-12-31T23:59:59.9999999Z)
// breaks neither its session's page, export and context nor its user's
// listing: the stores give back the nearest time JSON can write. Other
// sessions are unaffected.
func TestOutOfRangeRowDoesNotBreakReads(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ts := stack{store: db.NewMessageStore(d), sums: db.NewSummaryStore(d), idx: db.NewCatalogIndex(d)}.start(t)
	ts.must(201, "POST", "/v1/sessions/import", keyAlice, importSnapshot("legacy"), nil)
	ts.must(201, "POST", "/v1/sessions/import", keyAlice, importSnapshot("fine"), nil)
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE strata_messages SET created_at = '10000-01-01 00:00:00+00' WHERE session_id = 'legacy'`,
		`UPDATE strata_sessions SET last_activity = '10000-01-01 00:00:00+00' WHERE session_id = 'legacy'`,
	} {
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"legacy", "fine"} {
		ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, nil)
		ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, nil)
		ts.must(200, "GET", "/v1/sessions/"+id+"/context", keyAlice, nil, nil)
	}
	var list struct {
		Sessions []struct {
			ID           string `json:"id"`
			LastActivity string `json:"last_activity"`
		} `json:"sessions"`
	}
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("listing: %+v", list.Sessions)
	}
}

// Import holds a snapshot to what an append accepts: a missing messages
// array, a message without created_at, a metadata key with the reserved
// strata. prefix, a tool result answering no call made before it (or
// only after it) are refused with 400 and write nothing; a tool result
// answering an earlier call is fine.
func TestImportValidatesAsStrictlyAsAppend(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg}.start(t)
			call := map[string]any{"seq": 1, "role": "assistant", "content": "", "created_at": "2026-01-02T03:04:05Z",
				"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}}
			result := func(seq int, id string) map[string]any {
				return map[string]any{"seq": seq, "role": "tool", "content": "42", "tool_call_id": id, "created_at": "2026-01-02T03:04:06Z"}
			}
			bad := map[string]map[string]any{
				"no-messages":   {"version": 1, "session_id": "v-none", "user_id": ""},
				"no-created-at": withMessage("v-created", func(m map[string]any) { delete(m, "created_at") }),
				"reserved-meta": withMessage("v-meta", func(m map[string]any) { m["metadata"] = map[string]string{"strata.title": "x"} }),
				"orphan-result": {"version": 1, "session_id": "v-orphan", "user_id": "", "messages": []any{result(1, "call_9")}},
				"result-first": {"version": 1, "session_id": "v-first", "user_id": "", "messages": []any{result(1, "call_1"),
					func() map[string]any { c := map[string]any{}; maps.Copy(c, call); c["seq"] = 2; return c }()}},
			}
			for name, snap := range bad {
				r := ts.do("POST", "/v1/sessions/import", keyAlice, snap)
				if r.status != 400 {
					t.Errorf("%s: %s, want 400", name, r)
					continue
				}
				ts.must(404, "GET", "/v1/sessions/"+snap["session_id"].(string), keyAlice, nil, nil)
			}
			ok := map[string]any{"version": 1, "session_id": "v-ok", "user_id": "", "messages": []any{call, result(2, "call_1")}}
			ts.must(201, "POST", "/v1/sessions/import", keyAlice, ok, nil)
			ts.must(201, "POST", "/v1/sessions/import", keyAlice, map[string]any{"version": 1, "session_id": "v-empty", "user_id": "", "messages": []any{}}, nil)
		})
	}
}

// An import's body is bounded (8 × the request body limit, 8 MiB by
// default): a larger snapshot is refused with 413 before anything is
// written; one within the bound is imported.
func TestImportBodyBound(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			testImportBodyBound(t, stack{pg: pg}.start(t))
		})
	}
}

func testImportBodyBound(t *testing.T, ts *testServer) {
	big := func(id string, n int) map[string]any {
		var msgs []map[string]any
		for i := range n {
			msgs = append(msgs, map[string]any{"seq": i + 1, "role": "user", "created_at": "2026-01-02T03:04:05Z",
				"content": strings.Repeat("y", 1000<<10)})
		}
		return map[string]any{"version": 1, "session_id": id, "user_id": "", "messages": msgs}
	}
	if e := ts.must(413, "POST", "/v1/sessions/import", keyAlice, big("too-big", 9), nil).errorOf(t); e.Code != "body_too_large" {
		t.Fatalf("code %q", e.Code)
	}
	ts.must(404, "GET", "/v1/sessions/too-big", keyAlice, nil, nil)
	// Four imports at the bound at once all complete (each in one
	// transaction, within the statement timeout).
	var wg sync.WaitGroup
	replies, errs := make([]reply, 4), make([]error, 4)
	for i := range replies {
		wg.Go(func() {
			replies[i], errs[i] = ts.try(context.Background(), "POST", "/v1/sessions/import", keyAlice, big(fmt.Sprintf("fits-%d", i), 7))
		})
	}
	wg.Wait()
	for i, r := range replies {
		if errs[i] != nil || r.status != 201 {
			t.Errorf("concurrent import %d: %s, %v", i, r, errs[i])
		}
	}
}
