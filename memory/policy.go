package memory

import (
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// policy decides what the model sees of a session and when, and up to
// where, old messages are folded. The two policies are the types parity and
// chunked; everything else (reading, waiting, folding, saving) is shared by
// the Manager and the fold engine.
type policy interface {
	// loadSize is how many of the newest messages a load reads.
	loadSize() int
	// triggers reports whether a save that left total messages in the
	// session may start a background fold.
	triggers(total int) bool
	// target is the cursor the summary must reach — the Seq of the last
	// message to fold — or 0 when no fold is needed. s is the usable summary
	// (nil: none), unfolded the messages after its cursor (chunked only).
	// background says whether a save asks (its triggers apply) or a load
	// (what the view needs). For a load, trigger "load" means the view
	// cannot be shown as it should without the fold, so the load waits for
	// it a bounded time; any other trigger means the fold is due but the
	// view is complete without it, so it runs in the background.
	target(v view, s *summary.Summary, unfolded []store.Message, background bool) (cut int64, trigger string)
	// show assembles the view from a usable summary s (nil: none) that
	// target was satisfied with, or that is stale (then unfolded are the
	// messages after its cursor, all shown).
	show(v view, s *summary.Summary, unfolded []store.Message) History
	// degraded is the view when no summary is usable and the fold did not
	// finish in time or failed.
	degraded(v view, unfolded []store.Message) History
	// incremental reports whether a fold sends only the messages after the
	// summary's cursor (with the summary) rather than all of them.
	incremental() bool
	// wantsUnfolded reports whether target and show need the messages after
	// the cursor even when the summary is fresh.
	wantsUnfolded() bool
	// backlogOf measures what a session holds beyond its usable summary s
	// (nil: none): unfolded are the messages after its cursor, read in v.
	backlogOf(v view, s *summary.Summary, unfolded []store.Message) backlog
	// due reports whether a save that left the session with backlog b may
	// need a fold; a save that is not due starts none.
	due(b backlog) bool
}

// backlog is what a session holds beyond its summary: the unfolded
// messages, how many of them are user turns, and the tokens of the summary
// plus those messages. Saves keep it up to date between folds (see
// engine.saveDue), so most of them need not read the session to know that
// no fold is due.
type backlog struct{ messages, turns, tokens int }

func newPolicy(cfg Config, cost *trimmer.Trimmer) policy {
	if cfg.Policy == PolicyChunked {
		return chunked{cfg: cfg, cost: cost}
	}
	return parity{cfg: cfg}
}

func covers(s *summary.Summary, cut int64) bool {
	return s != nil && s.UpToSeq >= cut && !s.IsEmpty()
}

func cursorOf(s *summary.Summary) int64 {
	if s == nil {
		return 0
	}
	return s.UpToSeq
}

// render is how the policies show a summary to the model.
func render(cfg Config) summary.RenderOptions {
	return summary.RenderOptions{ShowPrevious: cfg.ShowPreviousValues}
}

func shown(s *summary.Summary, msgs []store.Message, mode string, total int, opt summary.RenderOptions) History {
	out := append(s.BlocksWith(opt), chatMessages(msgs)...)
	return History{Messages: out, Mode: mode, Summary: s, Recent: msgs, Total: total}
}

// takeLast is the newest n messages (aligned), no summary.
func takeLast(v view, n int, mode string) History {
	recent, _ := v.recent(n)
	return shown(nil, recent, mode, v.total, summary.RenderOptions{})
}

// parity behaves as arc-reactor: takeLast up to the trigger; above it,
// the facts and narrative of everything before the verbatim window of the
// last RecentMessageCount messages, folded after every save.
type parity struct{ cfg Config }

func (p parity) takeLastN() int { return 2 * p.cfg.MaxConversationTurns }

func (p parity) loadSize() int { return max(p.takeLastN(), p.cfg.RecentMessageCount) }

func (p parity) triggers(total int) bool { return total > p.cfg.TriggerMessageCount }

func (p parity) target(v view, s *summary.Summary, _ []store.Message, background bool) (int64, string) {
	if v.total <= p.cfg.TriggerMessageCount {
		return 0, ""
	}
	_, cut := v.recent(p.cfg.RecentMessageCount)
	if cut == 0 || covers(s, cut) {
		return 0, ""
	}
	if background {
		return cut, "save"
	}
	return cut, "load"
}

func (p parity) show(v view, s *summary.Summary, unfolded []store.Message) History {
	if v.total <= p.cfg.TriggerMessageCount {
		return takeLast(v, p.takeLastN(), modeTakeLast)
	}
	recent, cut := v.recent(p.cfg.RecentMessageCount)
	switch {
	case cut == 0:
		return shown(nil, recent, modeAll, v.total, render(p.cfg))
	case covers(s, cut):
		return shown(s, recent, modeHierarchical, v.total, render(p.cfg))
	case s != nil:
		return shown(s, unfolded, modeStale, v.total, render(p.cfg))
	}
	return p.degraded(v, nil)
}

func (p parity) degraded(v view, _ []store.Message) History {
	return takeLast(v, p.takeLastN(), modeFallback)
}

func (parity) incremental() bool   { return false }
func (parity) wantsUnfolded() bool { return false }

// Parity folds after every save past the trigger: there is no backlog to
// track.
func (parity) backlogOf(view, *summary.Summary, []store.Message) backlog { return backlog{} }
func (parity) due(backlog) bool                                          { return true }

// chunked shows the summary plus every message it does not cover yet — so
// no message leaves the view unless folded — and keeps that verbatim tail
// between K = RecentMessageCount and K+B messages by folding the oldest ones
// down to K, in the background, when a trigger fires:
//
//	token    summary + unfolded messages exceed the token threshold
//	overflow more than K+B unfolded messages
//	safety   SafetyTurns user turns since the last fold
//
// with that priority (it only names the fold). A load that finds the tail
// over K+B asks for a fold in the background and shows the whole tail at
// once: nothing is lost by showing more than K+B messages, so a reply never
// waits for that fold. Only a tail over the view's token budget, which the
// prompt could not hold, makes the load wait for its fold (a bounded time);
// when that does not finish in time it still shows the whole unfolded tail
// rather than drop anything.
type chunked struct {
	cfg  Config
	cost *trimmer.Trimmer
}

func (c chunked) loadSize() int { return c.cfg.RecentMessageCount + c.cfg.BufferMessageCount }

func (c chunked) triggers(total int) bool { return total > c.cfg.RecentMessageCount }

func (c chunked) target(v view, s *summary.Summary, unfolded []store.Message, background bool) (int64, string) {
	if background {
		trigger := c.foldTrigger(v, s, unfolded)
		start := alignedStart(unfolded, c.cfg.RecentMessageCount)
		if trigger == "" || start == 0 {
			return 0, ""
		}
		return unfolded[start-1].Seq, trigger
	}
	fit := c.fitFrom(v, s, unfolded)
	if fit > 0 {
		return unfolded[max(fit, c.overflowFrom(unfolded))-1].Seq, "load"
	}
	if start := c.overflowFrom(unfolded); start > 0 {
		return unfolded[start-1].Seq, "overflow"
	}
	return 0, ""
}

func (c chunked) show(v view, s *summary.Summary, unfolded []store.Message) History {
	if s.IsEmpty() {
		return shown(nil, unfolded, modeAll, v.total, render(c.cfg))
	}
	mode := modeHierarchical
	if c.overflowFrom(unfolded) > 0 || c.fitFrom(v, s, unfolded) > 0 {
		mode = modeStale
	}
	return shown(c.fitNarrative(v, s, unfolded), unfolded, mode, v.total, render(c.cfg))
}

func (c chunked) degraded(v view, unfolded []store.Message) History {
	return shown(nil, unfolded, modeFallback, v.total, render(c.cfg))
}

func (c chunked) incremental() bool { return c.cfg.FoldMode != foldFull }
func (chunked) wantsUnfolded() bool { return true }

// foldTrigger names the highest-priority trigger that fires, "" for none.
func (c chunked) foldTrigger(v view, s *summary.Summary, unfolded []store.Message) string {
	return c.trigger(c.backlogOf(v, s, unfolded))
}

// trigger names the highest-priority trigger that a backlog fires, "" for
// none.
func (c chunked) trigger(b backlog) string {
	k := c.cfg.RecentMessageCount
	if th := c.tokenThreshold(); th > 0 && b.tokens > th {
		return "token"
	}
	if b.messages > k+c.cfg.BufferMessageCount {
		return "overflow"
	}
	if n := c.cfg.SafetyTurns; n > 0 && b.turns >= n && b.messages > k {
		return "safety"
	}
	return ""
}

func (c chunked) backlogOf(v view, s *summary.Summary, unfolded []store.Message) backlog {
	sums, msgs := c.prices(v, s, unfolded)
	b := backlog{messages: len(unfolded), tokens: sums + msgs}
	b.turns = userTurns(unfolded)
	return b
}

func (c chunked) due(b backlog) bool { return c.trigger(b) != "" }

// userTurns counts the user messages of msgs.
func userTurns(msgs []store.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			n++
		}
	}
	return n
}

// tokenThreshold is the smaller of the absolute and the fractional token
// triggers that are on, 0 when both are off.
func (c chunked) tokenThreshold() int {
	th := c.cfg.FoldTokenThreshold
	if f := c.cfg.FoldTokenFraction; f > 0 {
		frac := int(f * float64(c.cfg.ContextWindowTokens))
		if th == 0 || frac < th {
			th = frac
		}
	}
	return th
}

// viewBudget is the token budget of summary + verbatim tail in what the
// model sees: PromptMemoryBudget when set, else the token trigger's
// threshold, and never more than the prompt budget of the window — so a
// tail the prompt could not hold is folded first instead of being trimmed
// away unfolded.
func (c chunked) viewBudget() int {
	limit := c.cfg.ContextWindowTokens - c.cfg.OutputReserveTokens
	b := c.cfg.PromptMemoryBudget
	if b == 0 {
		b = c.tokenThreshold()
	}
	if b == 0 || b > limit {
		b = limit
	}
	return b
}

// overflowFrom returns the index of the first unfolded message kept when
// the tail is over K+B (folding down to K), 0 when it is not.
func (c chunked) overflowFrom(unfolded []store.Message) int {
	if len(unfolded) > c.cfg.RecentMessageCount+c.cfg.BufferMessageCount {
		return alignedStart(unfolded, c.cfg.RecentMessageCount)
	}
	return 0
}

// fitFrom returns the index of the first unfolded message that the view's
// token budget holds beside the summary (at least MinTailMessages, aligned
// so no tool group is split): 0 when the whole tail fits.
func (c chunked) fitFrom(v view, s *summary.Summary, unfolded []store.Message) int {
	budget := c.viewBudget()
	sums, msgs := c.prices(v, s, unfolded)
	avail := budget - sums
	if msgs <= avail {
		return 0 // the usual case, priced in one pass
	}
	fit := 0
	for i := len(unfolded) - 1; i >= 0; i-- {
		avail -= c.messageTokens(unfolded[i : i+1])
		if avail < 0 {
			break
		}
		fit++
	}
	return alignedStart(unfolded, max(fit, c.cfg.MinTailMessages))
}

// fitNarrative returns s with its narrative cut (oldest part first) when
// summary + tail exceed the prompt-memory budget: the last resort, after
// dropping folded verbatim turns. Facts are never cut. The stored summary is
// unchanged.
func (c chunked) fitNarrative(v view, s *summary.Summary, tail []store.Message) *summary.Summary {
	budget := c.cfg.PromptMemoryBudget
	if budget == 0 || s == nil {
		return s
	}
	sums, msgs := c.prices(v, s, tail)
	over := sums + msgs - budget
	if over <= 0 {
		return s
	}
	est := c.cost.Estimator()
	r := []rune(s.Narrative)
	keep := len(r)
	for keep > 0 && est.Estimate(string(r[len(r)-keep:])) > est.Estimate(s.Narrative)-over {
		keep -= max(keep/8, 1)
	}
	cut := *s
	cut.Narrative = ""
	if keep > 0 {
		cut.Narrative = "…" + string(r[len(r)-keep:])
	}
	return &cut
}

// prices returns the tokens of the summary s and of the messages unfolded,
// priced once per view: the steps of one load or plan (target, show,
// backlogOf) ask for the same pair.
func (c chunked) prices(v view, s *summary.Summary, unfolded []store.Message) (sums, msgs int) {
	if sums, msgs, ok := v.prices.lookup(s, unfolded); ok {
		return sums, msgs
	}
	sums, msgs = c.summaryTokens(s), c.messageTokens(unfolded)
	v.prices.keep(s, unfolded, sums, msgs)
	return sums, msgs
}

func (c chunked) messageTokens(msgs []store.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	return c.cost.Cost(chatMessages(msgs))
}

// summaryTokens prices the system messages a summary becomes.
func (c chunked) summaryTokens(s *summary.Summary) int {
	if s == nil {
		return 0
	}
	return c.cost.Cost(s.BlocksWith(render(c.cfg)))
}

// chunks splits msgs into runs of at most limit tokens (limit <= 0: one
// run), each at least one message and never starting with a tool result
// when that can be avoided.
func chunks(msgs []store.Message, limit int, cost *trimmer.Trimmer) [][]store.Message {
	if limit <= 0 {
		return [][]store.Message{msgs}
	}
	var out [][]store.Message
	start, used := 0, 0
	for i := range msgs {
		c := cost.Cost(chatMessages(msgs[i : i+1]))
		if i > start && used+c > limit && msgs[i].Role != store.RoleTool {
			out = append(out, msgs[start:i])
			start, used = i, 0
		}
		used += c
	}
	return append(out, msgs[start:])
}
