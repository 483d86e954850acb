package memory

import (
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// policy decides what the model sees of a session and when, and up to
// where, old messages are folded. The two policies are the types parity and
// chunked; everything else (reading, waiting, folding, saving) is shared by
// the Manager and the fold engine. A policy that tracks backlogs between
// folds (chunked) is also a backlogPolicy.
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
	// (what the view needs). For a load, triggerLoad means the view
	// cannot be shown as it should without the fold, so the load waits for
	// it a bounded time; any other trigger means the fold is due but the
	// view is complete without it, so it runs in the background.
	target(v view, s *summary.Summary, unfolded []store.Message, background bool) (cut int64, why trigger)
	// show assembles the view from a usable summary s (nil: none) that
	// target was satisfied with, or that is stale (then unfolded are the
	// messages after its cursor, all shown).
	show(v view, s *summary.Summary, unfolded []store.Message) History
	// degraded is the view when no summary is usable and the fold did not
	// finish in time or failed.
	degraded(v view, unfolded []store.Message) History
}

// backlog is what a session holds beyond its summary: the unfolded
// messages, how many of them are user turns, and the tokens of the summary
// plus those messages. Saves keep it up to date between folds (see
// backlogPolicy), so most of them need not read the session to know that
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

func shown(s *summary.Summary, msgs []store.Message, mode Mode, total int, opt summary.RenderOptions) History {
	out := append(summary.BlocksWith(s, opt), chatMessages(msgs)...)
	return History{Messages: out, Mode: mode, Summary: s, Recent: msgs, Total: total}
}

// takeLast is the newest n messages (aligned), no summary.
func takeLast(v view, n int, mode Mode) History {
	recent, _ := v.recent(n)
	return shown(nil, recent, mode, v.total, summary.RenderOptions{})
}

// parity behaves as arc-reactor: takeLast up to the trigger; above it,
// the facts and narrative of everything before the verbatim window of the
// last RecentMessageCount messages, folded after every save.
//
// Its cost grows with the session: each fold reads every message before
// the window and summarizes them all again from the originals, so a save
// of a session of n messages costs O(n) and the session's folds O(n²).
// The extractive summarizer memoises each message's scan, so what repeats
// is keying the facts against the ledger as it now is, choosing the
// narrative among every sentence, and tracing both to their messages
// (summary benchmark BenchmarkParityRefold measures it per message). That
// work cannot be carried over from the previous fold without changing its
// result: the ledger it keys against changed with that fold, and the
// narrative is chosen among all sentences at once. Saves that arrive while
// a fold runs share the next fold.
type parity struct{ cfg Config }

func (p parity) takeLastN() int { return 2 * p.cfg.MaxConversationTurns }

func (p parity) loadSize() int { return max(p.takeLastN(), p.cfg.RecentMessageCount) }

func (p parity) triggers(total int) bool { return total > p.cfg.TriggerMessageCount }

func (p parity) target(v view, s *summary.Summary, _ []store.Message, background bool) (int64, trigger) {
	if v.total <= p.cfg.TriggerMessageCount {
		return 0, triggerNone
	}
	_, cut := v.recent(p.cfg.RecentMessageCount)
	if cut == 0 || covers(s, cut) {
		return 0, triggerNone
	}
	if background {
		return cut, triggerSave
	}
	return cut, triggerLoad
}

func (p parity) show(v view, s *summary.Summary, unfolded []store.Message) History {
	if v.total <= p.cfg.TriggerMessageCount {
		return takeLast(v, p.takeLastN(), ModeTakeLast)
	}
	recent, cut := v.recent(p.cfg.RecentMessageCount)
	switch {
	case cut == 0:
		return shown(nil, recent, ModeAll, v.total, render(p.cfg))
	case covers(s, cut):
		return shown(s, recent, ModeHierarchical, v.total, render(p.cfg))
	case s != nil:
		return shown(s, unfolded, ModeStale, v.total, render(p.cfg))
	}
	return p.degraded(v, nil)
}

func (p parity) degraded(v view, _ []store.Message) History {
	return takeLast(v, p.takeLastN(), ModeFallback)
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
