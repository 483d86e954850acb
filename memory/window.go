package memory

import (
	"context"
	"strings"
	"unicode"
)

// view is the newest part of a session, fetched once per load.
type view struct {
	total int
	msgs  []Message // the newest messages, oldest first
}

// alignSlack is how many extra messages a load fetches beyond the window so
// that a window starting inside a tool group can be extended back to the
// assistant message that made the calls, and the message before the window
// is known.
const alignSlack = 8

// window fetches at least the newest want messages (plus slack), growing
// the fetch until the aligned window start has a known predecessor or the
// whole session is in hand.
func (m *Manager) window(ctx context.Context, sessionID string, want int) (view, error) {
	n := want + alignSlack
	for {
		t, err := m.store.Tail(ctx, sessionID, n)
		if err != nil {
			return view{}, err
		}
		v := view{total: t.Total, msgs: t.Messages}
		if len(v.msgs) >= v.total || alignedStart(v.msgs, want) > 0 {
			return v, nil
		}
		n *= 2
	}
}

// alignedStart is the index where the window of the newest want messages
// starts, moved back so that it never starts with a tool result whose
// assistant call precedes it (tool groups stay whole).
func alignedStart(msgs []Message, want int) int {
	start := max(len(msgs)-want, 0)
	for start > 0 && start < len(msgs) && msgs[start].Role == RoleTool {
		start--
	}
	return start
}

// recent returns the verbatim window of the newest n messages (aligned) and
// the Seq of the last message before it (0 when nothing precedes it).
func (v view) recent(n int) ([]Message, int64) {
	start := alignedStart(v.msgs, n)
	if start == 0 {
		return v.msgs, 0
	}
	return v.msgs[start:], v.msgs[start-1].Seq
}

// takeLast assembles the newest n messages (aligned).
func (v view) takeLast(n int, mode Mode) History {
	recent, _ := v.recent(n)
	return History{Messages: ChatMessages(recent), Mode: mode, Recent: recent, Total: v.total}
}

func isBlank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }
