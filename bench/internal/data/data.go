// Package data reads the third-party conversation sets the benchmarks replay
// — LoCoMo and τ-bench airline — in place from the shared data directory,
// and holds the small hand-written CJK sample used for token-estimation
// error. Nothing from the data sets is copied into the repository.
package data

import (
	"github.com/tmc/langchaingo/llms"
)

// Turn is one user turn of a conversation: the user's message and what
// followed it until the next user message (assistant answers, assistant
// tool calls, tool results), in order.
type Turn struct {
	User    string
	Replies []llms.ChatMessage
}

// Messages returns the turn as chat messages: the user message, then the
// replies.
func (t Turn) Messages() []llms.ChatMessage {
	out := make([]llms.ChatMessage, 0, 1+len(t.Replies))
	out = append(out, llms.HumanChatMessage{Content: t.User})
	return append(out, t.Replies...)
}

// AssistantText joins the text of the turn's assistant messages (tool calls
// and tool results left out), as langchaingo's agents save an answer.
func (t Turn) AssistantText() string {
	var s string
	for _, m := range t.Replies {
		if ai, ok := m.(llms.AIChatMessage); ok && ai.Content != "" {
			if s != "" {
				s += "\n"
			}
			s += ai.Content
		}
	}
	return s
}

// Conversation is a replayable conversation.
type Conversation struct {
	// ID names the conversation ("conv-26", "tau-12-0").
	ID    string
	Turns []Turn
}

// MessageCount is the number of messages the conversation stores.
func (c Conversation) MessageCount() int {
	n := 0
	for _, t := range c.Turns {
		n += 1 + len(t.Replies)
	}
	return n
}

// Truncate returns c with at most n turns (n <= 0: all).
func (c Conversation) Truncate(n int) Conversation {
	if n > 0 && len(c.Turns) > n {
		c.Turns = c.Turns[:n]
	}
	return c
}
