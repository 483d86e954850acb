package extractive_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
)

func extract(t *testing.T, req Request) Result {
	t.Helper()
	res, err := NewExtractiveService().Summarize(context.Background(), req)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	return res
}

var refundDialogue = []llms.ChatMessage{
	llms.SystemChatMessage{Content: "You are a support agent for Acme. Example: order #9999, call 800-555-0000."},
	llms.HumanChatMessage{Content: "Hello! My name is Sarah Connor. I ordered a blender, order #1234, on May 1 and it arrived broken."},
	llms.AIChatMessage{Content: "I'm sorry to hear that, Sarah. I can see order #1234 was paid on 05/01/2024 with a total of $89.99 plus a $5.00 shipping fee."},
	llms.HumanChatMessage{Content: "I want a refund of $94.99 to my card. My email is sarah.connor@example.com and my phone is (415) 555-0132."},
	llms.AIChatMessage{Content: "Done: a refund of $94.99 has been issued under case number CS-77812. It takes 5-7 business days. Anything else?"},
	llms.HumanChatMessage{Content: "Also my other order 88231 is missing 2 items. Can someone call me tomorrow at 3pm?"},
}

func TestExtractiveRefundDialogue(t *testing.T) {
	res := extract(t, Request{SessionID: "s1", Messages: refundDialogue})
	checkFacts(t, res.Facts, []Fact{
		{Key: "user_name", Value: "Sarah Connor", Category: Entity},
		{Key: "order_id", Value: "#1234", Category: Entity},
		{Key: "order_date", Value: "May 1", Category: Condition},
		{Key: "order_date_2", Value: "05/01/2024", Category: Condition},
		{Key: "total", Value: "$89.99", Category: Numeric},
		{Key: "fee", Value: "$5.00", Category: Numeric},
		{Key: "refund_amount", Value: "$94.99", Category: Numeric},
		{Key: "email", Value: "sarah.connor@example.com", Category: Entity},
		{Key: "phone", Value: "(415) 555-0132", Category: Entity},
		{Key: "case_id", Value: "CS-77812", Category: Entity},
		{Key: "order_id_2", Value: "88231", Category: Entity},
		{Key: "items", Value: "2", Category: Numeric},
		{Key: "callback_time", Value: "3pm", Category: Condition},
	})
	wantNarrative := "User: I ordered a blender, order #1234, on May 1 and it arrived broken. " +
		"Assistant: I can see order #1234 was paid on 05/01/2024 with a total of $89.99 plus a $5.00 shipping fee. " +
		"User: I want a refund of $94.99 to my card. " +
		"User: My email is sarah.connor@example.com and my phone is (415) 555-0132. " +
		"Assistant: Done: a refund of $94.99 has been issued under case number CS-77812. " +
		"User: Also my other order 88231 is missing 2 items."
	if res.Narrative != wantNarrative {
		t.Fatalf("narrative:\n%s\nwant:\n%s", res.Narrative, wantNarrative)
	}
}

var airlineDialogue = []llms.ChatMessage{
	llms.SystemChatMessage{Content: "You are an airline agent."},
	llms.HumanChatMessage{Content: "Hi, this is Minjun Kim. My reservation code is ZFA04Y and I'm on flight HAT170 on 2024-05-20 at 15:30."},
	llms.AIChatMessage{
		Content:   "Thanks, Minjun! I'm Anna from support. Let me look that up.",
		ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup_reservation", Arguments: `{"code":"ZFA04Y"}`}}},
	},
	llms.ToolChatMessage{ID: "c1", Content: `{"reservation":"ZFA04Y","flights":["HAT170","HAT171"],"passengers":2,"fare":"$1,240.50","contact":"minjun.kim@example.com"}`},
	llms.AIChatMessage{Content: "I found your booking: flights HAT170 and HAT171 for 2 passengers, total fare $1,240.50."},
	llms.HumanChatMessage{Content: "I need to change it to May 22 and add 2 checked bags. You can reach me at +1 415-555-0132 or minjun.kim@example.com."},
	llms.AIChatMessage{Content: "Done. The change fee is $75 and each bag costs 30 dollars. Your new departure is 3pm on 22 May 2024, booking ref ABC123."},
}

var airlineFacts = []Fact{
	{Key: "user_name", Value: "Minjun Kim", Category: Entity},
	{Key: "reservation_id", Value: "ZFA04Y", Category: Entity},
	{Key: "flight_number", Value: "HAT170", Category: Entity},
	{Key: "travel_date", Value: "2024-05-20", Category: Condition},
	{Key: "departure_time", Value: "15:30", Category: Condition},
	{Key: "agent_name", Value: "Anna", Category: Entity},
	// From the JSON tool result, in key order (contact, fare, flights, passengers).
	{Key: "email", Value: "minjun.kim@example.com", Category: Entity},
	{Key: "fare", Value: "$1,240.50", Category: Numeric},
	{Key: "flight_number_2", Value: "HAT171", Category: Entity},
	{Key: "passengers", Value: "2", Category: Numeric},
	{Key: "date", Value: "May 22", Category: Condition},
	{Key: "bags", Value: "2", Category: Numeric},
	{Key: "phone", Value: "+1 415-555-0132", Category: Entity},
	{Key: "fee", Value: "$75", Category: Numeric},
	{Key: "price", Value: "30 dollars", Category: Numeric},
	{Key: "departure_time_2", Value: "3pm", Category: Condition},
	{Key: "travel_date_2", Value: "22 May 2024", Category: Condition},
	{Key: "booking_id", Value: "ABC123", Category: Entity},
}

func TestExtractiveAirlineDialogue(t *testing.T) {
	res := extract(t, Request{SessionID: "s2", Messages: airlineDialogue})
	checkFacts(t, res.Facts, airlineFacts)
	wantNarrative := "User: My reservation code is ZFA04Y and I'm on flight HAT170 on 2024-05-20 at 15:30. " +
		"Assistant: I found your booking: flights HAT170 and HAT171 for 2 passengers, total fare $1,240.50. " +
		"User: I need to change it to May 22 and add 2 checked bags. " +
		"User: You can reach me at +1 415-555-0132 or minjun.kim@example.com. " +
		"Assistant: The change fee is $75 and each bag costs 30 dollars. " +
		"Assistant: Your new departure is 3pm on 22 May 2024, booking ref ABC123."
	if res.Narrative != wantNarrative {
		t.Fatalf("narrative:\n%s\nwant:\n%s", res.Narrative, wantNarrative)
	}
}

func TestExtractiveDeterministic(t *testing.T) {
	first := extract(t, Request{Messages: airlineDialogue})
	for i := 0; i < 20; i++ {
		if got := extract(t, Request{Messages: airlineDialogue}); !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d differs", i)
		}
	}
}

func TestExtractiveSkipsSystemMessages(t *testing.T) {
	_, err := NewExtractiveService().Summarize(context.Background(), Request{Messages: []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Order #9999 costs $5. Call 800-555-0000. My name is Bot."},
	}})
	if !errors.Is(err, ErrEmptyReply) {
		t.Fatalf("err = %v, want ErrEmptyReply", err)
	}
}

func TestExtractiveEmptyInput(t *testing.T) {
	res, err := NewExtractiveService().Summarize(context.Background(), Request{Existing: &Summary{Narrative: "x"}})
	if err != nil || !reflect.DeepEqual(res, Result{}) {
		t.Fatalf("got %#v, %v", res, err)
	}
}

func TestExtractiveCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewExtractiveService().Summarize(ctx, Request{Messages: refundDialogue}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractiveToolCallOnlyTurn(t *testing.T) {
	res := extract(t, Request{Messages: []llms.ChatMessage{
		llms.HumanChatMessage{Content: "Where is my parcel?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "1", FunctionCall: &llms.FunctionCall{Name: "track_parcel", Arguments: "{}"}}}},
		llms.ToolChatMessage{ID: "1", Content: "tracking number 1Z999AA10123456784, delivery on 2024-06-03"},
	}})
	if res.Narrative != "User: Where is my parcel? Assistant called track_parcel." {
		t.Errorf("narrative %q", res.Narrative)
	}
	checkFacts(t, res.Facts, []Fact{
		{Key: "tracking_number", Value: "1Z999AA10123456784", Category: Entity},
		{Key: "delivery_date", Value: "2024-06-03", Category: Condition},
	})
}

// In incremental mode the ledger's keys are respected: a known value keeps
// its key and a new value never takes a key that holds another value.
func TestExtractiveIncrementalKeys(t *testing.T) {
	existing := &Summary{
		Narrative: "User: My order #1234 arrived broken. Assistant: A refund was issued.",
		Facts: []Fact{
			{Key: "order_id", Value: "#1234", Category: Entity},
			{Key: "Refund_Amount", Value: "$94.99", Category: Numeric},
			{Key: "bags", Value: "1", Category: Numeric},
		},
	}
	res := extract(t, Request{
		Existing:    existing,
		Incremental: true,
		Messages: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "Order 1234 is fine now, but order #5678 needs a refund of $94.99 too. I have 3 bags."},
		},
	})
	checkFacts(t, res.Facts, []Fact{
		{Key: "order_id", Value: "1234", Category: Entity},
		{Key: "order_id_2", Value: "#5678", Category: Entity},
		{Key: "Refund_Amount", Value: "$94.99", Category: Numeric},
		{Key: "bags", Value: "3", Category: Numeric},
	})
	want := "User: My order #1234 arrived broken. Assistant: A refund was issued. User: Order 1234 is fine now, but order #5678 needs a refund of $94.99 too."
	if res.Narrative != want {
		t.Errorf("narrative %q\nwant      %q", res.Narrative, want)
	}

	// The folded ledger.
	merged := MergeFacts(existing.Facts, res.Facts, MergeOptions{Now: t1})
	var keys []string
	for _, f := range merged {
		keys = append(keys, f.Key+"="+f.Value)
	}
	if got := strings.Join(keys, " "); got != "order_id=#1234 Refund_Amount=$94.99 bags=3 order_id_2=#5678" {
		t.Errorf("merged ledger %s", got)
	}

	// Not incremental: the stored narrative is not carried forward.
	res = extract(t, Request{Existing: existing, Messages: []llms.ChatMessage{llms.HumanChatMessage{Content: "Order #5678 needs a refund."}}})
	if res.Narrative != "User: Order #5678 needs a refund." {
		t.Errorf("non-incremental narrative %q", res.Narrative)
	}
	checkFacts(t, res.Facts, []Fact{{Key: "order_id_2", Value: "#5678", Category: Entity}})
}

func TestExtractiveNarrativeCap(t *testing.T) {
	var msgs []llms.ChatMessage
	msgs = append(msgs, llms.HumanChatMessage{Content: "Hi! My blender from order #1234 arrived broken and I want a refund."})
	for i := 0; i < 30; i++ {
		msgs = append(msgs,
			llms.AIChatMessage{Content: "Question number " + string(rune('A'+i%26)) + " is about something rather long and detailed, more than a few words."},
			llms.HumanChatMessage{Content: "We talked about the weather and the garden for a while, nothing in particular."})
		if i == 12 {
			msgs = append(msgs, llms.AIChatMessage{Content: "I have issued the refund of $49.90 under case CS-1001."})
		}
	}
	res := extract(t, Request{Messages: msgs})
	if n := utf8.RuneCountInString(res.Narrative); n > MaxExtractiveNarrative {
		t.Fatalf("narrative has %d runes", n)
	}
	// The goal from the first turn and the decision from the middle are
	// kept; filler is not, however new.
	if !strings.HasPrefix(res.Narrative, "User: My blender from order #1234 arrived broken and I want a refund.") ||
		!strings.Contains(res.Narrative, "Assistant: I have issued the refund of $49.90 under case CS-1001.") ||
		strings.Contains(res.Narrative, "weather") {
		t.Fatalf("narrative %q", res.Narrative)
	}

	// Many salient sentences: the cap holds, the goal stays first.
	msgs = msgs[:1]
	for i := 0; i < 40; i++ {
		msgs = append(msgs, llms.AIChatMessage{Content: "Refund " + string(rune('A'+i%26)) + " for order #" + strconv.Itoa(5000+i) + " has been issued to your card."})
	}
	res = extract(t, Request{Messages: msgs})
	if n := utf8.RuneCountInString(res.Narrative); n > MaxExtractiveNarrative || !strings.HasPrefix(res.Narrative, "User: My blender") {
		t.Fatalf("narrative (%d runes) %q", n, res.Narrative)
	}

	// Incremental: the carried goal survives and the new salient sentence
	// enters; carried filler gives way.
	old := strings.Repeat("An old point that was made earlier in the chat. ", 14)
	res = extract(t, Request{Existing: &Summary{Narrative: "User: My parcel with order #777 never arrived. " + old}, Incremental: true,
		Messages: []llms.ChatMessage{llms.HumanChatMessage{Content: "A brand new question about the refund of $20."}}})
	if utf8.RuneCountInString(res.Narrative) > MaxExtractiveNarrative || !strings.HasPrefix(res.Narrative, "User: My parcel with order #777 never arrived.") ||
		!strings.HasSuffix(res.Narrative, "User: A brand new question about the refund of $20.") || strings.Contains(res.Narrative, "old point") {
		t.Fatalf("incremental narrative %q", res.Narrative)
	}
}

func TestExtractFactsPatterns(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []Fact
	}{
		{"amount formats", "It was $50, then €12.50, 50,000 KRW, 30 dollars, USD 100 and £7.", []Fact{
			{Key: "amount", Value: "$50", Category: Numeric},
			{Key: "amount_2", Value: "€12.50", Category: Numeric},
			{Key: "amount_3", Value: "50,000 KRW", Category: Numeric},
			{Key: "amount_4", Value: "30 dollars", Category: Numeric},
			{Key: "amount_5", Value: "USD 100", Category: Numeric},
			{Key: "amount_6", Value: "£7", Category: Numeric},
		}},
		{"amount keyed by a following word", "I want the $25 refund and a 10 euro voucher.", []Fact{
			{Key: "refund_amount", Value: "$25", Category: Numeric},
			{Key: "voucher", Value: "10 euro", Category: Numeric},
		}},
		{"repeated amount reported once", "The refund is $20. Yes, $20 exactly.", []Fact{
			{Key: "refund_amount", Value: "$20", Category: Numeric},
		}},
		{"date formats", "Options: 2024-05-01, May 1, 1 May 2024, 05/01/2024, March 3rd, 2025 or next Friday.", []Fact{
			{Key: "date", Value: "2024-05-01", Category: Condition},
			{Key: "date_2", Value: "May 1", Category: Condition},
			{Key: "date_3", Value: "1 May 2024", Category: Condition},
			{Key: "date_4", Value: "05/01/2024", Category: Condition},
			{Key: "date_5", Value: "March 3rd, 2025", Category: Condition},
			{Key: "date_6", Value: "next Friday", Category: Condition},
		}},
		{"times", "Pick-up at 10:45 AM or 3 p.m. or 21:00.", []Fact{
			{Key: "appointment_time", Value: "10:45 AM", Category: Condition},
			{Key: "appointment_time_2", Value: "3 p.m.", Category: Condition},
			{Key: "time", Value: "21:00", Category: Condition},
		}},
		{"phones", "Call +82 10-1234-5678 or 010-9876-5432, not 555-0132.", []Fact{
			{Key: "phone", Value: "+82 10-1234-5678", Category: Entity},
			{Key: "alternate_phone", Value: "010-9876-5432", Category: Entity},
		}},
		{"identifiers", "Order number is 77 and ticket ID T-5521; reservation: QX7P2; confirmation code K3L9P2; invoice INV-2024-001.", []Fact{
			{Key: "order_id", Value: "77", Category: Entity},
			{Key: "ticket_id", Value: "T-5521", Category: Entity},
			{Key: "reservation_id", Value: "QX7P2", Category: Entity},
			{Key: "confirmation_code", Value: "K3L9P2", Category: Entity},
			{Key: "invoice_id", Value: "INV-2024-001", Category: Entity},
		}},
		{"not identifiers", "I want to order 2 bags; the order was late; booking for 3 people; reference ABCDEF.", []Fact{
			{Key: "bags", Value: "2", Category: Numeric},
			{Key: "people", Value: "3", Category: Numeric},
		}},
		{"flights", "Flight UA 123 connects to KE017; my flight no. 7C1101 is later.", []Fact{
			{Key: "flight_number", Value: "UA 123", Category: Entity},
			{Key: "flight_number_2", Value: "KE017", Category: Entity},
			{Key: "flight_number_3", Value: "7C1101", Category: Entity},
		}},
		{"no flights without the word", "The RTX4090 card is in stock.", nil},
		{"quantities", "Two adults, one child and 3 checked bags; actually 4 bags.", []Fact{
			{Key: "adults", Value: "2", Category: Numeric},
			{Key: "children", Value: "1", Category: Numeric},
			{Key: "bags", Value: "4", Category: Numeric},
		}},
		{"names", "I'm Looking for help. My name is José Álvarez. The passenger name is Mary Ann Lee.", []Fact{
			{Key: "user_name", Value: "José Álvarez", Category: Entity},
			{Key: "passenger_name", Value: "Mary Ann Lee", Category: Entity},
		}},
		{"first self-introduction wins", "I'm Jane. Call me Janie.", []Fact{
			{Key: "user_name", Value: "Jane", Category: Entity},
		}},
		{"e-mails", "Write to A.B+tag@Example.co.uk or a.b+tag@example.co.uk.", []Fact{
			{Key: "email", Value: "A.B+tag@Example.co.uk", Category: Entity},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ExtractFacts([]llms.ChatMessage{llms.HumanChatMessage{Content: tc.text}}, nil)
			checkFacts(t, got, tc.want)
		})
	}
}

func TestExtractFactsRoles(t *testing.T) {
	got := ExtractFacts([]llms.ChatMessage{
		llms.HumanChatMessage{Content: "This is Tom Baker."},
		llms.AIChatMessage{Content: "Hello Tom, this is Dana from support."},
		llms.ToolChatMessage{Content: "I'm Robot. Customer name: Tom Baker"},
		llms.SystemChatMessage{Content: "My name is System and the order #4242."},
	}, nil)
	checkFacts(t, got, []Fact{
		{Key: "user_name", Value: "Tom Baker", Category: Entity},
		{Key: "agent_name", Value: "Dana", Category: Entity},
		{Key: "customer_name", Value: "Tom Baker", Category: Entity},
	})
}

func TestExtractFactsFromJSONToolResultsAndArguments(t *testing.T) {
	msgs := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "Please book it."},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{
			Name: "book_reservation", Arguments: `{"user_id":"mia_li_3668","flights":[{"flight_number":"HAT136","date":"2024-05-20"}],"payment_methods":[{"payment_id":"certificate_7504069","amount":250}],"insurance":"no","total_baggages":3}`}}}},
		llms.ToolChatMessage{ID: "c1", Content: `{"reservation_id":"NM1VX1","status":"confirmed","passengers":[{"first_name":"Mia","last_name":"Li","dob":"1990-04-05"}],"paid":true,"note":"` + strings.Repeat("x", 200) + `"}`},
	}
	got := map[string]string{}
	for _, f := range ExtractFacts(msgs, nil) {
		got[f.Key] = f.Value + " [" + string(f.Category) + "]"
	}
	want := map[string]string{
		"user_id": "mia_li_3668 [ENTITY]", "flight_number": "HAT136 [ENTITY]", "date": "2024-05-20 [CONDITION]",
		"payment_id": "certificate_7504069 [ENTITY]", "amount": "250 [NUMERIC]", "insurance": "no [STATE]",
		"total_baggages": "3 [NUMERIC]", "reservation_id": "NM1VX1 [ENTITY]", "status": "confirmed [STATE]",
		"first_name": "Mia [ENTITY]", "last_name": "Li [ENTITY]", "dob": "1990-04-05 [CONDITION]",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected fact %s = %s (booleans, long text and unknown keys are not facts)", k, got[k])
		}
	}
	// Not JSON: a tool result in prose is scanned as prose.
	prose := ExtractFacts([]llms.ChatMessage{llms.ToolChatMessage{ID: "x", Content: "tracking number 1Z999AA10123456784"}}, nil)
	if len(prose) != 1 || prose[0].Value != "1Z999AA10123456784" {
		t.Fatalf("prose tool result: %+v", prose)
	}
}
