package memory_test

import (
	"context"
	"strconv"
	"testing"
)

// A trigger below the verbatim window is accepted, as arc-reactor accepts
// it: above the trigger the session is shown in full while every message
// fits in the window, and hierarchically as soon as one precedes it.
func TestTriggerBelowRecentWindow(t *testing.T) {
	cfg := hierConfig()
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 2, 6
	if err := cfg.Validate(); err != nil {
		t.Fatalf("trigger below the window refused: %v", err)
	}
	f := newFixture(t, cfg)
	ctx := context.Background()
	want := []struct {
		mode     string
		messages int
		summary  bool
	}{
		{"take-last", 2, false},   // 2 messages: not above the trigger
		{"all", 4, false},         // above it, but nothing precedes the window
		{"all", 6, false},         // the window exactly
		{"hierarchical", 6, true}, // 2 messages precede the window: folded
		{"hierarchical", 6, true}, // and so on
	}
	for i, w := range want {
		saveTurns(t, f.mgr, "s", i+1, i+1)
		h, err := f.mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if string(h.Mode) != w.mode || len(h.Recent) != w.messages || (h.Summary != nil) != w.summary {
			t.Fatalf("turn %d: mode %s, %d verbatim, summary %v; want %s, %d, %v",
				i+1, h.Mode, len(h.Recent), h.Summary != nil, w.mode, w.messages, w.summary)
		}
		if w.summary {
			// Everything before the window is folded, nothing else.
			if got, want := h.Recent[0].Content, "u"+strconv.Itoa(i+1-2); got != want {
				t.Fatalf("turn %d: window starts at %q, want %q", i+1, got, want)
			}
			if h.Summary.Narrative != "folded u1 to a"+strconv.Itoa(i+1-3) {
				t.Fatalf("turn %d: narrative %q", i+1, h.Summary.Narrative)
			}
		}
	}
	if calls := f.svc.calls.Load(); calls < 2 {
		t.Fatalf("summarizer calls = %d, want a fold per turn once messages precede the window", calls)
	}
}

// A zero trigger makes every non-empty session hierarchical as soon as a
// message precedes the window; a negative one is refused.
func TestTriggerZeroAndNegative(t *testing.T) {
	cfg := hierConfig()
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 0, 2
	f := newFixture(t, cfg)
	saveTurns(t, f.mgr, "s", 1, 1)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil || h.Mode != "all" || len(h.Recent) != 2 {
		t.Fatalf("one turn: mode %s, %d messages, %v", h.Mode, len(h.Recent), err)
	}
	saveTurns(t, f.mgr, "s", 2, 2)
	if h, err = f.mgr.Load(context.Background(), "s", "alice"); err != nil || h.Mode != "hierarchical" || len(h.Recent) != 2 {
		t.Fatalf("two turns: mode %s, %d messages, %v", h.Mode, len(h.Recent), err)
	}
	cfg.TriggerMessageCount = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("negative trigger accepted")
	}
}
