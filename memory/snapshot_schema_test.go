package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// snapshotSchema compiles memory/snapshot.schema.json.
func snapshotSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile("snapshot.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("snapshot.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("snapshot.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validate checks the JSON of v against the schema.
func validate(t *testing.T, s *jsonschema.Schema, v any) error {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(doc)
}

// Snapshots that Export produces — tool calls, metadata, a summary with
// provenance, a forgotten value — validate against the repository's JSON
// Schema, and the schema refuses what Import refuses.
func TestSnapshotSchema(t *testing.T) {
	ctx := context.Background()
	schema := snapshotSchema(t)
	f := newFixture(t, hierConfig())
	f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		res := countingResult(req)
		res.Facts = append(res.Facts, summary.Fact{Key: "email", Value: "a@example.com", Category: summary.Entity, Stated: true},
			summary.Fact{Key: "city", Value: "Paris", Category: summary.Entity})
		return res, nil
	})
	empty, err := func() (*memory.Snapshot, error) {
		if err := f.mgr.Create(ctx, "empty", "alice"); err != nil {
			return nil, err
		}
		return f.mgr.Export(ctx, "empty", "alice")
	}()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.SaveMessages(ctx, "s", "", toolTurn()...); err != nil {
		t.Fatal(err)
	}
	for range 15 {
		if err := f.mgr.SaveTurn(ctx, "s", "", "more", "answers"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.mgr.Append(ctx, "s", "", false, store.Message{Role: store.RoleAssistant, Content: "v",
		Metadata: map[string]string{store.MetadataModelVariant: "small"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgr.Load(ctx, "s", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.ForgetFact(ctx, "s", "", "email"); err != nil {
		t.Fatal(err)
	}
	full, err := f.mgr.Export(ctx, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	if full.Summary == nil || len(full.Summary.Forgotten) == 0 || len(full.Summary.Facts) == 0 {
		t.Fatalf("the snapshot lacks a summary with facts and a forgotten value: %+v", full.Summary)
	}
	for name, s := range map[string]*memory.Snapshot{"empty": empty, "full": full} {
		if err := validate(t, schema, s); err != nil {
			t.Errorf("%s snapshot does not validate: %v", name, err)
		}
	}
	// What Import refuses, the schema refuses too.
	var generic map[string]any
	raw, _ := json.Marshal(full)
	for name, mut := range map[string]func(m map[string]any){
		"no session id": func(m map[string]any) { delete(m, "session_id") },
		"version 2":     func(m map[string]any) { m["version"] = 2 },
		"unknown field": func(m map[string]any) { m["extra"] = true },
		"bad role":      func(m map[string]any) { m["messages"].([]any)[0].(map[string]any)["role"] = "robot" },
		"bad category": func(m map[string]any) {
			m["summary"].(map[string]any)["facts"].([]any)[0].(map[string]any)["category"] = "X"
		},
	} {
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		mut(generic)
		if err := validate(t, schema, generic); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		b, _ := json.Marshal(generic)
		var s memory.Snapshot
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&s); err == nil && !strings.Contains(name, "unknown") {
			if err := s.Validate(0); err == nil {
				t.Errorf("%s: Validate accepts it", name)
			}
		}
	}
}
