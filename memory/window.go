package memory

import (
	"context"
	"math"

	"github.com/strata-go/strata/memory/store"
)

// view is the newest part of a session, read once per load or fold.
type view struct {
	total int
	epoch int64
	msgs  []store.Message // the newest messages, oldest first
}

// alignSlack is how many extra messages a read fetches beyond the window so
// that a window starting inside a tool group can be extended back to the
// assistant message that made the calls, and the message before the window
// is known.
const alignSlack = 8

// readTail fetches at least the newest want messages (plus slack), growing
// the fetch until the aligned window start has a known predecessor or the
// whole session is in hand. Ownership is checked by the store in the same
// step (ErrNotFound, ErrNotOwner).
func (m *Manager) readTail(ctx context.Context, sessionID, userID string, want int) (view, error) {
	n := want + alignSlack
	for {
		t, err := m.store.Tail(ctx, sessionID, userID, n)
		if err != nil {
			return view{}, err
		}
		v := view{total: t.Total, epoch: t.Epoch, msgs: t.Messages}
		if len(v.msgs) >= v.total || alignedStart(v.msgs, want) > 0 {
			return v, nil
		}
		n *= 2
	}
}

// after returns the session's messages with Seq > cursor, oldest first:
// from v when v reaches back to the cursor, else read from the store.
func (m *Manager) after(ctx context.Context, sessionID, userID string, v view, cursor int64) ([]store.Message, error) {
	if len(v.msgs) == v.total || (len(v.msgs) > 0 && v.msgs[0].Seq <= cursor) {
		i := 0
		for i < len(v.msgs) && v.msgs[i].Seq <= cursor {
			i++
		}
		return v.msgs[i:], nil
	}
	return m.store.Range(ctx, sessionID, userID, cursor, math.MaxInt64, 0)
}

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
		return v.msgs, 0
	}
	return v.msgs[start:], v.msgs[start-1].Seq
}
