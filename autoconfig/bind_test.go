package autoconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
)

// TestBindingKeepsValueRules: koanf's Unmarshal binds every value as the
// key table's types say — YAML numbers written as floats or strings,
// durations in Go syntax or milliseconds, enums, lists as YAML lists or
// comma-separated strings — and a later source replaces only the keys it
// sets, an empty list included.
func TestBindingKeepsValueRules(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "values.yaml", `arc.reactor.memory:
  summary:
    trigger-message-count: 30.0
    recent-message-count: "12"
  store:
    pinned-fact-keys: [order_id, " case_* ", ""]
    failure-cooldown: 250
  policy:
    name: chunked
    fold-token-fraction: 1
  shared-session-prefixes: [slack-]
arc.reactor.llm.max-output-tokens: 2048
`)
	cfg, err := LoadWith(LoadOptions{Files: []string{p}, Environ: []string{
		"ARC_REACTOR_MEMORY_FOLD_WAIT=1m30s",
		"ARC_REACTOR_MEMORY_SHARED_SESSION_PREFIXES=",         // NAME= on a list: unset, the file's value stays
		"ARC_REACTOR_MEMORY_STORE_MAX_FACTS=",                 // NAME= on a number: unset
		"ARC_REACTOR_MEMORY_SUMMARIZER_MODEL=",                // NAME= on a string: the empty string
		"ARC_REACTOR_MEMORY_SUMMARIZER_JSON_MODE=off",         // YAML 1.1 booleans
		"ARC_REACTOR_MEMORY_STORE_MAX_SUMMARIES= 42 ",         // spaces around numbers
		"ARC_REACTOR_MEMORY_POLICY_SAFETY_TURNS=7",            // a plain integer
		"ARC_REACTOR_MEMORY_POLICY_FOLD_MODE= full ",          // strings are trimmed
		"ARC_REACTOR_MEMORY_SUMMARY_MAX_NARRATIVE_TOKENS=300", // one narrative cap
	}, Overrides: []string{keyPinnedFactKeys + "=sku, ,order_id", keySharedPrefixes + "="}})
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Memory
	want := memory.DefaultConfig()
	if m.TriggerMessageCount != 30 || m.RecentMessageCount != 12 || m.FailureCooldown != 250*time.Millisecond ||
		m.Policy != memory.PolicyChunked || m.FoldTokenFraction != 1 || m.OutputReserveTokens != 2048 ||
		m.FoldWait != 90*time.Second || m.MaxFacts != want.MaxFacts || m.SafetyTurns != 7 || m.FoldMode != "full" {
		t.Fatalf("memory %+v", m)
	}
	if !reflect.DeepEqual(m.PinnedFactKeys, []string{"sku", "order_id"}) || m.SharedSessionPrefixes != nil {
		t.Fatalf("lists: pinned %q shared %#v", m.PinnedFactKeys, m.SharedSessionPrefixes)
	}
	if cfg.Summarizer.JSONMode || cfg.Store.MaxSummaries != 42 || cfg.Summary.MaxNarrativeTokens != 300 || m.MaxNarrativeTokens != 300 {
		t.Fatalf("summarizer %+v store %+v summary %+v", cfg.Summarizer, cfg.Store, cfg.Summary)
	}
	for key, src := range map[string]string{
		keyTrigger:        p,
		keyFoldWait:       "environment variable ARC_REACTOR_MEMORY_FOLD_WAIT",
		keyPinnedFactKeys: "override",
		keySharedPrefixes: "override",
		keyMaxFacts:       "default",
	} {
		if got := cfg.Source(key); got != src {
			t.Errorf("Source(%s) = %q, want %q", key, got, src)
		}
	}

	// A value of the wrong type is an error naming the key and the file.
	for content, want := range map[string]string{
		"arc.reactor.memory.summary.recent-message-count: 2.5\n": "want an integer, got 2.5",
		"arc.reactor.memory.store.pinned-fact-keys: [[a]]\n":     "entry 1: want a string, got a list",
		"arc.reactor.memory.summary.enabled: 2\n":                "want true or false, got 2",
	} {
		p := writeFile(t, "bad.yaml", content)
		e := loadErr(t, LoadOptions{Files: []string{p}})
		if !strings.Contains(e.Error(), want) || e.Source != p || !strings.HasPrefix(content, e.Key) {
			t.Errorf("%q: %v", content, e)
		}
	}
}

// A list-valued key given in --set or the environment as YAML writes a
// list inline, [a, b], is that list, the same as in a file; a value that
// only looks like one is refused, naming the key — a bracket never ends
// up in a prefix.
func TestInlineListSyntax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"[slack-]", []string{"slack-"}},
		{" [slack-, teams-] ", []string{"slack-", "teams-"}},
		{`["slack-", 'teams-']`, []string{"slack-", "teams-"}},
		{"[]", nil},
		{"slack-,teams-", []string{"slack-", "teams-"}},
	} {
		for _, opts := range []LoadOptions{
			{Environ: []string{}, Overrides: []string{keySharedPrefixes + "=" + tc.value}},
			{Environ: []string{"ARC_REACTOR_MEMORY_SHARED_SESSION_PREFIXES=" + tc.value}},
		} {
			cfg, err := LoadWith(opts)
			if err != nil || !reflect.DeepEqual(cfg.Memory.SharedSessionPrefixes, tc.want) {
				t.Errorf("%q (%v): %q, %v; want %q", tc.value, opts, cfg.Memory.SharedSessionPrefixes, err, tc.want)
			}
		}
	}
	for _, bad := range []string{"[slack-", " [slack-, team-", "[slack-, [x]]", "[a: b]", "[a]b]"} {
		_, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySharedPrefixes + "=" + bad}})
		if err == nil || !strings.Contains(err.Error(), keySharedPrefixes) {
			t.Errorf("%q: %v, want an error naming the key", bad, err)
		}
	}
}

// FuzzListValue: a value of a list key in --set that starts with "["
// either loads as a list none of whose entries holds a bracket, or is
// refused with an error naming the key; any value loads or is refused,
// never a panic.
func FuzzListValue(f *testing.F) {
	for _, s := range []string{"[slack-]", "[a, b]", `["a", 'b']`, "a,b,", "[", "]", "[[a]]", "[a: b]", "[a,,b]", "{a: b}", "[\"\\u0000\"]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\n\r\x00") {
			return // one --set argument, one line
		}
		cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySharedPrefixes + "=" + v}})
		if err != nil {
			if !strings.Contains(err.Error(), keySharedPrefixes) {
				t.Fatalf("%q: the error does not name the key: %v", v, err)
			}
			return
		}
		for _, p := range cfg.Memory.SharedSessionPrefixes {
			if strings.HasPrefix(strings.TrimSpace(v), "[") && strings.ContainsAny(p, "[]") {
				t.Fatalf("%q: a bracket in the prefix %q", v, p)
			}
		}
	})
}
