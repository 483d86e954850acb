package server

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPI checks that openapi.json parses, documents exactly the routes
// the mux registers, that every reference resolves, and that it is what
// /openapi.json serves.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(openAPISpec))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	paths, _ := doc["paths"].(map[string]any)

	ts := stack{}.start(t)
	documented := map[string]bool{}
	for p, item := range paths {
		for m := range item.(map[string]any) {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, rt := range ts.srv.routes {
		key := rt.method + " " + rt.pattern
		registered[key] = true
		if !documented[key] {
			t.Errorf("route %s is not in openapi.json", key)
			continue
		}
		op := paths[rt.pattern].(map[string]any)[strings.ToLower(rt.method)].(map[string]any)
		responses, _ := op["responses"].(map[string]any)
		if len(responses) == 0 || op["operationId"] == nil || op["summary"] == nil {
			t.Errorf("%s: no responses, operationId or summary", key)
		}
		if strings.HasPrefix(rt.pattern, "/v1/") {
			if responses["401"] == nil || responses["500"] == nil || responses["503"] == nil {
				t.Errorf("%s: 401, 500 or 503 not documented", key)
			}
			if _, open := op["security"]; open {
				t.Errorf("%s: an API route must not be public", key)
			}
		} else if sec, ok := op["security"].([]any); !ok || len(sec) != 0 {
			t.Errorf("%s: a public route must say security: []", key)
		}
		if strings.Contains(rt.pattern, "{id}") {
			if responses["400"] == nil || responses["404"] == nil {
				t.Errorf("%s: 400 or 404 not documented", key)
			}
			params, _ := json.Marshal(op["parameters"])
			if !strings.Contains(string(params), "#/components/parameters/SessionID") {
				t.Errorf("%s: the id parameter is not documented", key)
			}
		}
	}
	var stale []string
	for key := range documented {
		if !registered[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("openapi.json documents routes the server does not have: %v", stale)
	}

	// Every $ref resolves.
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !resolves(doc, ref) {
					t.Errorf("unresolved $ref %s", ref)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)

	r := ts.must(200, "GET", "/openapi.json", "", nil, nil)
	if !bytes.Equal(r.body, openAPISpec) || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Error("/openapi.json does not serve the embedded document")
	}
	if !bytes.Equal(OpenAPI(), openAPISpec) {
		t.Error("OpenAPI() differs")
	}
}

func resolves(doc map[string]any, ref string) bool {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
