package memory

import (
	"github.com/tmc/langchaingo/schema"

	"github.com/strata-go/strata/memory/langchain"
)

// ConversationMemory adapts a Manager's session to langchaingo's
// schema.Memory (chains.NewConversation, agents.WithMemory): the session's
// assembled history (LoadHistory) as a string or as messages. See
// langchain.ConversationMemory for the window and key rules.
type ConversationMemory = langchain.ConversationMemory

// ChatHistory adapts one session's raw, complete stored history to
// langchaingo's schema.ChatMessageHistory. See langchain.ChatHistory.
type ChatHistory = langchain.ChatHistory

// MemoryOption configures a ConversationMemory.
type MemoryOption = langchain.Option

// WithMemoryKey sets the variable the history is returned under (default
// "history").
func WithMemoryKey(k string) MemoryOption { return langchain.WithMemoryKey(k) }

// WithInputKey sets the input variable saved as the user message. Default
// none: the inputs must then hold exactly one value.
func WithInputKey(k string) MemoryOption { return langchain.WithInputKey(k) }

// WithOutputKey sets the output variable saved as the AI message. Default
// none: the outputs must then hold exactly one value (an executor that
// returns its intermediate steps needs WithOutputKey("output")).
func WithOutputKey(k string) MemoryOption { return langchain.WithOutputKey(k) }

// WithHumanPrefix sets the user line prefix in string mode (default "Human").
func WithHumanPrefix(p string) MemoryOption { return langchain.WithHumanPrefix(p) }

// WithAIPrefix sets the AI line prefix in string mode (default "AI").
func WithAIPrefix(p string) MemoryOption { return langchain.WithAIPrefix(p) }

// WithReturnMessages returns the history as []llms.ChatMessage instead of a
// string.
func WithReturnMessages(on bool) MemoryOption { return langchain.WithReturnMessages(on) }

// NewConversationMemory returns a schema.Memory over one session of m (see
// ConversationMemory for the window that applies).
func NewConversationMemory(m *Manager, sessionID, userID string, opts ...MemoryOption) *ConversationMemory {
	return langchain.NewConversationMemory(m.Session(sessionID, userID).langchain(), opts...)
}

// Memory returns a langchaingo schema.Memory over one session, with string
// history under "history": NewConversationMemory with no options. With
// summaries off it shows the last 2 × Config.MaxConversationTurns messages.
func (m *Manager) Memory(sessionID, userID string) schema.Memory {
	return NewConversationMemory(m, sessionID, userID)
}

// ChatHistory returns a schema.ChatMessageHistory over one session.
func (m *Manager) ChatHistory(sessionID, userID string) *ChatHistory {
	return langchain.NewChatHistory(m.Session(sessionID, userID).langchain())
}
