package memory

import (
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// chunked shows the summary plus every message it does not cover yet — so
// no message leaves the view unless folded — and keeps that verbatim tail
// between K = RecentMessageCount and K+B messages by folding the oldest ones
// down to K, in the background, when a trigger fires:
//
//	token    summary + unfolded messages exceed the token threshold
//	overflow more than K+B unfolded messages
//	safety   SafetyTurns user turns among the unfolded messages (the
//	         K kept verbatim by the last fold included, so with K = 10
//	         and alternating turns it fires 10 new turns after a fold)
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

func (c chunked) target(v view, s *summary.Summary, unfolded []store.Message, background bool) (int64, trigger) {
	if background {
		why := c.foldTrigger(v, s, unfolded)
		start := alignedStart(unfolded, c.cfg.RecentMessageCount)
		if why == triggerNone || start == 0 {
			return 0, triggerNone
		}
		return unfolded[start-1].Seq, why
	}
	fit := c.fitFrom(v, s, unfolded)
	if fit > 0 {
		return unfolded[max(fit, c.overflowFrom(unfolded))-1].Seq, triggerLoad
	}
	if start := c.overflowFrom(unfolded); start > 0 {
		return unfolded[start-1].Seq, triggerOverflow
	}
	return 0, triggerNone
}

func (c chunked) show(v view, s *summary.Summary, unfolded []store.Message) History {
	if s.IsEmpty() {
		return shown(nil, unfolded, ModeAll, v.total, render(c.cfg))
	}
	mode := ModeHierarchical
	if c.overflowFrom(unfolded) > 0 || c.fitFrom(v, s, unfolded) > 0 {
		mode = ModeStale
	}
	return shown(c.fitNarrative(v, s, unfolded), unfolded, mode, v.total, render(c.cfg))
}

func (c chunked) degraded(v view, unfolded []store.Message) History {
	return shown(nil, unfolded, ModeFallback, v.total, render(c.cfg))
}

func (c chunked) incremental() bool { return c.cfg.FoldMode != foldFull }

// foldTrigger names the highest-priority trigger that fires, triggerNone
// for none.
func (c chunked) foldTrigger(v view, s *summary.Summary, unfolded []store.Message) trigger {
	return c.trigger(c.backlogOf(v, s, unfolded))
}

// trigger names the highest-priority trigger that a backlog fires,
// triggerNone for none.
func (c chunked) trigger(b backlog) trigger {
	k := c.cfg.RecentMessageCount
	if th := c.tokenThreshold(); th > 0 && b.tokens > th {
		return triggerToken
	}
	if b.messages > k+c.cfg.BufferMessageCount {
		return triggerOverflow
	}
	if n := c.cfg.SafetyTurns; n > 0 && b.turns >= n && b.messages > k {
		return triggerSafety
	}
	return triggerNone
}

func (c chunked) backlogOf(v view, s *summary.Summary, unfolded []store.Message) backlog {
	sums, msgs := c.prices(v, s, unfolded)
	b := backlog{messages: len(unfolded), tokens: sums + msgs}
	b.turns = userTurns(unfolded)
	return b
}

func (c chunked) due(b backlog) bool { return c.trigger(b) != triggerNone }

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
	return c.cost.Cost(summary.BlocksWith(s, render(c.cfg)))
}
