package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/strata-go/strata/memory/store"
)

// This file holds the check of message lists that is more than a field's
// validation: tool results must answer a call of their session. (Fitting a
// context into its budget is the manager's: see handleContext.)

// toolLookupPage is how many stored messages one read of the tool-call
// lookup returns.
const toolLookupPage = 500

// firstUnanswered returns the index of the first tool result in msgs that
// answers neither a tool call made earlier in msgs nor one of stored, with
// its call id; -1 when every result answers a call.
func firstUnanswered(msgs []store.Message, stored map[string]bool) (int, string) {
	made := map[string]bool{}
	for i, m := range msgs {
		for _, tc := range m.ToolCalls {
			made[tc.ID] = true
		}
		if m.Role == store.RoleTool && !made[m.ToolCallID] && !stored[m.ToolCallID] {
			return i, m.ToolCallID
		}
	}
	return -1, ""
}

// unknownToolCall is the answer to a tool result whose call is not in the
// session.
func unknownToolCall(i int, call string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_message",
		msg: fmt.Sprintf("messages[%d].tool_call_id %q: no tool call with this id precedes it in the request or in the session", i, call)}
}

// checkToolResults returns an *apiError (400) when a tool result of msgs
// answers no tool call: neither one made earlier in msgs nor one the
// session already holds. The stored calls are looked up through the
// manager, as user, only when the request does not hold them all; a
// missing session or another user's gives ErrNotFound or ErrNotOwner.
//
// The lookup and the append that follows are two steps, and that is safe:
// only the session's owner can append to it (the append checks ownership
// in the same atomic step as the write) or delete it, so the one
// interleaving possible is the owner deleting the session in between, and
// then the append finds no session and stores nothing (404). Stored
// messages are never changed, so a call found stays in the session as long
// as the session does. (A session the owner deleted and re-created under
// the same id in between — possible only through the Go library, since
// this API names new sessions itself — would get the result beside no
// call; it is still the owner's own session.)
func (s *Server) checkToolResults(ctx context.Context, id, user string, msgs []store.Message) error {
	i, _ := firstUnanswered(msgs, nil)
	if i < 0 {
		return nil
	}
	wanted := map[string]bool{}
	for _, m := range msgs[i:] {
		if m.Role == store.RoleTool {
			wanted[m.ToolCallID] = true
		}
	}
	stored := map[string]bool{}
	for after := int64(0); len(wanted) > 0; {
		page, err := s.mgr.Messages(ctx, id, user, after, toolLookupPage)
		if err != nil {
			return err
		}
		for _, m := range page {
			for _, tc := range m.ToolCalls {
				if wanted[tc.ID] {
					stored[tc.ID] = true
					delete(wanted, tc.ID)
				}
			}
		}
		if len(page) < toolLookupPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if i, call := firstUnanswered(msgs, stored); i >= 0 {
		return unknownToolCall(i, call)
	}
	return nil
}
