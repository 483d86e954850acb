package extractive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
)

// plantedFact is one fact said early in a conversation (and perhaps
// changed later) that the summary must still hold at the end.
type plantedFact struct {
	kind   string
	latest string // the value that must be in the ledger at the end
	old    string // a superseded value that must not be shown ("" if none)
}

var plantedFacts = []plantedFact{
	{"name", "Dana Whitfield", ""},
	{"order", "#A-77314", ""},
	{"sku", "KT-2209", ""},
	{"case", "CS-40812", ""},
	{"amount", "$129.99", ""},
	{"date", "2026-12-05", ""},
	{"address", "4410 Larkspur Lane, Apt 3B, Portland, OR 97205", "118 Birch Street, Salem, OR 97301"},
	{"phone", "(503) 555-0199", "(415) 555-0134"},
	{"email", "dana.whitfield@example.com", ""},
	{"preference", "no calls after 6pm", ""},
}

// plantedOpening says the ten facts in the first five turns.
var plantedOpening = []llms.ChatMessage{
	llms.HumanChatMessage{Content: "Hi, I'm Dana Whitfield. My stand mixer from order #A-77314 arrived with a cracked bowl and I want a refund of $129.99."},
	llms.AIChatMessage{Content: "I'm sorry about that, Dana. I've opened case CS-40812 for the damaged mixer. Which product was it exactly?"},
	llms.HumanChatMessage{Content: "It's SKU KT-2209, the sage one. It was delivered on 2026-12-05 to 118 Birch Street, Salem, OR 97301."},
	llms.AIChatMessage{Content: "Thanks. How can we reach you about the pickup?"},
	llms.HumanChatMessage{Content: "My phone is (415) 555-0134 and my email is dana.whitfield@example.com. Please, no calls after 6pm."},
	llms.AIChatMessage{Content: "Noted. A courier will collect the mixer and the refund follows the scan."},
	llms.HumanChatMessage{Content: "Great, thanks for the quick help with the refund."},
	llms.AIChatMessage{Content: "You're welcome!"},
	llms.HumanChatMessage{Content: "One more thing: can the courier ring the bell twice?"},
	llms.AIChatMessage{Content: "Sure, I've added that note."},
}

var plantedAddressUpdate = []llms.ChatMessage{
	llms.HumanChatMessage{Content: "Oh, I moved last week. Please send the replacement parts to my new address: 4410 Larkspur Lane, Apt 3B, Portland, OR 97205."},
	llms.AIChatMessage{Content: "Done, your delivery address is now 4410 Larkspur Lane, Apt 3B, Portland, OR 97205."},
}

var plantedPhoneUpdate = []llms.ChatMessage{
	llms.HumanChatMessage{Content: "Also my number changed, it's (503) 555-0199 now."},
	llms.AIChatMessage{Content: "Updated: we'll reach you at (503) 555-0199."},
}

// chitchat is filler in the style of a long personal conversation; it
// mentions a dog by name, other people, plans and times.
var chitchat = []string{
	"This is Max, my dog. He loves the beach more than anything.",
	"We went hiking last weekend and the view from the top was amazing.",
	"I'm so glad you liked the photos from the trip!",
	"My sister Jenna is visiting next month, we plan to bake together.",
	"I started a pottery class on Tuesdays at 7pm, it's really relaxing.",
	"Did you finish that book you were reading? I loved the ending.",
	"I'm thinking about adopting a cat too, maybe a small one.",
	"Work has been hectic, but the team is great and we ship on Friday.",
	"I prefer the mountains to the sea, honestly, the air is different.",
	"We had dinner at a Thai place downtown, the curry was perfect.",
	"My friend Carlos just ran his first marathon in 4 hours!",
	"I've been learning the guitar, my fingers hurt but it's fun.",
	"The garden finally has tomatoes, about 20 of them this week.",
	"That concert was loud but so worth it, we danced all night.",
	"I'm Looking forward to the holidays, we always go to my parents.",
}

// supportChatter is filler in the style of an airline support desk serving
// other customers: ids, flights and prices that are not this user's.
func supportChatter(i int) []llms.ChatMessage {
	code := func(n int) string {
		const abc = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
		var b strings.Builder
		for k := 0; k < 6; k++ {
			b.WriteByte(abc[(n*7+k*13+n*k)%len(abc)])
		}
		return b.String()
	}
	var listing []string
	for k := 0; k < 5; k++ {
		listing = append(listing, fmt.Sprintf(`{"flight_number":"HAT%03d","origin":"JFK","destination":"SEA","status":"available","prices":{"economy":%d,"business":%d},"date":"2024-05-%02d"}`, (i*5+k)%300, 90+(i*7+k)%200, 300+(i*11+k)%400, 10+k))
	}
	switch i % 4 {
	case 0:
		return []llms.ChatMessage{
			llms.HumanChatMessage{Content: fmt.Sprintf("My reservation ID is %s and I want to change the flight to May %d.", code(i), 10+i%18)},
			llms.AIChatMessage{Content: "Let me look at the available flights."},
		}
	case 1:
		return []llms.ChatMessage{
			llms.ToolChatMessage{ID: "t", Content: "[" + strings.Join(listing, ",") + "]"},
			llms.AIChatMessage{Content: fmt.Sprintf("Flight HAT%03d costs $%d in economy, flight HAT%03d costs $%d, and flight HAT%03d costs $%d.", i%300, 100+i%90, (i+1)%300, 120+i%70, (i+2)%300, 140+i%50)},
		}
	case 2:
		return []llms.ChatMessage{
			llms.HumanChatMessage{Content: fmt.Sprintf("I'll take the one for $%d. Please use my credit card ending %04d.", 100+i%90, 1000+i*37%9000)},
			llms.AIChatMessage{Content: fmt.Sprintf("Booked. The new total is $%d and your reservation %s is confirmed.", 200+i%150, code(i+1))},
		}
	default:
		return []llms.ChatMessage{
			llms.HumanChatMessage{Content: "Do I need travel insurance for that trip? I do not want it."},
			llms.AIChatMessage{Content: fmt.Sprintf("No insurance then. The baggage fee is $%d per bag.", 30+i%40)},
		}
	}
}

// plantedTranscript is the ten planted facts, the address changed around
// turn 20 and the phone around turn 30, the rest filler, in turns (a turn
// being a user message and the replies that follow).
func plantedTranscript(turns int, support bool) []llms.ChatMessage {
	msgs := append([]llms.ChatMessage(nil), plantedOpening...)
	n := 5
	for i := 0; n < turns; i++ {
		switch n {
		case 20:
			msgs = append(msgs, plantedAddressUpdate...)
			n++
			continue
		case 30:
			msgs = append(msgs, plantedPhoneUpdate...)
			n++
			continue
		}
		if support {
			msgs = append(msgs, supportChatter(i)...)
		} else {
			msgs = append(msgs,
				llms.HumanChatMessage{Content: chitchat[i%len(chitchat)]},
				llms.AIChatMessage{Content: chitchat[(i+7)%len(chitchat)]})
		}
		n++
	}
	return msgs
}

// foldLikeMemory folds msgs every 16 messages, keeping the newest 8
// verbatim: parity re-summarizes everything from the start with the ledger
// offered for merging; chunked folds only the new messages incrementally.
func foldLikeMemory(t *testing.T, svc Service, msgs []llms.ChatMessage, parity bool) *Summary {
	t.Helper()
	var cur *Summary
	const keep, every = 8, 16
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for end := every; end+keep <= len(msgs); end += every {
		req := Request{Messages: msgs[:end], Existing: cur}
		if !parity && cur != nil {
			req = Request{Messages: msgs[cur.UpToSeq:end], Existing: cur, Incremental: true}
		}
		res, err := svc.Summarize(context.Background(), req)
		if err != nil {
			t.Fatalf("fold to %d: %v", end, err)
		}
		next := Apply(cur, "s", 1, res, int64(end), MergeOptions{Now: at.Add(time.Duration(end) * time.Minute)})
		cur = &next
	}
	return cur
}

// plantedScore counts the planted facts whose latest value the ledger
// holds, and the superseded values it still shows.
func plantedScore(s *Summary) (kept int, stale int, missing []string) {
	norm := func(v string) string { return strings.ToLower(strings.Join(strings.Fields(v), " ")) }
	has := func(v string) bool {
		for _, f := range s.Facts {
			if strings.Contains(norm(f.Value), norm(v)) {
				return true
			}
		}
		return false
	}
	for _, p := range plantedFacts {
		if has(p.latest) {
			kept++
		} else {
			missing = append(missing, p.kind)
		}
		if p.old != "" && has(p.old) {
			stale++
		}
	}
	return kept, stale, missing
}

// TestPlantedFactsSurviveFiller: ten facts said in the first five turns,
// the address and phone changed later, buried under personal chitchat or
// other customers' support chatter, are all in the extractive ledger at the
// end, each once, with no superseded value shown.
func TestPlantedFactsSurviveFiller(t *testing.T) {
	turnCounts := []int{50, 200}
	if testing.Short() {
		turnCounts = []int{50}
	}
	for _, turns := range turnCounts {
		for _, support := range []bool{false, true} {
			for _, parity := range []bool{true, false} {
				name := fmt.Sprintf("turns=%d/support=%v/parity=%v", turns, support, parity)
				t.Run(name, func(t *testing.T) {
					s := foldLikeMemory(t, NewExtractiveService(), plantedTranscript(turns, support), parity)
					kept, stale, missing := plantedScore(s)
					t.Logf("%s: kept %d/10, stale %d, missing %v, %d facts", name, kept, stale, missing, len(s.Facts))
					if kept < 10 || stale > 0 {
						t.Errorf("kept %d/10 (missing %v), %d superseded values shown", kept, missing, stale)
					}
					if !strings.Contains(strings.ToLower(s.Narrative), "refund") {
						t.Errorf("narrative does not mention the support case: %q", s.Narrative)
					}
				})
			}
		}
	}
}
