package server

import (
	"fmt"
	"testing"
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
