package summary

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary/internal/extractive"
)

// MaxExtractiveNarrative caps the extractive summarizer's narrative, in
// runes. The narrative is also kept within extractiveNarrativeTokens.
const MaxExtractiveNarrative = 1600

// extractiveNarrativeTokens caps the extractive narrative in tokens
// (trimmer.EstimateScript), below DefaultMaxNarrativeTokens: Apply cuts a
// longer narrative at a sentence boundary, which would drop its newest
// sentences first.
const extractiveNarrativeTokens = 400

// extractiveService adapts the extractive summarizer (package
// summary/internal/extractive, which memoises per-message scans) to
// Service.
type extractiveService struct{ x *extractive.Summarizer }

// NewExtractiveService returns the offline Service: deterministic, no LLM,
// the embedded default when no summarizer model is configured.
//
// Facts come from ExtractFacts over the messages (the existing summary's
// facts keep their keys), with relative dates resolved against
// req.SentAt when it gives the message's time (kept as said otherwise).
// Facts found in user messages are Stated.
//
// The narrative is a choice of salient sentences from the whole
// conversation, within MaxExtractiveNarrative runes and 400 tokens (below
// the default narrative cap, DefaultMaxNarrativeTokens, so that Apply keeps
// it whole): the user's goal (the first sentence of the first user turns
// that is about the case or carries a fact) always, first; then the
// sentences that score highest — those carrying identifiers, addresses,
// contact details, amounts, stated preferences, words about the support
// case, decisions ("let's do a refund", "the refund has been issued"), and
// sentences that tell something a later question may be about (names,
// places, titles, numbers, the speaker's own doings: "Last Friday I went
// to a counseling workshop in Boston") — newer first on ties. Small talk,
// reactions, questions, filler and sentences that repeat another's shape
// with other values are left out even when there is room. Sentences end at
// ".", "!", "?" or "…" followed by a space and at "。", "！" or "？". Each
// message is scanned once, for its facts and its sentences' scores alike,
// and an incremental fold reads only its new messages and the existing
// summary. Chosen sentences appear in
// conversation order as "User: …" and "Assistant: …" ("Assistant called
// <tool>." for a tool-call-only reply); system and tool messages are left
// out. When req.Incremental is set, req.Existing's narrative sentences
// compete with the new ones, its first user sentence staying the goal.
//
// Empty req.Messages give an empty Result and no error; messages that yield
// neither facts nor narrative give an error wrapping ErrEmptyReply. Like the
// LLM service, the facts returned are this run's findings, to be folded
// into the ledger with MergeFacts.
func NewExtractiveService() Service {
	return &extractiveService{x: extractive.New(protectedKey)}
}

// Summarize implements Service.
func (e *extractiveService) Summarize(ctx context.Context, req Request) (Result, error) {
	if len(req.Messages) == 0 {
		return Result{}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	in := extractive.Input{
		Messages:           req.Messages,
		SentAt:             req.SentAt,
		MaxNarrativeRunes:  MaxExtractiveNarrative,
		MaxNarrativeTokens: narrativeTokens(req, extractiveNarrativeTokens),
	}
	if req.Existing != nil {
		in.Known = toExtractive(req.Existing.Facts)
		if req.Incremental {
			in.Carried = req.Existing.Narrative
		}
	}
	out := e.x.Summarize(in)
	res := Result{Narrative: out.Narrative, Facts: fromExtractive(out.Facts)}
	if res.IsEmpty() {
		return Result{}, fmt.Errorf("summary: extractive summarizer found nothing: %w", ErrEmptyReply)
	}
	return res, nil
}

// ExtractFacts finds facts in the text of user, assistant and tool messages
// (system messages are skipped), in order of appearance. Keys say what a
// fact is, from the words around it:
//
//   - e-mail addresses, phone numbers and street addresses the user gives
//     (or the agent confirms as the user's: "your number is now …") go to
//     one slot each — email, phone, delivery_address (billing_address,
//     work_phone, work_email when so called) — and a later value replaces
//     an earlier one, so an update supersedes; a second value in the same
//     message is alternate_phone, …; values said to be old ("my old
//     number", "change it from …") are not facts; the business's or
//     someone else's are other_phone, support_email, location; phone
//     numbers are those of North America, Korea (010-1234-5678, +82
//     10-…), Japan (090-…, +81 90-…), China (+86 138 0013 8000) and
//     France (06 12 34 56 78);
//   - street addresses are English ones ("4410 Larkspur Lane, Apt 3B"),
//     Korean road and lot-number addresses ("서울시 강남구 테헤란로 152",
//     "강남구 역삼동 123-45"; a bare road and
//     number only in a clause about an address or a delivery, never before
//     a counter as in "택배로 2개"), Japanese ones ("東京都渋谷区神南1丁目2-3")
//     and Chinese ones ("上海市浦东新区世纪大道100号"), and German, French,
//     Spanish and Italian ones ("Müllerstraße 12, 10115 Berlin", "12 rue de
//     la Paix", "Calle Mayor 5");
//   - identifiers next to order, booking, reservation, ticket,
//     confirmation, case, invoice, tracking, reference, return, RMA, claim,
//     account, membership, policy or warranty, or their Korean, Japanese,
//     Chinese, German, French, Spanish and Italian words (주문번호,
//     注文番号, 订单号, Bestellnummer, commande, pedido, …) → order_id,
//     case_id, return_id, tracking_number, …; an identifier shaped like a
//     phone number stays an identifier there; product codes after SKU,
//     product code, item number, model or part number → sku,
//     product_code, model_number, part_number;
//   - amounts with a currency ("$1,240.50", "50,000 KRW", "30 dollars",
//     "129,990원", "₩129,990", "3만 원", "12万円", "¥1,280元", "49,90 €")
//     → NUMERIC, keyed by a nearby word in any of those languages
//     (refund_amount, price, payment, fee, total, …) or else amount;
//   - dates ("2024-05-20", "May 1", "05/01/2024", "2026년 12월 5일",
//     "12月5日") → CONDITION, keyed by what they are for, said in English,
//     Korean, Japanese or Chinese words (delivery_date, order_date,
//     birth_date, appointment_date, travel_date, return_date, deadline,
//     event_date) or else date; relative dates ("next Friday", "in 3 days", and
//     "tomorrow", "today", "yesterday" when the clause says what the date
//     is for) likewise; times → callback_time, delivery_time,
//     appointment_time, departure_time or time;
//   - whole preference and constraint clauses the user states ("no calls
//     after 6pm", "allergic to peanuts", "prefer a window seat", "can't
//     climb stairs") → CONDITION contact_preference, delivery_preference,
//     seat_preference, dietary_restriction (one each, the latest wins),
//     allergy, preference, constraint, with the clause as the value;
//   - flight numbers, quantities ("2 bags" → bags = 2, the last mention
//     wins) and JSON leaves of tool results and tool-call arguments (see
//     scanJSON);
//   - self-introductions ("my name is X", "I'm X", "this is X" opening a
//     message) → ENTITY user_name in user messages, agent_name in assistant
//     messages; the first one wins, a name followed by "my dog", "my
//     sister", … is not the speaker's, and once the ledger knows the
//     user's name only an explicit correction ("actually, my name is …")
//     replaces it; "passenger name is X" → passenger_name; the same in
//     Korean, Japanese and Chinese ("제 이름은 김민지예요", "田中花子と申します",
//     "我叫王小明"; a bare "김민지입니다" only opening a message) and in
//     French, German, Spanish and Italian ("je m'appelle", "ich heiße",
//     "me llamo", "mi chiamo");
//   - names with an honorific (김민지 님, 박서준 씨, 田中様, 佐藤さん, 王先生,
//     李女士), kept with it: user_name when the assistant addresses the user
//     by it (opening a message or clause) or the speaker gives it as their
//     own ("我是王先生"), contact_name otherwise; titles such as 고객님,
//     선생님, お客様 are no names.
//
// A value next to a Han, kana or Hangul letter stands alone ("ORD-58213이고",
// "090-1234-5678、"): those scripts write values against their words.
//
// Facts found in a user message are Stated (Fact.Stated), as are the
// user's own contact details the agent sets on their word ("the phone
// number on your account is now …"); a value the user states after a tool
// or the agent gave it becomes stated. Within one run, as in the ledger, a
// contact or identity value the user stated is not replaced by a
// different one from the agent or a tool.
//
// An assistant or tool message listing more than two flight numbers or
// more than four amounts (search results, a fare table, options offered)
// contributes none of them: other customers' and merely offered values
// would flood the ledger.
//
// Values are kept exactly as written (a flight number's inner space too).
// The same value is reported once per kind. When a multi-valued kind has
// several values, keys are numbered: order_id, order_id_2, … Keys and
// values of known (the existing ledger) are respected: a value already in
// the ledger keeps its key, and a new value never takes a key the ledger
// uses for another value, so the result can be folded in with MergeFacts.
func ExtractFacts(msgs []llms.ChatMessage, known []Fact) []Fact {
	return fromExtractive(extractive.ExtractFacts(msgs, toExtractive(known), protectedKey))
}

// protectedKey reports whether key belongs to a contact or identity
// family: the extractive summarizer, like the ledger, does not let the
// agent or a tool replace such a value the user stated.
func protectedKey(key string) bool { return FamilyOf(key).Importance >= ImportanceContact }

// toExtractive returns what the extractive summarizer reads of facts.
func toExtractive(facts []Fact) []extractive.Fact {
	if len(facts) == 0 {
		return nil
	}
	out := make([]extractive.Fact, len(facts))
	for i, f := range facts {
		out[i] = extractive.Fact{Key: f.Key, Value: f.Value, Category: extractive.Category(f.Category), Stated: f.Stated}
	}
	return out
}

// fromExtractive returns the facts the extractive summarizer found.
func fromExtractive(facts []extractive.Fact) []Fact {
	if facts == nil {
		return nil
	}
	out := make([]Fact, len(facts))
	for i, f := range facts {
		out[i] = Fact{Key: f.Key, Value: f.Value, Category: Category(f.Category), Stated: f.Stated}
	}
	return out
}

// narrativeTokens is the narrative budget of a summarizer whose own is
// def: the request's cap when that is smaller.
func narrativeTokens(req Request, def int) int {
	if req.MaxNarrativeTokens > 0 && req.MaxNarrativeTokens < def {
		return req.MaxNarrativeTokens
	}
	return def
}
