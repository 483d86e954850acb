package main

import (
	"testing"
	"unicode/utf8"
)

// FuzzTranscriptParsers feeds arbitrary bytes to every transcript parser:
// they return a transcript or an error, never panic, and every message they
// return is storable.
func FuzzTranscriptParsers(f *testing.F) {
	for _, seed := range []string{
		`{"role":"user","content":"hi"}` + "\n" + `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}` + "\n" + `{"role":"tool","tool_call_id":"c1","content":"ok"}`,
		`[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"}]}]`,
		`[{"sample_id":"c","conversation":{"speaker_a":"A","speaker_b":"B","session_1":[{"speaker":"A","dia_id":"D1:1","text":"hey"}]}}]`,
		`[{"task_id":0,"trial":0,"reward":1,"traj":[{"role":"user","content":"book"}],"info":{}}]`,
		`{"role":"user","metadata":{"model_variant":"x"},"content":"\u0000"}`,
		"{\"role\":\"user\",\"content\":\"\xff\"}",
		`{"role":`, `[`, ``, "\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(tr transcript) {
			for _, m := range tr.Msgs {
				if err := m.Validate(0); err != nil {
					t.Fatalf("parser returned an unstorable message %+v: %v", m, err)
				}
			}
			if !utf8.ValidString(tr.System) {
				t.Fatalf("system prompt is not UTF-8: %q", tr.System)
			}
		}
		if tr, err := parseJSONL("f.jsonl", data, 1<<20); err == nil {
			check(tr)
		}
		if tr, err := parseJSONMessages("f.json", data, 1<<20); err == nil {
			check(tr)
		}
		if trs, err := parseLoCoMo("f.json", data, ""); err == nil {
			for _, tr := range trs {
				check(tr)
			}
		}
		if trs, err := parseTauBench("f.json", data, "", 1<<20); err == nil {
			for _, tr := range trs {
				check(tr)
			}
		}
		_, _ = detectFormat("f", data)
	})
}
