package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
)

// The erasure, export and import endpoints: a secret said early is erased
// by seq and is gone from the history, the context and the export; a fact
// is erased by key; the export imports back (as the caller) and refuses an
// id in use; other users get 404 everywhere.
func TestForgetExportImportHTTP(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg}.start(t)
			id := ts.create(keyAlice, nil)
			ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("Hello, I need help with a delivery.", "Sure."), nil)
			ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("My email is zed.secret@example.com, thanks.", "Noted."), nil)
			ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("My order number is #88123.", "Thank you."), nil)
			for i := range 14 {
				ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn(fmt.Sprintf("Where is parcel number %d?", i), "On its way."), nil)
			}
			ts.flush()
			ts.must(200, "GET", "/v1/sessions/"+id+"/context", keyAlice, nil, nil)
			ts.flush()
			var snap memory.Snapshot
			ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, &snap)
			raw, _ := json.Marshal(snap)
			if !strings.Contains(string(raw), "zed.secret@example.com") || snap.Summary == nil {
				t.Fatalf("export before the erasure lacks the secret or the summary: %s", raw)
			}
			var secret int64
			for _, m := range snap.Messages {
				if strings.Contains(m.Content, "zed.secret") {
					secret = m.Seq
				}
			}
			// Other users, unknown seqs and bad input.
			ts.must(404, "DELETE", fmt.Sprintf("/v1/sessions/%s/messages/%d", id, secret), keyBob, nil, nil)
			ts.must(404, "GET", "/v1/sessions/"+id+"/export", keyBob, nil, nil)
			if e := ts.must(404, "DELETE", fmt.Sprintf("/v1/sessions/%s/messages?seq=%d&seq=%d", id, secret, secret+100000), keyAlice, nil, nil).errorOf(t); e.Code != "message_not_found" {
				t.Fatalf("unknown seq: code %q", e.Code)
			}
			ts.must(400, "DELETE", "/v1/sessions/"+id+"/messages/zero", keyAlice, nil, nil)
			ts.must(400, "DELETE", "/v1/sessions/"+id+"/messages", keyAlice, nil, nil)
			ts.must(204, "DELETE", fmt.Sprintf("/v1/sessions/%s/messages/%d", id, secret), keyAlice, nil, nil)
			for _, path := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/context", "/v1/sessions/" + id + "/export"} {
				if r := ts.must(200, "GET", path, keyAlice, nil, nil); bytes.Contains(r.body, []byte("zed.secret")) {
					t.Errorf("GET %s after the erasure holds the secret: %s", path, r.body)
				}
			}
			// Batch form.
			ts.must(204, "DELETE", fmt.Sprintf("/v1/sessions/%s/messages?seq=%d&seq=%d", id, snap.Messages[0].Seq, snap.Messages[1].Seq), keyAlice, nil, nil)

			var after memory.Snapshot
			ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, &after)
			if len(after.Messages) != len(snap.Messages)-3 || after.Messages[0].Content != "Noted." {
				t.Fatalf("%d messages after erasing 3 of %d", len(after.Messages), len(snap.Messages))
			}
			if after.Summary == nil || len(after.Summary.Facts) == 0 {
				t.Fatalf("no facts left to erase: %+v", after.Summary)
			}
			key := after.Summary.Facts[0].Key
			value := after.Summary.Facts[0].Value
			ts.must(404, "DELETE", "/v1/sessions/"+id+"/facts/no_such_fact", keyAlice, nil, nil)
			ts.must(404, "DELETE", "/v1/sessions/"+id+"/facts/"+key, keyBob, nil, nil)
			ts.must(204, "DELETE", "/v1/sessions/"+id+"/facts/"+key, keyAlice, nil, nil)
			var ctxResp ContextResponseForTest
			ts.must(200, "GET", "/v1/sessions/"+id+"/context", keyAlice, nil, &ctxResp)
			for _, m := range ctxResp.Messages {
				if m.Role == "system" && strings.Contains(m.Content, value) {
					t.Errorf("the erased fact %s = %s is still in the context: %s", key, value, m.Content)
				}
			}

			// Export, then import under another id, as bob: the session is bob's.
			var final memory.Snapshot
			ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, &final)
			ts.must(409, "POST", "/v1/sessions/import", keyAlice, final, nil)
			final.SessionID = "copy-" + id[:8]
			var imp importResponse
			r := ts.must(201, "POST", "/v1/sessions/import", keyBob, final, &imp)
			if imp.ID != final.SessionID || imp.Stored != len(final.Messages) || r.header.Get("Location") != "/v1/sessions/"+final.SessionID {
				t.Fatalf("import response %+v, Location %q", imp, r.header.Get("Location"))
			}
			ts.must(404, "GET", "/v1/sessions/"+final.SessionID, keyAlice, nil, nil)
			var a, b ContextResponseForTest
			ts.must(200, "GET", "/v1/sessions/"+id+"/context", keyAlice, nil, &a)
			ts.must(200, "GET", "/v1/sessions/"+final.SessionID+"/context", keyBob, nil, &b)
			if !reflect.DeepEqual(a.Messages, b.Messages) {
				t.Errorf("imported context differs:\n got %+v\nwant %+v", b.Messages, a.Messages)
			}
			// Invalid snapshots write nothing.
			bad := final
			bad.SessionID, bad.Version = "bad-version", 7
			ts.must(400, "POST", "/v1/sessions/import", keyBob, bad, nil)
			ts.must(404, "GET", "/v1/sessions/bad-version", keyBob, nil, nil)
			ts.must(400, "POST", "/v1/sessions/import", keyBob, `{"version":1,"session_id":"x","user_id":"","messages":[],"extra":1}`, nil)
		})
	}
}

// ContextResponseForTest is the part of a context response the test reads.
type ContextResponseForTest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// openapi.json's Snapshot schemas are the repository's JSON Schema of
// Snapshot (memory/snapshot.schema.json), with references rewritten to
// the components: one schema, two places that must agree.
func TestOpenAPISnapshotIsTheSchemaFile(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../memory/snapshot.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("#/$defs/"), []byte("#/components/schemas/"))
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for k, v := range file {
		if k != "$schema" && k != "$id" && k != "$defs" && k != "title" {
			want[k] = v
		}
	}
	if !reflect.DeepEqual(doc.Components.Schemas["Snapshot"], want) {
		t.Errorf("openapi.json's Snapshot differs from memory/snapshot.schema.json")
	}
	for name, def := range file["$defs"].(map[string]any) {
		if !reflect.DeepEqual(doc.Components.Schemas[name], def) {
			t.Errorf("openapi.json's %s differs from memory/snapshot.schema.json", name)
		}
	}
}
