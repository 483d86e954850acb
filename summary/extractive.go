package summary

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
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
	if len(req.Seqs) == len(req.Messages) {
		e.trace(&res, req, in)
	}
	return res, nil
}

// trace sets the provenance of res (Fact.Sources, Result.SentenceSources)
// from req.Seqs. A fact's sources are the messages in which the same
// extractor, run on that message alone with the same ledger, finds the
// same value (of the same key stem when one does): each message's scan is
// memoised, so this costs one keying pass per message, not a rescan. A
// narrative sentence's sources are the messages of its speaker that
// contain it word for word (white space and case folded; a cut sentence
// up to its cut; a piece without a speaker, any user or assistant
// message), an "Assistant called …" sentence the replies calling
// those tools, and, for a sentence carried from req.Existing, the
// sources recorded there. What cannot be traced is left without
// provenance (nil): Erase treats it as unknown, never as supported.
func (e *extractiveService) trace(res *Result, req Request, in extractive.Input) {
	type found struct{ stem, value string }
	byStem := map[found][]int64{}
	byValue := map[string][]int64{}
	add := func(m map[string][]int64, k string, q int64) {
		if n := len(m[k]); n == 0 || m[k][n-1] != q {
			m[k] = append(m[k], q)
		}
	}
	for i, facts := range e.x.FactsEach(extractive.Input{Messages: req.Messages, SentAt: req.SentAt, Known: in.Known}) {
		for _, f := range facts {
			k := found{keyStem(f.Key), valueKey(f.Value)}
			if n := len(byStem[k]); n == 0 || byStem[k][n-1] != req.Seqs[i] {
				byStem[k] = append(byStem[k], req.Seqs[i])
			}
			add(byValue, valueKey(f.Value), req.Seqs[i])
		}
	}
	for i, f := range res.Facts {
		src := byStem[found{keyStem(f.Key), valueKey(f.Value)}]
		if src == nil {
			src = byValue[valueKey(f.Value)]
		}
		res.Facts[i].Sources = sortedSources(src)
	}
	carried := map[string][]int64{}
	if req.Incremental && req.Existing != nil {
		for _, ss := range sentenceSources(req.Existing.Narrative, req.Existing.SentenceSources) {
			carried[ss.Digest] = ss.Seqs
		}
	}
	texts := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		if m != nil {
			texts[i] = wordText(m.GetContent())
		}
	}
	for _, sent := range sentences(res.Narrative) {
		d := SentenceDigest(sent)
		var src []int64
		who, body := "", strings.TrimSpace(sent)
		for _, p := range []string{"User", "Assistant"} {
			if rest, ok := strings.CutPrefix(body, p+": "); ok {
				who, body = p, rest
			}
		}
		cut := strings.HasSuffix(body, "…")
		ws := words(strings.ToLower(strings.TrimSuffix(body, "…")))
		if cut && len(ws) > 0 {
			ws = ws[:len(ws)-1] // the cut word may be partial
		}
		called, isCall := strings.CutPrefix(body, "Assistant called ")
		needle := " " + strings.Join(ws, " ") + " "
		for i, m := range req.Messages {
			if m == nil {
				continue
			}
			switch {
			case who == "" && isCall && m.GetType() == llms.ChatMessageTypeAI:
				var names []string
				for _, c := range chatmsg.ToolCalls(m) {
					names = append(names, c.Name)
				}
				if len(names) > 0 && strings.Join(names, ", ")+"." == called {
					src = append(src, req.Seqs[i])
				}
			case len(ws) == 0:
			case who == "User" && m.GetType() == llms.ChatMessageTypeHuman,
				who == "Assistant" && m.GetType() == llms.ChatMessageTypeAI,
				// A piece of a sentence the split left without its speaker.
				who == "" && !isCall && (m.GetType() == llms.ChatMessageTypeHuman || m.GetType() == llms.ChatMessageTypeAI):
				if containsWords(texts[i], needle) {
					src = append(src, req.Seqs[i])
				}
			}
		}
		if c, ok := carried[d]; ok {
			src = append(src, c...)
		}
		if src = sortedSources(src); src != nil {
			res.SentenceSources = append(res.SentenceSources, SentenceSource{Digest: d, Seqs: src})
		}
	}
}

// containsWords reports whether text, a wordText, holds needle, a run of
// words in the same form (" w1 … wn "): strings.Contains(text, needle),
// searched from the first word's first byte, rarer than the space before
// it, so that the search skips ahead faster.
func containsWords(text, needle string) bool {
	body := needle[1:]
	for off := 1; off <= len(text); {
		i := strings.Index(text[off:], body)
		if i < 0 {
			return false
		}
		if text[off+i-1] == ' ' {
			return true
		}
		off += i + 1
	}
	return false
}

// keyStem is a fact key without its number (order_id_2 → order_id),
// normalised.
func keyStem(key string) string {
	k := NormalizeKey(key)
	if i := strings.LastIndexByte(k, '_'); i > 0 && strings.Trim(k[i+1:], "0123456789") == "" && i+1 < len(k) {
		return k[:i]
	}
	return k
}

// sortedSources is src sorted without repeats, nil when empty.
func sortedSources(src []int64) []int64 {
	if len(src) == 0 {
		return nil
	}
	out := slices.Clone(src)
	slices.Sort(out)
	return slices.Compact(out)
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
