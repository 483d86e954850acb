package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

const sharedData = "../../../../shared/data"

func needData(t *testing.T) {
	t.Helper()
	for _, f := range []string{LoCoMoFile, TauBenchFile} {
		if _, err := os.Stat(filepath.Join(sharedData, f)); err != nil {
			t.Skipf("benchmark data not available: %v", err)
		}
	}
}

func TestLoadLoCoMo(t *testing.T) {
	needData(t)
	l, err := LoadLoCoMo(sharedData)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Conversations) != 10 || len(l.Texts) != 5882 {
		t.Fatalf("got %d conversations, %d texts; want 10 and 5 882", len(l.Conversations), len(l.Texts))
	}
	msgs := 0
	for _, c := range l.Conversations {
		msgs += c.MessageCount()
		for i, turn := range c.Turns {
			if turn.User == "" {
				t.Fatalf("%s turn %d: empty user message", c.ID, i)
			}
			if len(turn.Replies) > 1 {
				t.Fatalf("%s turn %d: %d replies, want consecutive messages merged", c.ID, i, len(turn.Replies))
			}
		}
	}
	if msgs+l.Merged != len(l.Texts) {
		t.Errorf("messages %d + merged %d != texts %d", msgs, l.Merged, len(l.Texts))
	}
	if got := len(l.Pairs()); got < 2800 {
		t.Errorf("only %d pairs", got)
	}
}

func TestLoadTauBench(t *testing.T) {
	needData(t)
	trajs, err := LoadTauBench(sharedData)
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 200 {
		t.Fatalf("got %d trajectories, want 200", len(trajs))
	}
	tools, gold := 0, 0
	for _, tr := range trajs {
		gold += len(tr.Gold)
		for _, turn := range tr.Turns {
			for _, m := range turn.Replies {
				if _, ok := m.(llms.ToolChatMessage); ok {
					tools++
				}
			}
		}
		for _, g := range tr.Gold {
			if len(g.Value) < 2 || g.Value == "true" || g.Value == "false" || strings.Contains(g.Value, " ") {
				t.Errorf("%s: unexpected gold value %+v", tr.ID, g)
			}
		}
	}
	if tools != 1164 {
		t.Errorf("got %d tool results, want 1 164", tools)
	}
	if gold == 0 {
		t.Error("no gold values")
	}
	first := trajs[0]
	want := map[string]bool{"mia_li_3668": true, "HAT136": true, "2024-05-20": true, "certificate_7504069": true, "250": true}
	for _, g := range first.Gold {
		delete(want, g.Value)
	}
	if len(want) > 0 {
		t.Errorf("%s: gold values missing: %v (got %v)", first.ID, want, first.Gold)
	}
}

func TestLoCoMoQA(t *testing.T) {
	needData(t)
	l, err := LoadLoCoMo(sharedData)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.QA) != len(l.Conversations) {
		t.Fatalf("%d QA lists for %d conversations", len(l.QA), len(l.Conversations))
	}
	// conv-26 opens with D1:1 (Caroline, the user), D1:2 (Melanie), D1:3
	// (Caroline): three stored messages, nothing merged.
	first := l.QA[0][0]
	if first.Answer != "7 May 2023" || len(first.EvidenceMsgs) != 1 || first.EvidenceMsgs[0] != 2 {
		t.Fatalf("first QA item = %+v, want answer 7 May 2023 with evidence D1:3 at message 2", first)
	}
	msgs := l.Conversations[0].Turns[1].Messages()
	if !strings.Contains(msgs[0].GetContent(), "LGBTQ support group") {
		t.Errorf("message 2 = %q, want the evidence turn", msgs[0].GetContent())
	}
	if l.QA[0][1].Answer != "2022" {
		t.Errorf("numeric answer rendered %q, want 2022", l.QA[0][1].Answer)
	}
	resolved, total := 0, 0
	for c, items := range l.QA {
		n := l.Conversations[c].MessageCount()
		for _, it := range items {
			if len(it.Evidence) != len(it.EvidenceMsgs) {
				t.Fatalf("%+v: ids and positions differ in length", it)
			}
			for _, pos := range it.EvidenceMsgs {
				total++
				if pos >= 0 {
					resolved++
				}
				if pos >= n {
					t.Fatalf("%s: evidence position %d beyond %d messages", l.Conversations[c].ID, pos, n)
				}
			}
		}
	}
	if total == 0 || float64(resolved) < 0.98*float64(total) {
		t.Errorf("%d of %d evidence ids resolved", resolved, total)
	}
}
