package agent_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

var markerRE = regexp.MustCompile(`MK-\d{3}`)

// markerSummarizer folds every marker it reads into a fact, so that a
// marker survives in the prompt once its turn has been folded.
func markerSummarizer() summary.Service {
	return summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		var res summary.Result
		for _, m := range req.Messages {
			for _, mk := range markerRE.FindAllString(m.GetContent(), -1) {
				res.Facts = append(res.Facts, summary.Fact{Key: "marker_" + mk[3:], Value: mk, Category: summary.Entity})
			}
		}
		res.Narrative = fmt.Sprintf("The user listed %d markers.", len(res.Facts))
		return res, nil
	})
}

const filler = "The weather was mild, the meeting ran long, and the coffee machine on the third floor is broken again, so nothing else happened. " +
	"Tomorrow the team reviews the quarterly plan, orders new chairs for the kitchen and moves the printer next to the window."

// TestOneBudgetKeepsEveryMarker runs 40 turns through a chunked manager
// whose budget (a 3000-token window with a 500-token output reserve) is far
// smaller than the conversation: the agent's prompts come from the manager's
// one prompt builder and the chunked policy folds with the same budget, so
// every marker said so far reaches every prompt, verbatim or as a fact.
func TestOneBudgetKeepsEveryMarker(t *testing.T) {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.Policy = memory.PolicyChunked
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 3000, 500
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), markerSummarizer()), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })

	model := agenttest.New(func(_ context.Context, req agenttest.Request) (*llms.ContentResponse, error) {
		mk := markerRE.FindString(req.LastText())
		return agenttest.Text("Noted " + mk + ". " + filler), nil
	})
	const system = "You are a careful assistant. Remember every marker the user gives you."
	a := newAgent(t, model, mgr, agent.WithSystemPrompt(system), agent.WithContextWindow(3000, 500))

	const turns = 40
	for turn := 1; turn <= turns; turn++ {
		input := fmt.Sprintf("Turn %d: please remember marker MK-%03d. %s", turn, turn, filler)
		res, err := a.Run(ctx, "s", "u", input)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		sent := model.LastRequest().Text()
		var prompt strings.Builder
		for _, m := range res.Prompt {
			prompt.WriteString(m.GetContent() + "\n")
		}
		for i := 1; i <= turn; i++ {
			mk := fmt.Sprintf("MK-%03d", i)
			if !strings.Contains(sent, mk) || !strings.Contains(prompt.String(), mk) {
				t.Fatalf("turn %d: marker %s missing from the prompt:\n%s", turn, mk, sent)
			}
		}
	}

	// Not vacuous: the conversation is far larger than the budget, and the
	// last prompt holds the first turns only as facts.
	stored := history(t, mgr, "s", "u", 0)
	meter := trimmer.New(cfg.ContextWindowTokens, cfg.OutputReserveTokens, mgr.Config().Estimator)
	if total, budget := meter.Cost(stored), meter.Budget(system, 0); total < 2*budget {
		t.Fatalf("conversation of %d tokens does not exceed the budget of %d", total, budget)
	}
	last := model.LastRequest().Text()
	if strings.Contains(last, "Turn 1: please remember") || !strings.Contains(last, summary.FactsHeader) {
		t.Fatalf("the first turn is not folded:\n%s", last)
	}
	if n := len(model.Requests()); n != turns {
		t.Fatalf("%d model calls for %d turns", n, turns)
	}
}
