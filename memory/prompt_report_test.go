package memory_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

// A new question too large for the budget is sent cut, never left out;
// when not even a cut fits, it is sent whole and the report says so.
// PromptReport returns what Prompt returns, with the trimmer's report.
func TestPromptReportCutsOrFlagsTheNewestMessage(t *testing.T) {
	mgr := promptManager(t, 300, 100) // 200 tokens for the system prompt and the history
	question := strings.Repeat("q", 1000)
	history := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "old question"},
		llms.AIChatMessage{Content: "old answer"},
		llms.HumanChatMessage{Content: question},
	}
	system := strings.Repeat("s", 50)

	got, rep := mgr.Prompt(system, history, 0)
	if again, _ := mgr.Prompt(system, history, 0); !reflect.DeepEqual(got, again) {
		t.Fatal("PromptReport and Prompt differ")
	}
	// 200 − 50 (system prompt) − 20 (overhead) = 130 for the question's
	// text with the marker.
	want := question[:130-len(trimmer.TruncationMarker)] + trimmer.TruncationMarker
	if len(got) != 2 || got[0].GetContent() != system || got[1].GetContent() != want {
		t.Fatalf("prompt = %q", contents(got))
	}
	if rep.Budget != 150 || rep.TokensAfter != 150 || rep.Truncated != 1 || rep.Removed != 2 || rep.OverBudget {
		t.Fatalf("report %+v", rep)
	}

	// A reserve that leaves no room for even the overhead: the question
	// whole, over budget.
	got, rep = mgr.Prompt(system, history, 140)
	if len(got) != 2 || got[1].GetContent() != question || !rep.OverBudget || rep.Truncated != 0 {
		t.Fatalf("prompt = %q, report %+v", contents(got), rep)
	}
}
