package memory

import (
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// view is the newest part of a session, read once per load or fold.
type view struct {
	total int
	epoch int64
	msgs  []store.Message // the newest messages, oldest first
	// from and all: msgs hold every message with Seq > from (a read of
	// the messages after a summary's cursor that the limit did not cut).
	from int64
	all  bool
	// prices remembers the last pricing of a summary and its unfolded
	// messages for this view (nil: none kept), so that the policy's steps
	// for one load or plan price them once.
	prices *tailPrices
}

// tailPrices is the token cost of a summary and of the messages after its
// cursor, for the one pair (s, msgs) it was computed for: keyed by the
// summary's identity and the slice's first element and length, which a
// load or plan never changes once read.
type tailPrices struct {
	s           *summary.Summary
	first       *store.Message
	n           int
	sums, msgs  int
	initialized bool
}

// lookup returns the prices of (s, msgs) when they are the ones kept.
func (p *tailPrices) lookup(s *summary.Summary, msgs []store.Message) (sums, msgTokens int, ok bool) {
	if p == nil || !p.initialized || p.s != s || p.n != len(msgs) || (len(msgs) > 0 && p.first != &msgs[0]) {
		return 0, 0, false
	}
	return p.sums, p.msgs, true
}

// keep remembers the prices of (s, msgs).
func (p *tailPrices) keep(s *summary.Summary, msgs []store.Message, sums, msgTokens int) {
	if p == nil {
		return
	}
	*p = tailPrices{s: s, n: len(msgs), sums: sums, msgs: msgTokens, initialized: true}
	if len(msgs) > 0 {
		p.first = &msgs[0]
	}
}

// alignSlack is how many extra messages a read fetches beyond the window so
// that a window starting inside a tool group can be extended back to the
// assistant message that made the calls, and the message before the window
// is known.
const alignSlack = 8

// alignedStart is the index where the window of the newest want messages
// starts, moved back so that it never starts with a tool result whose
// assistant call precedes it (tool groups stay whole).
func alignedStart(msgs []store.Message, want int) int {
	start := max(len(msgs)-want, 0)
	for start > 0 && start < len(msgs) && msgs[start].Role == store.RoleTool {
		start--
	}
	return start
}

// recent returns the verbatim window of the newest n messages (aligned) and
// the Seq of the last message before it (0 when nothing precedes it).
func (v view) recent(n int) ([]store.Message, int64) {
	start := alignedStart(v.msgs, n)
	if start == 0 {
		if v.all && v.from > 0 && len(v.msgs) < v.total {
			// msgs are every message after a summary's cursor: the
			// messages before the window are those the summary covers.
			return v.msgs, v.from
		}
		return v.msgs, 0
	}
	return v.msgs[start:], v.msgs[start-1].Seq
}
