package trimmer

import (
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// Ordering rules chat providers enforce. Validate wraps one of these in a
// *ValidationError; test with errors.Is.
var (
	// ErrOrphanToolResult: a tool result that does not answer an unanswered
	// call of the assistant message heading its contiguous run of results
	// (it comes first, follows a non-tool message, repeats an answered id, or
	// names an unknown id).
	ErrOrphanToolResult = errors.New("orphan tool result")
	// ErrMissingToolResult: an assistant tool call with no result among the
	// tool messages that immediately follow it.
	ErrMissingToolResult = errors.New("tool call without result")
	// ErrMisplacedSystem: a system message after the first non-system
	// message.
	ErrMisplacedSystem = errors.New("system message after a non-system message")
	// ErrNilMessage: a nil message (or nil pointer), which no provider can
	// send. Trim drops them.
	ErrNilMessage = errors.New("nil message")
)

// ValidationError locates the first ordering violation in a message list.
type ValidationError struct {
	Index      int    // position of the offending message
	ToolCallID string // the call id concerned, for tool violations
	Err        error  // one of the Err… sentinels of this package
}

// Error describes the violation and where it is.
func (e *ValidationError) Error() string {
	if !errors.Is(e.Err, ErrOrphanToolResult) && !errors.Is(e.Err, ErrMissingToolResult) {
		return fmt.Sprintf("trimmer: message %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("trimmer: message %d: %v (tool call id %q)", e.Index, e.Err, e.ToolCallID)
}

// Unwrap returns the sentinel error.
func (e *ValidationError) Unwrap() error { return e.Err }

// Validate checks msgs against the ordering rules of chat providers and
// returns nil, or a *ValidationError for the violation with the lowest index.
// A tool group is an assistant message with tool calls followed by one
// ToolChatMessage per call, in any order, with nothing in between; every
// other tool result is an orphan. System messages may only open the list.
// Nil messages are violations too (ErrNilMessage). Legacy function messages and generic
// messages with an unknown role break a tool group but are not violations
// themselves.
func Validate(msgs []llms.ChatMessage) error {
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = describe(m, nil)
	}
	seenNonSystem := false
	for i := 0; i < len(items); {
		if items[i].role == roleNone {
			return &ValidationError{Index: i, Err: ErrNilMessage}
		}
		if items[i].role == roleSystem {
			if seenNonSystem {
				return &ValidationError{Index: i, Err: ErrMisplacedSystem}
			}
			i++
			continue
		}
		seenNonSystem = true
		g := scanGroup(items, i)
		switch {
		case g.orphan:
			return &ValidationError{Index: i, ToolCallID: items[i].toolID, Err: ErrOrphanToolResult}
		case g.missing >= 0:
			return &ValidationError{Index: i, ToolCallID: items[i].calls[g.missing].ID, Err: ErrMissingToolResult}
		}
		i = g.end
	}
	return nil
}

// group is the unit the trimmer removes: an assistant message with tool calls
// plus the tool results right after it that answer those calls, or any other
// single message.
type group struct {
	end     int  // index just past the group
	orphan  bool // a tool result that belongs to no group
	missing int  // index in the head's calls of the first unanswered call, or -1
}

func (g group) complete() bool { return !g.orphan && g.missing < 0 }

// scanGroup reads the group that starts at items[i]. Each result consumes one
// unanswered call with its id, so duplicate answers end the group (and are
// orphans) while duplicate call ids each need their own answer.
func scanGroup(items []item, i int) group {
	head := items[i]
	if !head.isGroupHead() {
		return group{end: i + 1, orphan: head.role == roleTool, missing: -1}
	}
	var small [16]bool // avoids an allocation for ordinary parallel-call counts
	var answered []bool
	if n := len(head.calls); n <= len(small) {
		answered = small[:n]
	} else {
		answered = make([]bool, n)
	}
	end := i + 1
	for end < len(items) && items[end].role == roleTool && answer(head.calls, answered, items[end].toolID) {
		end++
	}
	g := group{end: end, missing: -1}
	for k, ok := range answered {
		if !ok {
			g.missing = k
			break
		}
	}
	return g
}

// answer marks the first unanswered call with the given id and reports
// whether there was one.
func answer(calls []llms.ToolCall, answered []bool, id string) bool {
	for k := range calls {
		if !answered[k] && calls[k].ID == id {
			answered[k] = true
			return true
		}
	}
	return false
}
