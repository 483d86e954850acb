package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Section 10 measures fact fidelity: whether what a support agent must
// remember is still in front of the model after a long conversation. Two
// probes:
//
//   - planted facts: ten facts the user states in the first five turns (two
//     of them changed later), buried under LoCoMo dialogue or τ-bench support
//     chat; at each checkpoint length the final prompt is searched for the
//     latest value of every fact, for superseded values shown as current on
//     a fact line, and the facts block is priced against its budget;
//   - LoCoMo QA evidence retention: for a question whose evidence turn is
//     known and whose answer is spelled out in it, is the answer still in
//     the prompt k messages later, against a decoy of the same kind taken
//     from a neighbouring non-evidence message.

// fidelityPolicyNames are the columns of section 10; index 0 is the
// ceiling.
var fidelityPolicyNames = []string{"full history", "takeLast (last 20 messages)", "Strata parity + extractive", "Strata chunked + extractive"}

// The indices of fidelityPolicyNames.
const (
	fidFull = iota
	fidTakeLast
	fidParity
	fidChunked
)

// spelling is one value as the probe recognises it: any of forms as a whole
// token (case-insensitive, white space collapsed), or, when digits is set,
// any run of phone-number characters whose digits contain digits.
type spelling struct {
	forms  []string
	digits string
}

// in reports whether text shows the value.
func (s spelling) in(text string) bool {
	if s.digits != "" {
		return phoneIn(text, s.digits)
	}
	norm := collapseSpaces(text)
	for _, f := range s.forms {
		if containsValue(norm, collapseSpaces(f)) {
			return true
		}
	}
	return false
}

// phoneIn reports whether text holds a run of phone-number characters
// (digits, spaces, "+", "-", ".", parentheses) whose digits contain want.
func phoneIn(text, want string) bool {
	var digits strings.Builder
	flush := func() bool {
		ok := strings.Contains(digits.String(), want)
		digits.Reset()
		return ok
	}
	for _, r := range text {
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
		case r == ' ' || r == '+' || r == '-' || r == '.' || r == '(' || r == ')':
		default:
			if flush() {
				return true
			}
		}
	}
	return flush()
}

func collapseSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

// plantedFact is one fact of the probe: its kind, its latest value and,
// for a fact the user changes later, the superseded value.
type plantedFact struct {
	kind    string
	latest  spelling
	old     *spelling
	said    string // the latest value as the user says it, for the report
	oldSaid string
}

// plantedFacts are the probe's ten facts. The values are invented for this
// benchmark; accepted spellings cover the usual normalisations (a date in
// ISO form, an amount with the currency code) but every form keeps what
// identifies the value (the currency of an amount, the street number of an
// address).
var plantedFacts = []plantedFact{
	{kind: "name", said: "Ingrid Vasquez-Thorne", latest: spelling{forms: []string{"Ingrid Vasquez-Thorne", "Ingrid Vasquez Thorne"}}},
	{kind: "order id", said: "ORD-784512", latest: spelling{forms: []string{"ORD-784512", "ORD784512"}}},
	{kind: "product SKU", said: "KX-4471-BLU", latest: spelling{forms: []string{"KX-4471-BLU", "KX4471BLU"}}},
	{kind: "case number", said: "CS-93127", latest: spelling{forms: []string{"CS-93127", "CS93127"}}},
	{kind: "amount with currency", said: "€1,249.50", latest: spelling{forms: []string{"€1,249.50", "€1249.50", "€ 1,249.50", "EUR 1,249.50", "EUR 1249.50", "1,249.50 EUR", "1249.50 EUR", "1,249.50 €", "1249.50 €"}}},
	{kind: "date", said: "March 14, 2026", latest: spelling{forms: []string{"March 14, 2026", "March 14 2026", "14 March 2026", "Mar 14, 2026", "2026-03-14"}}},
	{kind: "street address", said: "1187 Wexford Avenue, Apt 5B", oldSaid: "42 Larkspur Lane",
		latest: spelling{forms: []string{"1187 Wexford Avenue", "1187 Wexford Ave"}},
		old:    &spelling{forms: []string{"42 Larkspur Lane", "42 Larkspur Ln"}}},
	{kind: "phone number", said: "(628) 555-0142", oldSaid: "(415) 555-0199",
		latest: spelling{digits: "6285550142"},
		old:    &spelling{digits: "4155550199"}},
	{kind: "email", said: "ingrid.vt@fernmail.example", latest: spelling{forms: []string{"ingrid.vt@fernmail.example"}}},
	{kind: "preference in words", said: "no calls after 6pm", latest: spelling{forms: []string{"no calls after 6pm", "no calls after 6 pm", "no phone calls after 6pm", "no phone calls after 6 pm", "no calls after 6 p.m.", "no calls after 18:00"}}},
}

// plantedTurn is a turn of the probe's user at a fixed position.
type plantedTurn struct {
	at          int // 0-based user turn
	user, reply string
}

// plantedTurns state the facts in the first five turns and change the
// phone (turn 10) and the address (turn 20). The assistant acknowledges
// without repeating the values, so only the user's words carry them.
var plantedTurns = []plantedTurn{
	{0, "Hi, my name is Ingrid Vasquez-Thorne. I'm writing about my order ORD-784512, which still hasn't arrived.", "I'm sorry to hear that, Ingrid. Let me look into it for you."},
	{1, "It's a standing desk, SKU KX-4471-BLU. I paid €1,249.50 for it and it was promised for March 14, 2026.", "Thank you, I have the product and payment details."},
	{2, "Your colleague already opened case CS-93127 about this last week.", "Thanks, I'll add my notes to the existing case."},
	{3, "Please ship the replacement to 42 Larkspur Lane, Springfield. You can reach me at (415) 555-0199 or ingrid.vt@fernmail.example.", "Noted, I have your delivery and contact details."},
	{4, "One more thing: no calls after 6pm, please. I work early shifts, so a text message is fine any time.", "Understood, I'll make sure the team respects that."},
	{9, "By the way, my phone number has changed. The new one is (628) 555-0142; please don't use the old number any more.", "Thanks, I've updated your contact number."},
	{19, "I'm moving next week, so please send the replacement to 1187 Wexford Avenue, Apt 5B, Oakland instead of the Larkspur Lane address.", "Got it, the delivery address is updated."},
}

// probeQuestion is the final user message of every probe run: it asks for
// the facts without stating any of them.
const probeQuestion = "Before we go on, can you read back everything you have on file for me and my order?"

// probeConversation is n user turns: the planted turns at their positions
// and filler turns everywhere else, taken from filler in order.
func probeConversation(id string, filler []data.Turn, n int) data.Conversation {
	c := data.Conversation{ID: id, Turns: make([]data.Turn, 0, n)}
	next := 0
	for i := range n {
		if j := slices.IndexFunc(plantedTurns, func(p plantedTurn) bool { return p.at == i }); j >= 0 {
			p := plantedTurns[j]
			c.Turns = append(c.Turns, data.Turn{User: p.user, Replies: []llms.ChatMessage{llms.AIChatMessage{Content: p.reply}}})
			continue
		}
		c.Turns = append(c.Turns, filler[next%len(filler)])
		next++
	}
	return c
}

// fillerStream returns n filler turns: the turns of convs in order,
// starting at conversation start and wrapping around.
func fillerStream(convs []data.Conversation, start, n int) []data.Turn {
	out := make([]data.Turn, 0, n)
	total := 0
	for _, c := range convs {
		total += len(c.Turns)
	}
	if total == 0 {
		return nil
	}
	for i := 0; len(out) < n; i++ {
		out = append(out, convs[(start+i)%len(convs)].Turns...)
	}
	return out[:n]
}

// probeScore is what one final prompt shows of the planted facts.
type probeScore struct {
	// shown[i]: the latest value of plantedFacts[i] occurs in the prompt.
	shown []bool
	// superseded[i]: plantedFacts[i] was changed and its old value is on a
	// fact line that does not also hold the latest value — the old value
	// shown as current.
	superseded []bool
	// factsBlock is the facts system message ("" when there is none).
	factsBlock string
}

// nShown counts the latest values shown.
func (s probeScore) nShown() int { return countTrue(s.shown) }

// nSuperseded counts the superseded values shown as current.
func (s probeScore) nSuperseded() int { return countTrue(s.superseded) }

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// scorePrompt scores a final prompt against facts. A value is shown when
// it occurs anywhere in the prompt (facts block, narrative or verbatim
// messages, tool-call arguments included). The facts block is the system
// message that starts with summary.FactsHeader; its fact lines are those
// starting with "- ".
func scorePrompt(prompt []llms.ChatMessage, facts []plantedFact) probeScore {
	text := contextText(prompt)
	s := probeScore{shown: make([]bool, len(facts)), superseded: make([]bool, len(facts))}
	for _, m := range prompt {
		if m == nil || m.GetType() != llms.ChatMessageTypeSystem {
			continue
		}
		if c := m.GetContent(); strings.HasPrefix(c, summary.FactsHeader) {
			s.factsBlock = c
			break
		}
	}
	var lines []string
	for _, l := range strings.Split(s.factsBlock, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "- ") {
			lines = append(lines, l)
		}
	}
	for i, f := range facts {
		s.shown[i] = f.latest.in(text)
		if f.old == nil {
			continue
		}
		for _, l := range lines {
			if f.old.in(l) && !f.latest.in(l) {
				s.superseded[i] = true
				break
			}
		}
	}
	return s
}

// probeRun is one replay of the probe: a filler, a seed and a policy,
// scored at every checkpoint length.
type probeRun struct {
	filler, seed, policy int
	at                   []probeCheck // per fidelity length
}

// probeCheck is one checkpoint of a probe run.
type probeCheck struct {
	score        probeScore
	factsTokens  int // the facts block priced by the manager's estimator (0 without one)
	factsCL100k  int // the same block priced by cl100k
	promptTokens int // the whole final prompt, cl100k
	budget       int // the facts block's token budget in the run's config (0: none)
}

// fidelityFillers names the probe's fillers.
var fidelityFillers = []string{"LoCoMo dialogue", "τ-bench airline support"}

// fidelityManager builds the manager of policy p (nil for the full
// history) and a manager whose Prompt prices the full history.
func (r *runner) fidelityManager(p int) (*memory.Manager, error) {
	switch p {
	case fidParity:
		return r.newManager(memory.NewInMemoryStore(), summary.NewInMemoryStore(0), summary.NewExtractiveService(), parityConfig())
	case fidChunked:
		return r.newManager(memory.NewInMemoryStore(), summary.NewInMemoryStore(0), summary.NewExtractiveService(), chunkedConfig())
	default:
		return r.newManager(memory.NewInMemoryStore(), nil, nil, takeLastConfig())
	}
}

// fidelityView keeps a conversation under one policy and returns the final
// prompt at any point.
type fidelityView struct {
	m       *memory.Manager
	full    bool
	msgs    []llms.ChatMessage // the full history
	session string
}

func (r *runner) newFidelityView(p int, session string) (*fidelityView, error) {
	m, err := r.fidelityManager(p)
	if err != nil {
		return nil, err
	}
	return &fidelityView{m: m, full: p == fidFull, session: session}, nil
}

func (v *fidelityView) save(ctx context.Context, t data.Turn) error {
	if v.full {
		v.msgs = append(v.msgs, t.Messages()...)
		return nil
	}
	if err := v.m.SaveMessages(ctx, v.session, benchUser, t.Messages()...); err != nil {
		return err
	}
	return v.m.Flush(ctx)
}

// prompt is what the model receives: the policy's history plus cur (when
// not empty), fitted by the manager's Prompt into its token budget.
func (v *fidelityView) prompt(ctx context.Context, cur string) ([]llms.ChatMessage, error) {
	var hist []llms.ChatMessage
	if v.full {
		hist = slices.Clone(v.msgs)
	} else {
		h, err := v.m.LoadHistory(ctx, v.session, benchUser)
		if err != nil {
			return nil, err
		}
		hist = h
	}
	if cur != "" {
		hist = append(hist, llms.HumanChatMessage{Content: cur})
	}
	prompt, _ := v.m.Prompt("", hist, 0)
	return prompt, nil
}

func (v *fidelityView) close() { _ = v.m.Close() }

// factsTokenBudget is the facts block's token budget under cfg, in tokens
// of the manager's estimator (a zero field means the default).
func factsTokenBudget(cfg memory.Config) int {
	if cfg.FactsTokenBudget > 0 {
		return cfg.FactsTokenBudget
	}
	return memory.DefaultConfig().FactsTokenBudget
}

// runProbe replays the probe conversation of one filler and seed under one
// policy and scores the final prompt at every checkpoint length.
func (r *runner) runProbe(ctx context.Context, conv data.Conversation, pol int, lengths []int) ([]probeCheck, error) {
	v, err := r.newFidelityView(pol, "s10-"+conv.ID)
	if err != nil {
		return nil, err
	}
	defer v.close()
	cfg := v.m.Config()
	var out []probeCheck
	for i, t := range conv.Turns {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := v.save(ctx, t); err != nil {
			return nil, fmt.Errorf("%s turn %d: save: %w", conv.ID, i, err)
		}
		if !slices.Contains(lengths, i+1) {
			continue
		}
		p, err := v.prompt(ctx, probeQuestion)
		if err != nil {
			return nil, fmt.Errorf("%s turn %d: load: %w", conv.ID, i, err)
		}
		c := probeCheck{score: scorePrompt(p, plantedFacts), promptTokens: r.count.messages(p)}
		if pol == fidParity || pol == fidChunked {
			c.budget = factsTokenBudget(cfg)
		}
		if c.score.factsBlock != "" {
			c.factsTokens = v.m.Config().Estimator.Estimate(c.score.factsBlock)
			c.factsCL100k = r.count.text(c.score.factsBlock)
		}
		out = append(out, c)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// LoCoMo QA evidence retention

// qaProbe is one question checked at one distance after its evidence.
type qaProbe struct {
	item   int    // index in the conversation's QA
	k      int    // messages stored after the last evidence message
	answer string // the gold answer
	decoy  string // a same-kind n-gram of a nearby non-evidence message ("" when none)
	turn   int    // check after storing this many turns
}

// qaDistances are the distances, in messages after the last evidence
// message, at which QA evidence is checked.
var qaDistances = []int{20, 50, 100}

// qaStopwords are words a decoy may not consist of only (with the words
// of fewer than four letters).
var qaStopwords = strings.Fields(`about after again also always been before being could did does doing done from have having here just know like little make many more most much must need only other over really said same should some such than that their them then there these they thing things think this those through time very want well were what when where which while will with would your yours yeah year years going good great thanks thank sure feel glad`)

// lowered is a text with its lower-case form, for repeated whole-token
// searches (containsValue lower-cases on every call).
type lowered struct{ text, lower string }

func lower(s string) lowered { return lowered{s, strings.ToLower(s)} }

// has is containsValue(l.text, v).
func (l lowered) has(v string) bool {
	if len(v) <= 3 && strings.ToUpper(v) == v {
		return containsToken(l.text, v)
	}
	return containsToken(l.lower, strings.ToLower(v))
}

// messageTexts returns the text of every stored message of conv, in
// order, and the number of messages stored after each turn.
func messageTexts(conv data.Conversation) (texts []lowered, after []int) {
	for _, t := range conv.Turns {
		for _, m := range t.Messages() {
			texts = append(texts, lower(contextText([]llms.ChatMessage{m})))
		}
		after = append(after, len(texts))
	}
	return texts, after
}

// qaProbes selects the QA probes of one conversation. An item qualifies
// when it is not adversarial (categories 1–4), every evidence id resolves,
// its answer has at least three characters and occurs as a whole token in
// one of its evidence messages. For each distance k the check happens after
// the first turn that leaves at least k messages stored after the last
// evidence message; the pair is kept only when the answer does not occur
// again in those k messages (else the verbatim window would show it, which
// is not memory) and a decoy can be drawn. The decoy is a word n-gram of
// the answer's length from one of the six messages before the last evidence
// message (evidence excluded): it holds a content word, it is neither the
// answer nor in an evidence message nor again in the k messages, and it is
// of the answer's kind when possible (holding a digit when the answer does;
// capitalised, not starting a sentence, when the answer is). Draws are
// seeded by the conversation, the item and k, so the selection is
// deterministic.
func qaProbes(conv data.Conversation, items []data.QAItem, convIndex int) []qaProbe {
	texts, after := messageTexts(conv)
	var out []qaProbe
	for i, it := range items {
		if it.Category < 1 || it.Category > 4 || len([]rune(it.Answer)) < 3 || len(it.EvidenceMsgs) == 0 {
			continue
		}
		last, inEvidence := -1, false
		ok := true
		for _, pos := range it.EvidenceMsgs {
			if pos < 0 || pos >= len(texts) {
				ok = false
				break
			}
			last = max(last, pos)
			if texts[pos].has(it.Answer) {
				inEvidence = true
			}
		}
		if !ok || !inEvidence {
			continue
		}
		for _, k := range qaDistances {
			turn := -1
			for t, n := range after {
				if n >= last+1+k {
					turn = t + 1
					break
				}
			}
			if turn < 0 {
				continue
			}
			later := texts[last+1 : after[turn-1]]
			if anyHas(later, it.Answer) {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(convIndex), uint64(i*1000+k)))
			decoy := drawDecoy(texts, it, last, later, rng)
			if decoy == "" {
				continue
			}
			out = append(out, qaProbe{item: i, k: k, answer: it.Answer, decoy: decoy, turn: turn})
		}
	}
	return out
}

func anyHas(texts []lowered, v string) bool {
	for _, t := range texts {
		if t.has(v) {
			return true
		}
	}
	return false
}

// drawDecoy draws the decoy of qaProbes ("" when there is no candidate).
func drawDecoy(texts []lowered, it data.QAItem, last int, later []lowered, rng *rand.Rand) string {
	n := min(len(strings.Fields(it.Answer)), 8)
	wantDigit := strings.ContainsFunc(it.Answer, unicode.IsDigit)
	wantCap := unicode.IsUpper([]rune(it.Answer)[0])
	answer := strings.ToLower(it.Answer)
	var evidence []lowered
	for _, pos := range it.EvidenceMsgs {
		evidence = append(evidence, texts[pos])
	}
	var all, kind []string
	seen := map[string]bool{}
	for pos := max(0, last-6); pos < last; pos++ {
		if slices.Contains(it.EvidenceMsgs, pos) {
			continue
		}
		words := strings.Fields(texts[pos].text)
		for s := 0; s+n <= len(words); s++ {
			g := strings.Trim(strings.Join(words[s:s+n], " "), `.,!?;:"'()`)
			key := strings.ToLower(g)
			if g == "" || seen[key] {
				continue
			}
			seen[key] = true
			if !hasContentWord(g) || strings.Contains(key, answer) || !texts[pos].has(g) || anyHas(evidence, g) || anyHas(later, g) {
				continue
			}
			all = append(all, g)
			sentenceStart := s == 0 || strings.ContainsAny(words[s-1][len(words[s-1])-1:], ".!?")
			switch {
			case wantDigit && strings.ContainsFunc(g, unicode.IsDigit):
				kind = append(kind, g)
			case !wantDigit && wantCap && unicode.IsUpper([]rune(g)[0]) && !sentenceStart:
				kind = append(kind, g)
			}
		}
	}
	pool := kind
	if len(pool) == 0 {
		pool = all
	}
	if len(pool) == 0 {
		return ""
	}
	return pool[rng.IntN(len(pool))]
}

// hasContentWord reports whether s holds a word of at least four letters
// that is not a stop word, or a number.
func hasContentWord(s string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if strings.ContainsFunc(w, unicode.IsDigit) || (len([]rune(w)) >= 4 && !slices.Contains(qaStopwords, w)) {
			return true
		}
	}
	return false
}

// qaResult is whether a probe's answer and decoy were in the prompt.
type qaResult struct {
	k             int
	answer, decoy bool
}

// runQA replays one LoCoMo conversation under one policy and checks every
// probe after its turn.
func (r *runner) runQA(ctx context.Context, conv data.Conversation, probes []qaProbe, pol int) ([]qaResult, error) {
	v, err := r.newFidelityView(pol, "s10qa-"+conv.ID)
	if err != nil {
		return nil, err
	}
	defer v.close()
	byTurn := map[int][]qaProbe{}
	lastTurn := 0
	for _, p := range probes {
		byTurn[p.turn] = append(byTurn[p.turn], p)
		lastTurn = max(lastTurn, p.turn)
	}
	var out []qaResult
	for i, t := range conv.Turns[:lastTurn] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := v.save(ctx, t); err != nil {
			return nil, fmt.Errorf("%s turn %d: save: %w", conv.ID, i, err)
		}
		ps := byTurn[i+1]
		if len(ps) == 0 {
			continue
		}
		p, err := v.prompt(ctx, "")
		if err != nil {
			return nil, fmt.Errorf("%s turn %d: load: %w", conv.ID, i, err)
		}
		text := contextText(p)
		for _, q := range ps {
			out = append(out, qaResult{k: q.k, answer: containsValue(text, q.answer), decoy: containsValue(text, q.decoy)})
		}
	}
	return out, nil
}

// pairedDiff is the difference between the answer and decoy rates of
// paired results and its 95 % confidence interval (normal approximation
// of the paired difference of proportions).
func pairedDiff(res []qaResult) (answer, decoy, diff, lo, hi float64) {
	n := float64(len(res))
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	var a, d, b, c float64
	for _, x := range res {
		if x.answer {
			a++
		}
		if x.decoy {
			d++
		}
		if x.answer && !x.decoy {
			b++
		}
		if !x.answer && x.decoy {
			c++
		}
	}
	diff = (b - c) / n
	se := math.Sqrt(max(0, (b+c)/n-diff*diff) / n)
	return a / n, d / n, diff, diff - 1.96*se, diff + 1.96*se
}

// ---------------------------------------------------------------------------
// The section

// fidelityJob is one replay: a probe run or a QA conversation.
type fidelityJob struct {
	probe *probeRun
	conv  data.Conversation
	qa    []qaProbe
	qaOut *[]qaResult
	pol   int
}

func runFidelity(ctx context.Context, r *runner, out *sectionOut) error {
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	tau, err := r.loadTau()
	if err != nil {
		return err
	}
	lengths, seeds := r.p.fidLengths, r.p.fidSeeds
	maxLen := lengths[len(lengths)-1]
	tauConvs := make([]data.Conversation, len(tau))
	for i, t := range tau {
		tauConvs[i] = t.Conversation
	}
	sources := [][]data.Conversation{locomo.Conversations, tauConvs}

	var jobs []fidelityJob
	var runs []*probeRun
	// Parity replays are the slowest: queue them first.
	for _, pol := range []int{fidParity, fidChunked, fidTakeLast, fidFull} {
		for f, src := range sources {
			for s := range seeds {
				start := s * len(src) / seeds
				conv := probeConversation(fmt.Sprintf("f%d-s%d", f, s), fillerStream(src, start, maxLen), maxLen)
				run := &probeRun{filler: f, seed: s, policy: pol}
				runs = append(runs, run)
				jobs = append(jobs, fidelityJob{probe: run, conv: conv, pol: pol})
			}
		}
	}
	qaSets := make([][]qaProbe, len(locomo.Conversations))
	qaOut := make([][][]qaResult, len(fidelityPolicyNames)) // [policy][conv]
	for p := range qaOut {
		qaOut[p] = make([][]qaResult, len(locomo.Conversations))
	}
	qaConvs := make([]data.Conversation, len(locomo.Conversations))
	for i, c := range locomo.Conversations {
		// Parity re-reads the whole transcript at every fold: replaying only
		// the first turns of each conversation keeps the section's time
		// bounded.
		qaConvs[i] = c.Truncate(r.p.fidQATurns)
		if i < len(locomo.QA) {
			qaSets[i] = qaProbes(qaConvs[i], locomo.QA[i], i)
		}
	}
	for _, pol := range []int{fidParity, fidChunked, fidTakeLast, fidFull} {
		for i, c := range qaConvs {
			if len(qaSets[i]) > 0 {
				jobs = append(jobs, fidelityJob{conv: c, qa: qaSets[i], qaOut: &qaOut[pol][i], pol: pol})
			}
		}
	}
	r.progress("  fidelity: %d replays (%d probe runs up to %d turns, LoCoMo QA over %d conversations)", len(jobs), len(runs), maxLen, len(locomo.Conversations))
	// Replays wait on background folds as much as they compute: run more
	// of them than there are cores.
	err = parallel(len(jobs), 4*runtime.NumCPU(), func(i int) error {
		j := jobs[i]
		t0 := time.Now()
		defer func() {
			r.progress("  fidelity: replay %d/%d (%s, %s, %d turns) took %s", i+1, len(jobs), shortFidelity(j.pol), j.conv.ID, len(j.conv.Turns), time.Since(t0).Round(time.Millisecond))
		}()
		if j.probe != nil {
			at, err := r.runProbe(ctx, j.conv, j.pol, lengths)
			j.probe.at = at
			return err
		}
		res, err := r.runQA(ctx, j.conv, j.qa, j.pol)
		*j.qaOut = res
		return err
	})
	if err != nil {
		return err
	}
	writeFidelityReport(r, out, runs, qaOut, qaSets, lengths, seeds)
	return nil
}

// fidelityCell aggregates the probe runs of one filler, policy and length.
type fidelityCell struct {
	runs                  int
	shown                 float64 // sum of latest values shown
	minShown              int
	superseded            int // runs with a superseded value shown as current
	perFact               []int
	factsTok              []int
	factsCLMax            int
	overBudget, budgetMax int
	promptTokens          []int
}

func writeFidelityReport(r *runner, out *sectionOut, runs []*probeRun, qaOut [][][]qaResult, qaSets [][]qaProbe, lengths []int, seeds int) {
	cells := map[[3]int]*fidelityCell{} // filler, policy, length index
	for _, run := range runs {
		for li, c := range run.at {
			key := [3]int{run.filler, run.policy, li}
			cell := cells[key]
			if cell == nil {
				cell = &fidelityCell{perFact: make([]int, len(plantedFacts)), minShown: len(plantedFacts)}
				cells[key] = cell
			}
			cell.runs++
			n := c.score.nShown()
			cell.shown += float64(n)
			cell.minShown = min(cell.minShown, n)
			if c.score.nSuperseded() > 0 {
				cell.superseded++
			}
			for i, s := range c.score.shown {
				if s {
					cell.perFact[i]++
				}
			}
			if c.score.factsBlock != "" {
				cell.factsTok = append(cell.factsTok, c.factsTokens)
				cell.factsCLMax = max(cell.factsCLMax, c.factsCL100k)
			}
			cell.budgetMax = max(cell.budgetMax, c.budget)
			if c.budget > 0 && c.factsTokens > c.budget {
				cell.overBudget++
			}
			cell.promptTokens = append(cell.promptTokens, c.promptTokens)
		}
	}
	mean := func(c *fidelityCell) float64 {
		if c == nil || c.runs == 0 {
			return math.NaN()
		}
		return c.shown / float64(c.runs)
	}

	out.printf("Can the model still see what the user said at the start? Two probes, every policy replayed turn by turn with `Flush` after every save (folds deterministic), Strata with the offline extractive summarizer (`summary.NewExtractiveService()`) and default configs. The *final prompt* is what the model would receive: the policy's history (`Manager.LoadHistory`; every message for the full history) plus the final user message, fitted by `Manager.Prompt` into the default budget (128 000 − 4 096 tokens). Values are searched in its whole text — facts block, narrative, verbatim messages, tool-call arguments.\n\n")

	out.printf("### Planted facts\n\n")
	out.printf("The user states ten facts in the first five turns and changes two of them later (turn 10: the phone; turn 20: the address). The assistant acknowledges without repeating any value. Every other turn is filler: **LoCoMo dialogue** (the conversations concatenated, run *s* starting at conversation *s*) or **τ-bench airline support** chats (other customers' names, ids, flights and prices, with tool calls and results; run *s* starting at transcript *s*·%d/%d). After 50, 100, 200 and 400 stored user turns the final prompt (history + \"%s\") is scored:\n\n", len(r.tau), seeds, probeQuestion)
	out.printf("- **latest values shown**: how many of the ten latest values occur in it (accepted spellings: the value as said, and the usual normalisations — ISO date, currency code for €, phone digits with any separators; the street number and the currency are always required);\n")
	out.printf("- **superseded shown as current**: a run counts when the old phone or old address occurs on a fact line (`- key: value` of the `%s` block) that does not also hold the new value (a same-line \"(previously …)\" is allowed, a line of its own is not);\n", summary.FactsHeader)
	out.printf("- **facts block tokens**: the facts system message priced by the manager's estimator, against the facts budget of the config (%s).\n\n", budgetNote(cells))
	out.printf("The full history goes through the same `Prompt`: when it exceeds the budget its oldest messages are dropped first, so the planted facts can leave it too (the τ-bench transcripts carry long tool results).\n\n")
	rows := [][]string{}
	for _, p := range plantedFacts {
		later := "—"
		if p.old != nil {
			later = "changed to `" + p.said + "`"
		}
		first := p.said
		if p.old != nil {
			first = p.oldSaid
		}
		rows = append(rows, []string{p.kind, "`" + first + "`", later})
	}
	out.printf("<details><summary>The planted facts</summary>\n\n%s\n</details>\n\n", mdTable([]string{"fact", "first said (turns 1–5)", "later"}, rows))

	for f, fname := range fidelityFillers {
		out.printf("**Filler: %s** (%d runs per cell)\n\n", fname, seeds)
		out.printf("%s", r.env.provenance(false))
		headers := []string{"policy"}
		for _, n := range lengths {
			headers = append(headers, fmt.Sprintf("%d turns", n))
		}
		headers = append(headers, "superseded as current (runs, all lengths)", fmt.Sprintf("facts block tokens at %d: mean / max", lengths[len(lengths)-1]), fmt.Sprintf("prompt tokens at %d (mean)", lengths[len(lengths)-1]))
		rows := [][]string{}
		for p, pname := range fidelityPolicyNames {
			row := []string{pname}
			sup, total := 0, 0
			for li := range lengths {
				c := cells[[3]int{f, p, li}]
				row = append(row, fmt.Sprintf("%.1f / 10 (min %d)", mean(c), minOr0(c)))
				if c != nil {
					sup += c.superseded
					total += c.runs
				}
			}
			last := cells[[3]int{f, p, len(lengths) - 1}]
			if p == fidParity || p == fidChunked {
				row = append(row, fmt.Sprintf("%d of %d", sup, total))
				if last != nil && len(last.factsTok) > 0 {
					row = append(row, fmt.Sprintf("%s / %s", fmtFloat(meanInt(last.factsTok)), fmtInt(maxInt(last.factsTok))))
				} else {
					row = append(row, "—")
				}
			} else {
				row = append(row, "— (no facts)", "—")
			}
			if last != nil {
				row = append(row, fmtInt(int(meanInt(last.promptTokens))))
			} else {
				row = append(row, "—")
			}
			rows = append(rows, row)
		}
		out.printf("%s\n", mdTable(headers, rows))
	}

	// Which facts are lost, at the longest length.
	li := len(lengths) - 1
	headers := []string{"fact"}
	for _, fname := range fidelityFillers {
		for _, p := range []int{fidTakeLast, fidParity, fidChunked} {
			headers = append(headers, fmt.Sprintf("%s, %s", shortFidelity(p), strings.Split(fname, " ")[0]))
		}
	}
	rows = [][]string{}
	for i, pf := range plantedFacts {
		row := []string{pf.kind}
		for f := range fidelityFillers {
			for _, p := range []int{fidTakeLast, fidParity, fidChunked} {
				c := cells[[3]int{f, p, li}]
				if c == nil {
					row = append(row, "—")
					continue
				}
				row = append(row, fmt.Sprintf("%d/%d", c.perFact[i], c.runs))
			}
		}
		rows = append(rows, row)
	}
	out.printf("**Which latest values are shown at %d turns** (runs showing it)\n\n%s%s\n", lengths[li], r.env.provenance(false), mdTable(headers, rows))

	// QA evidence retention.
	out.printf("### LoCoMo QA evidence retention\n\n")
	nItems := 0
	for _, s := range qaSets {
		nItems += len(s)
	}
	out.printf("For each LoCoMo question (categories 1–4; adversarial ones have no answer) whose evidence turns all resolve and whose answer (three characters or more) is spelled out, as a whole token, in one of them, the final prompt (history alone, no question) is checked *k* = 20, 50 and 100 messages after the last evidence message (after the first turn that leaves at least *k* messages stored after it). A (question, *k*) pair is kept only when the answer is not said again in those *k* messages — otherwise the verbatim window, not memory, would show it.%s\n\n", qaScope(r.p.fidQATurns))
	out.printf("**Chance level (decoy)**: for each pair, a decoy string is drawn — a word n-gram as long as the answer from one of the six messages just before the last evidence message (not an evidence message), holding a content word, of the answer's kind when possible (with a digit when the answer has one; capitalised mid-sentence when the answer is capitalised), neither in an evidence message nor said again in the *k* messages, drawn with a seeded generator. The decoy is as old as the evidence and as likely to be kept by a policy that keeps old text blindly; the answer beating it means the policy keeps what questions are asked about (names, places, dates, events) better than the words around it. **Retention above chance** = the paired difference (answer shown − decoy shown) with its 95 %% confidence interval (normal approximation of the paired difference of proportions) above zero. %s (question, *k*) pairs over %d conversations.\n\n", fmtInt(nItems), len(qaSets))
	out.printf("%s", r.env.provenance(false))
	headers = []string{"policy"}
	for _, k := range qaDistances {
		headers = append(headers, fmt.Sprintf("+%d: answer / decoy (pairs)", k), fmt.Sprintf("+%d: difference [95 %% CI]", k))
	}
	rows = [][]string{}
	qaAt50 := make([][5]float64, len(fidelityPolicyNames))
	for p, pname := range fidelityPolicyNames {
		row := []string{pname}
		for _, k := range qaDistances {
			var res []qaResult
			for _, conv := range qaOut[p] {
				for _, x := range conv {
					if x.k == k {
						res = append(res, x)
					}
				}
			}
			a, d, diff, lo, hi := pairedDiff(res)
			if k == 50 {
				qaAt50[p] = [5]float64{a, d, diff, lo, hi}
			}
			row = append(row, fmt.Sprintf("%s / %s (%d)", pctStr(a), pctStr(d), len(res)), fmtDiff(diff, lo, hi))
		}
		rows = append(rows, row)
	}
	out.printf("%s\n", mdTable(headers, rows))

	// Targets.
	out.printf("### Targets\n\n%s", r.env.provenance(false))
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	rows = [][]string{}
	for f, want := range []float64{9.5, 9} {
		for _, p := range []int{fidParity, fidChunked} {
			m := mean(cells[[3]int{f, p, li}])
			rows = append(rows, []string{fmt.Sprintf("≥ %.1f of 10 latest values at %d turns, %s filler, %s", want, lengths[li], strings.Split(fidelityFillers[f], " ")[0], shortFidelity(p)), fmt.Sprintf("%.1f", m), met(m >= want)})
		}
	}
	sup, total, over, budget, tokMax := 0, 0, 0, 0, 0
	for key, c := range cells {
		if key[1] != fidParity && key[1] != fidChunked {
			continue
		}
		sup += c.superseded
		total += c.runs
		over += c.overBudget
		budget = max(budget, c.budgetMax)
		if len(c.factsTok) > 0 {
			tokMax = max(tokMax, maxInt(c.factsTok))
		}
	}
	rows = append(rows, []string{"superseded values never shown as current (parity and chunked, every filler and length)", fmt.Sprintf("%d of %d runs show one", sup, total), met(sup == 0)})
	if budget > 0 {
		rows = append(rows, []string{"facts block within its token budget", fmt.Sprintf("max %s tokens, budget %s; %d checks over", fmtInt(tokMax), fmtInt(budget), over), met(over == 0)})
	} else {
		rows = append(rows, []string{"facts block within its token budget", fmt.Sprintf("max %s tokens; the config sets no facts budget", fmtInt(tokMax)), "**not met** (no budget)"})
	}
	for _, p := range []int{fidParity, fidChunked} {
		q := qaAt50[p]
		rows = append(rows, []string{fmt.Sprintf("evidence retention at +50 clearly above chance, %s", shortFidelity(p)), fmt.Sprintf("%s vs %s chance (%s, 95 %% CI)", pctStr(q[0]), pctStr(q[1]), fmtDiff(q[2], q[3], q[4])), met(q[3] > 0)})
	}
	out.printf("%s\n", mdTable([]string{"target", "measured", ""}, rows))

	lp, lc := mean(cells[[3]int{0, fidParity, li}]), mean(cells[[3]int{0, fidChunked, li}])
	tp, tc := mean(cells[[3]int{1, fidParity, li}]), mean(cells[[3]int{1, fidChunked, li}])
	out.headline("Fact fidelity (§10), planted facts at %d turns: parity shows %.1f / 10 latest values under LoCoMo filler and %.1f under support filler, chunked %.1f and %.1f (targets 9.5 and 9); superseded values shown as current in %d of %d runs; LoCoMo QA evidence at +50 messages: parity %s, chunked %s vs chance %s / %s.",
		lengths[li], lp, tp, lc, tc, sup, total, pctStr(qaAt50[fidParity][0]), pctStr(qaAt50[fidChunked][0]), pctStr(qaAt50[fidParity][1]), pctStr(qaAt50[fidChunked][1]))
}

// fmtDiff renders a paired difference and its interval in percentage
// points, "n/a" without pairs.
func fmtDiff(diff, lo, hi float64) string {
	if math.IsNaN(diff) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f pp [%+.1f, %+.1f]", 100*diff, 100*lo, 100*hi)
}

// qaScope says how much of each conversation the QA probe replays.
func qaScope(turns int) string {
	if turns <= 0 {
		return ""
	}
	return fmt.Sprintf(" Only the first %d user turns of each conversation are replayed: parity re-reads the whole transcript at every fold, and this bounds the section's time.", turns)
}

func minOr0(c *fidelityCell) int {
	if c == nil {
		return 0
	}
	return c.minShown
}

// budgetNote says where the facts budget comes from.
func budgetNote(cells map[[3]int]*fidelityCell) string {
	b := 0
	for _, c := range cells {
		b = max(b, c.budgetMax)
	}
	if b == 0 {
		return "the default config sets none"
	}
	return fmt.Sprintf("%s tokens in the default config", fmtInt(b))
}

// shortFidelity names a policy in a column header.
func shortFidelity(p int) string {
	return [...]string{"full", "takeLast", "parity", "chunked"}[p]
}
