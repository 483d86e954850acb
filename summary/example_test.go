package summary_test

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-go/strata/summary"
	"github.com/tmc/langchaingo/llms"
)

func ExampleNewExtractiveService() {
	svc := summary.NewExtractiveService()
	res, err := svc.Summarize(context.Background(), summary.Request{
		SessionID: "session-1",
		Messages: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "Hi, my order #1234 arrived broken. I'd like a refund of $49.90."},
			llms.AIChatMessage{Content: "Sorry about that! The refund of $49.90 will reach you by 2024-05-20."},
		},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Narrative)
	for _, f := range res.Facts {
		fmt.Printf("%s = %s [%s]\n", f.Key, f.Value, f.Category)
	}
	// Output:
	// User: My order #1234 arrived broken. Assistant: The refund of $49.90 will reach you by 2024-05-20.
	// order_id = #1234 [ENTITY]
	// refund_amount = $49.90 [NUMERIC]
	// date = 2024-05-20 [CONDITION]
}

func ExampleParseReply() {
	reply := "Here is the summary:\n```JSON\n" +
		`{"narrative": "The customer asked for a refund.", "confidence": 0.9,
		  "facts": [{"key": "order_number", "value": 1234, "category": "entity"},
		            {"key": "status", "value": null}]}` +
		"\n```"
	res, err := summary.ParseReply(reply)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Narrative)
	for _, f := range res.Facts {
		fmt.Printf("%s = %q [%s]\n", f.Key, f.Value, f.Category)
	}
	// Output:
	// The customer asked for a refund.
	// order_number = "1234" [ENTITY]
	// status = "" [GENERAL]
}

func ExampleMergeFacts() {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ledger := []summary.Fact{
		{Key: "order_id", Value: "#1234", Category: summary.Entity},
		{Key: "status", Value: "pending", Category: summary.State},
		{Key: "coupon", Value: "SPRING10", Category: summary.General},
	}
	reply := []summary.Fact{
		{Key: "Status", Value: "refunded", Category: summary.State}, // replaces
		{Key: "coupon", Value: ""},                                  // removes
		{Key: "refund_amount", Value: "$49.90", Category: summary.Numeric},
	}
	for _, f := range summary.MergeFacts(ledger, reply, summary.MergeOptions{Now: now}) {
		fmt.Printf("%s = %s [%s]\n", f.Key, f.Value, f.Category)
	}
	// Output:
	// order_id = #1234 [ENTITY]
	// status = refunded [STATE]
	// refund_amount = $49.90 [NUMERIC]
}
