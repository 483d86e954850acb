package memory_test

import (
	"context"
	"fmt"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// A manager with hierarchical memory on the offline defaults: once the
// session passes the trigger, the oldest turns are folded into facts and a
// narrative, and the newest stay verbatim.
func ExampleManager() {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 2

	ms := memory.NewInMemoryStore() // keeps each session's messages, summary and fold lease
	mgr, err := memory.NewManager(ms, cfg,
		memory.WithSummaries(ms.Summaries(), summary.NewExtractiveService()))
	if err != nil {
		panic(err)
	}
	defer mgr.Close()

	_ = mgr.SaveTurn(ctx, "chat-1", "alice", "Hi, I need help with order #1234.", "Sure, let me check order #1234.")
	_ = mgr.SaveTurn(ctx, "chat-1", "alice", "It was $50.", "Thanks, I see the $50 charge.")
	_ = mgr.SaveTurn(ctx, "chat-1", "alice", "Can I get a refund?", "Yes, the refund is approved.")
	_ = mgr.Flush(ctx) // wait for the background fold (only needed in examples and tests)

	history, _ := mgr.LoadHistory(ctx, "chat-1", "alice")
	fmt.Println(history[0].GetContent()) // the facts block
	for _, m := range history[len(history)-2:] {
		fmt.Printf("%s: %s\n", m.GetType(), m.GetContent())
	}
	// Output:
	// Conversation Facts:
	// - order_id: #1234
	// - amount: $50
	// human: Can I get a refund?
	// ai: Yes, the refund is approved.
}
