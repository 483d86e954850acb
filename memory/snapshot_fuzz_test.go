package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// FuzzImportSnapshot feeds arbitrary JSON to Import: it never panics,
// and a snapshot it accepts exports back with the same messages.
func FuzzImportSnapshot(f *testing.F) {
	f.Add([]byte(`{"version":1,"session_id":"s","user_id":"u","messages":[{"seq":1,"role":"user","content":"hi","created_at":"2024-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"version":1,"session_id":"s","user_id":"u","messages":[{"seq":3,"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"created_at":"2024-01-01T00:00:00Z"},{"seq":4,"role":"tool","content":"r","tool_call_id":"c","created_at":"2024-01-01T00:00:01Z"}],"summary":{"narrative":"n.","facts":[{"key":"k","value":"v","category":"ENTITY","first_seq":3,"last_seq":9}],"up_to_seq":3}}`))
	f.Add([]byte(`{"version":1,"session_id":"s","messages":[{"seq":2,"role":"user"},{"seq":1,"role":"user"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var snap memory.Snapshot
		if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&snap); err != nil {
			return
		}
		ctx := context.Background()
		mgr, err := memory.NewManager(memory.NewInMemoryStore(), hierConfig(), memory.WithSummaries(summary.NewInMemoryStore(0), &fakeSummarizer{}))
		if err != nil {
			t.Fatal(err)
		}
		defer mgr.Close()
		if err := mgr.Import(ctx, &snap); err != nil {
			return
		}
		back, err := mgr.Export(ctx, snap.SessionID, snap.UserID)
		if err != nil {
			t.Fatalf("export after a successful import: %v", err)
		}
		if len(back.Messages) != len(snap.Messages) {
			t.Fatalf("%d messages exported, %d imported", len(back.Messages), len(snap.Messages))
		}
		for i := range back.Messages {
			if back.Messages[i].Content != snap.Messages[i].Content || back.Messages[i].Role != snap.Messages[i].Role {
				t.Fatalf("message %d differs: %+v, want %+v", i, back.Messages[i], snap.Messages[i])
			}
		}
	})
}
