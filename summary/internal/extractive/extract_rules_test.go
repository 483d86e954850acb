package extractive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
)

// factMap runs ExtractFacts on msgs and returns key → value.
func factMap(msgs []llms.ChatMessage, known []Fact) map[string]string {
	out := map[string]string{}
	for _, f := range ExtractFacts(msgs, known) {
		out[f.Key] = f.Value
	}
	return out
}

type extractCase struct {
	name string
	msgs []llms.ChatMessage
	want map[string]string // exactly these facts (nil: none)
}

func user(s string) llms.ChatMessage  { return llms.HumanChatMessage{Content: s} }
func agent(s string) llms.ChatMessage { return llms.AIChatMessage{Content: s} }

func runExtractCases(t *testing.T, cases []extractCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := factMap(tc.msgs, nil)
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestExtractAddresses(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"user delivery address with unit, city, state, zip",
			[]llms.ChatMessage{user("Please ship it to 4410 Larkspur Lane, Apt 3B, Portland, OR 97205.")},
			map[string]string{"delivery_address": "4410 Larkspur Lane, Apt 3B, Portland, OR 97205"}},
		{"abbreviated suffix keeps its period",
			[]llms.ChatMessage{user("Send it to 77 W 42nd St. please")},
			map[string]string{"delivery_address": "77 W 42nd St."}},
		{"billing address",
			[]llms.ChatMessage{user("My billing address is 9 Elm Road, Leeds.")},
			map[string]string{"billing_address": "9 Elm Road, Leeds"}},
		{"the business's address is not the user's",
			[]llms.ChatMessage{agent("It ships from our warehouse at 500 Industrial Way, Denver.")},
			map[string]string{"location": "500 Industrial Way, Denver"}},
		{"an old address is not a fact",
			[]llms.ChatMessage{user("My old address was 1 Pine Avenue, Salem.")},
			nil},
		{"the agent confirming the user's address",
			[]llms.ChatMessage{agent("Done, your delivery address is now 12 Oak Street, Springfield, IL 62704.")},
			map[string]string{"delivery_address": "12 Oak Street, Springfield, IL 62704"}},
		{"a later address in a later message updates the slot",
			[]llms.ChatMessage{user("I live at 118 Birch Street, Salem."), user("I moved! New address: 22 Hill Road, Bend.")},
			map[string]string{"delivery_address": "22 Hill Road, Bend"}},
		{"no street suffix, no address",
			[]llms.ChatMessage{user("I have 3 boxes to send to Big Sur.")},
			map[string]string{"boxes": "3"}},
	})
}

func TestExtractProductCodesAndIDs(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"sku", []llms.ChatMessage{user("It's SKU KT-2209, the sage one.")}, map[string]string{"sku": "KT-2209"}},
		{"product code and model number", []llms.ChatMessage{user("Product code is AB12-X and the model number RTX4090.")},
			map[string]string{"product_code": "AB12-X", "model_number": "RTX4090"}},
		{"part number", []llms.ChatMessage{agent("Part no. P-7781 is the replacement arm.")}, map[string]string{"part_number": "P-7781"}},
		{"lower-case words are not codes", []llms.ChatMessage{user("The sku is gl-014 I think, or the model is nice.")}, nil},
		{"return, claim and account ids", []llms.ChatMessage{agent("Your return number is RMA-77104, claim #C-5521, account number 88410023.")},
			map[string]string{"return_id": "RMA-77104", "claim_id": "#C-5521", "account_id": "88410023"}},
		{"an id starting with a qualifier's letters", []llms.ChatMessage{user("Yes, reservation NO6JO3 is mine, ticket no. 55120.")},
			map[string]string{"reservation_id": "NO6JO3", "ticket_id": "55120"}},
	})
}

func TestExtractContactOwnership(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"user's phone and email", []llms.ChatMessage{user("My phone is (415) 555-0134 and my email is dana@example.com.")},
			map[string]string{"phone": "(415) 555-0134", "email": "dana@example.com"}},
		{"a changed number replaces the slot", []llms.ChatMessage{
			user("My phone is (415) 555-0134."), user("My number changed, it's (503) 555-0199 now.")},
			map[string]string{"phone": "(503) 555-0199"}},
		{"the old number in the update is not kept", []llms.ChatMessage{
			user("My old number 415-555-0134 no longer works, use 503-555-0199.")},
			map[string]string{"phone": "503-555-0199"}},
		{"changed from one number to another", []llms.ChatMessage{
			user("Please change my phone from 415-555-0134 to 503-555-0199.")},
			map[string]string{"phone": "503-555-0199"}},
		{"the business's phone and mailbox", []llms.ChatMessage{
			agent("You can call our support line at 800-555-0100 or write to returns@shop.example.")},
			map[string]string{"other_phone": "800-555-0100", "support_email": "returns@shop.example"}},
		{"agent confirms the user's new number", []llms.ChatMessage{
			user("My phone is (415) 555-0134."), agent("Done, the phone number on your account is now 503-555-0148.")},
			map[string]string{"phone": "503-555-0148"}},
		{"work email", []llms.ChatMessage{user("My work email is dana@corp.example, personal one is dana@example.com.")},
			map[string]string{"work_email": "dana@corp.example", "email": "dana@example.com"}},
	})
}

func TestExtractNamesBySpeaker(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"a pet introduced in chitchat is not the user", []llms.ChatMessage{user("This is Max, my dog. He loves the beach.")}, nil},
		{"a pet introduced later in the sentence", []llms.ChatMessage{user("This is Luna! She's our new kitten.")}, nil},
		{"this is <name> opening a message", []llms.ChatMessage{user("Hi, this is Dana Whitfield.")}, map[string]string{"user_name": "Dana Whitfield"}},
		{"this is <name> mid-message is not an introduction", []llms.ChatMessage{user("I walked to the park and this is Max waiting for me.")}, nil},
		{"my name is", []llms.ChatMessage{user("My name is Dana and I need help.")}, map[string]string{"user_name": "Dana"}},
		{"adjectives are not names", []llms.ChatMessage{user("I'm Exhausted today. I'm Loving the weather though.")}, nil},
		{"the agent's name", []llms.ChatMessage{agent("Hello Tom, this is Anna from support.")}, map[string]string{"agent_name": "Anna"}},
		{"the first introduction wins", []llms.ChatMessage{user("I'm Dana."), user("I'm Carla, Dana's sister, by the way.")}, map[string]string{"user_name": "Dana"}},
	})

	// A known name is not replaced by a casual introduction, only by an
	// explicit correction.
	known := []Fact{{Key: "user_name", Value: "Dana Whitfield", Category: Entity}}
	if got := factMap([]llms.ChatMessage{user("I'm Carla, nice to meet you!")}, known); len(got) != 0 {
		t.Errorf("casual introduction replaced a known name: %v", got)
	}
	if got := factMap([]llms.ChatMessage{user("Sorry, actually my name is Dana Lee.")}, known); got["user_name"] != "Dana Lee" {
		t.Errorf("correction not taken: %v", got)
	}
}

func TestExtractPreferenceClauses(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"no calls after 6pm is a preference, not a time", []llms.ChatMessage{user("Please, no calls after 6pm.")},
			map[string]string{"contact_preference": "no calls after 6pm"}},
		{"do not call", []llms.ChatMessage{user("Don't call me before 9am, I work nights.")},
			map[string]string{"contact_preference": "Don't call me before 9am"}},
		{"allergy", []llms.ChatMessage{user("I'm allergic to peanuts and shellfish, so no nut desserts.")},
			map[string]string{"allergy": "allergic to peanuts and shellfish"}},
		{"seat preference", []llms.ChatMessage{user("I'd prefer a window seat, thanks.")},
			map[string]string{"seat_preference": "prefer a window seat"}},
		{"diet", []llms.ChatMessage{user("I'm vegetarian.")},
			map[string]string{"dietary_restriction": "vegetarian"}},
		{"constraint", []llms.ChatMessage{user("I can't climb stairs after my surgery.")},
			map[string]string{"constraint": "can't climb stairs after my surgery"}},
		{"delivery instruction", []llms.ChatMessage{user("Please don't leave the parcel at the door.")},
			map[string]string{"delivery_preference": "don't leave the parcel at the door"}},
		{"the agent does not state the user's preferences", []llms.ChatMessage{agent("I'd prefer to check the order first.")}, nil},
		{"a changed contact preference replaces the old one", []llms.ChatMessage{
			user("No calls after 6pm please."), user("Actually, no calls after 8pm is fine too.")},
			map[string]string{"contact_preference": "no calls after 8pm is fine too"}},
	})
}

func TestExtractDatesKeyedAndResolved(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"keys say what a date is for", []llms.ChatMessage{user("It was delivered on 2026-12-05, I ordered it on Nov 28, and my birthday is March 3rd.")},
			map[string]string{"delivery_date": "2026-12-05", "order_date": "Nov 28", "birth_date": "March 3rd"}},
		{"a bare date stays a date", []llms.ChatMessage{user("What about 2026-12-24?")}, map[string]string{"date": "2026-12-24"}},
		{"relative dates without a timestamp are kept as said", []llms.ChatMessage{user("Can the technician come tomorrow? Or next Friday.")},
			map[string]string{"appointment_date": "tomorrow", "date": "next Friday"}},
		{"chitchat about yesterday is not a fact", []llms.ChatMessage{user("I went hiking yesterday and today I rest.")}, nil},
	})

	// With timestamps, relative dates resolve against the message's day.
	monday := time.Date(2026, 11, 23, 16, 30, 0, 0, time.UTC)
	res, err := NewExtractiveService().Summarize(context.Background(), Request{
		Messages: []llms.ChatMessage{
			user("My parcel with order #A-1 is late."),
			user("Can the technician come tomorrow? If not, next Friday."),
			user("Deliver it in 2 weeks then."),
		},
		SentAt: []time.Time{monday, monday, monday.AddDate(0, 0, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Facts {
		got[f.Key] = f.Value
	}
	want := map[string]string{
		"appointment_date": "2026-11-24 (tomorrow)",
		"date":             "2026-11-27 (next Friday)",
		"delivery_date":    "2026-12-08 (in 2 weeks)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all %v)", k, got[k], v, got)
		}
	}
}

func TestResolveRelative(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC) // a Monday
	cases := map[string]string{
		"today": "2026-11-23", "tonight": "2026-11-23", "tomorrow": "2026-11-24", "yesterday": "2026-11-22",
		"the day after tomorrow": "2026-11-25", "next Monday": "2026-11-30", "this Sunday": "2026-11-29",
		"coming Wednesday": "2026-11-25", "last Monday": "2026-11-16", "last Sunday": "2026-11-22",
		"in 3 days": "2026-11-26", "in two weeks": "2026-12-07",
	}
	for phrase, want := range cases {
		got, ok := extractive.ResolveRelative(phrase, at)
		if !ok || got != want+" ("+phrase+")" {
			t.Errorf("%q: got %q, %v; want %s", phrase, got, ok, want)
		}
	}
	if _, ok := extractive.ResolveRelative("tomorrow", time.Time{}); ok {
		t.Error("resolved without a timestamp")
	}
	if _, ok := extractive.ResolveRelative("next month", at); ok {
		t.Error("resolved an unknown phrase")
	}
}

func TestExtractListingsDoNotFlood(t *testing.T) {
	var flights []string
	for i := 0; i < 6; i++ {
		flights = append(flights, `{"flight_number":"HAT10`+string(rune('0'+i))+`","price":`+string(rune('1'+i))+`00,"origin":"JFK"}`)
	}
	got := factMap([]llms.ChatMessage{
		llms.ToolChatMessage{ID: "1", Content: "[" + strings.Join(flights, ",") + "]"},
		agent("Options: HAT101 flight at $120, HAT102 at $130, HAT103 at $140, HAT104 at $150 and HAT105 at $160."),
		llms.ToolChatMessage{ID: "2", Content: `{"reservation_id":"ZFA04Y","flights":[{"flight_number":"HAT170"},{"flight_number":"HAT171"}]}`},
	}, nil)
	want := map[string]string{"reservation_id": "ZFA04Y", "flight_number": "HAT170", "flight_number_2": "HAT171"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// A record's "name" is not the user's name.
	got = factMap([]llms.ChatMessage{llms.ToolChatMessage{ID: "3", Content: `{"items":[{"sku":"KT-220","name":"Aster stand mixer"}],"name":"Order 58213"}`}}, nil)
	if _, ok := got["name"]; ok || got["item_name"] != "Aster stand mixer" || got["sku"] != "KT-220" {
		t.Errorf("record names: %v", got)
	}
}

// TestExtractiveSupersedesAcrossFolds: an address or phone changed in a
// later fold comes back under the same key, so the ledger shows only the
// new value.
func TestExtractiveSupersedesAcrossFolds(t *testing.T) {
	svc := NewExtractiveService()
	first := []llms.ChatMessage{user("I'm Dana. Ship to 118 Birch Street, Salem, OR 97301 and call (415) 555-0134.")}
	res, err := svc.Summarize(context.Background(), Request{Messages: first})
	if err != nil {
		t.Fatal(err)
	}
	s := Apply(nil, "s", 1, res, 1, MergeOptions{Now: t1})
	res, err = svc.Summarize(context.Background(), Request{Existing: &s, Incremental: true, Messages: []llms.ChatMessage{
		user("This is Max, my dog, say hi!"),
		user("I moved: my new address is 4410 Larkspur Lane, Portland, OR 97205, and my number is (503) 555-0199 now."),
	}})
	if err != nil {
		t.Fatal(err)
	}
	s = Apply(&s, "s", 1, res, 3, MergeOptions{Now: t1.Add(time.Minute)})
	block := FactsBlock(s.Facts)
	for _, want := range []string{"4410 Larkspur Lane", "(503) 555-0199", "Dana"} {
		if !strings.Contains(block, want) {
			t.Errorf("facts block lacks %q:\n%s", want, block)
		}
	}
	for _, old := range []string{"118 Birch Street", "(415) 555-0134", "Max"} {
		if strings.Contains(block, old) {
			t.Errorf("facts block shows %q:\n%s", old, block)
		}
	}
}

// TestExtractiveNarrativeKeepsTheCase: after long chitchat, the narrative
// still says what the support case is, from the first turns, and leaves
// out chitchat that carries nothing (no name, place or number). Sentences
// that name someone ("This is Max, my dog.") may fill the room left: a
// later question may well be about them.
func TestExtractiveNarrativeKeepsTheCase(t *testing.T) {
	msgs := plantedTranscript(120, false)
	res := extract(t, Request{Messages: msgs})
	if !strings.HasPrefix(res.Narrative, "User: My stand mixer from order #A-77314 arrived with a cracked bowl") {
		t.Errorf("narrative does not open with the user's goal: %q", res.Narrative)
	}
	for _, want := range []string{"CS-40812", "4410 Larkspur Lane"} {
		if !strings.Contains(res.Narrative, want) {
			t.Errorf("narrative lacks %q: %q", want, res.Narrative)
		}
	}
	for _, filler := range []string{"hiking", "guitar"} {
		if strings.Contains(res.Narrative, filler) {
			t.Errorf("narrative carries filler %q: %q", filler, res.Narrative)
		}
	}
}
