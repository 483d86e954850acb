package summary_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
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
	// User: My order #1234 arrived broken. User: I'd like a refund of $49.90. Assistant: The refund of $49.90 will reach you by 2024-05-20.
	// order_id = #1234 [ENTITY]
	// refund_amount = $49.90 [NUMERIC]
	// date = 2024-05-20 [CONDITION]
}

func ExampleParseReply() {
	reply := "Here is the summary:\n```JSON\n" +
		`{"narrative": "The customer asked for a refund.", "confidence": 0.9,
		  "facts": [{"key": "order_number", "value": 1234, "category": "entity"},
		            {"key": "status", "value": null},
		            {"key": "email", "value": "not mentioned"},
		            {"key": "coupon", "remove": true}]}` +
		"\n```"
	res, err := summary.ParseReply(reply)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Narrative)
	for _, f := range res.Facts {
		fmt.Printf("%s = %q [%s] remove=%v\n", f.Key, f.Value, f.Category, f.Remove)
	}
	// Output:
	// The customer asked for a refund.
	// order_number = "1234" [ENTITY] remove=false
	// coupon = "" [GENERAL] remove=true
}

func ExampleMergeFacts() {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ledger := []summary.Fact{
		{Key: "order_id", Value: "#1234", Category: summary.Entity},
		{Key: "status", Value: "pending", Category: summary.State},
		{Key: "coupon", Value: "SPRING10", Category: summary.General},
		{Key: "phone", Value: "555-1111", Category: summary.Entity},
	}
	reply := []summary.Fact{
		{Key: "Status", Value: "refunded", Category: summary.State},        // updates
		{Key: "coupon", Remove: true},                                      // removes
		{Key: "order_id", Value: "not mentioned"},                          // no change
		{Key: "phone_number", Value: "555-2222", Category: summary.Entity}, // same slot as phone
		{Key: "refund_amount", Value: "$49.90", Category: summary.Numeric}, // new
	}
	merged := summary.MergeFacts(ledger, reply, summary.MergeOptions{Now: now})
	for _, f := range merged {
		fmt.Printf("%s = %s [%s]\n", f.Key, f.Value, f.Category)
	}
	fmt.Println(summary.FactsBlockWith(merged, summary.RenderOptions{ShowPrevious: true}))
	// Output:
	// order_id = #1234 [ENTITY]
	// status = refunded [STATE]
	// phone = 555-2222 [ENTITY]
	// refund_amount = $49.90 [NUMERIC]
	// Conversation Facts:
	// - order_id: #1234
	// - status: refunded (previously pending)
	// - phone: 555-2222 (previously 555-1111)
	// - refund_amount: $49.90
}
