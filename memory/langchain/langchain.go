// Package langchain holds the langchaingo adapters of a memory.Manager's
// sessions: ConversationMemory (a schema.Memory over the assembled history)
// and ChatHistory (a schema.ChatMessageHistory over the raw history). The
// package memory names them (memory.ConversationMemory, memory.ChatHistory,
// Manager.Memory, Manager.ChatHistory); they reach the manager only through
// the Session it hands them.
package langchain

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"

	"github.com/strata-go/strata/memory/store"
)

// Session is one session of a memory.Manager as the adapters use it; the
// manager makes it (memory.Manager.ChatHistory, memory.NewConversationMemory).
type Session struct {
	// ID is the session's id.
	ID string
	// Load returns the assembled history (memory.Manager.LoadHistory).
	Load func(ctx context.Context) ([]llms.ChatMessage, error)
	// Save appends msgs atomically (memory.Manager.SaveMessages).
	Save func(ctx context.Context, msgs ...llms.ChatMessage) error
	// Delete deletes the session (memory.Manager.DeleteSession).
	Delete func(ctx context.Context) error
	// Stored returns every stored message (memory.Manager.Messages).
	Stored func(ctx context.Context) ([]store.Message, error)
	// Replace makes msgs the session's whole history, atomically, dropping
	// its summary.
	Replace func(ctx context.Context, msgs []store.Message) error
}

// ConversationMemory adapts a memory.Manager's session to langchaingo's
// schema.Memory, so it plugs into chains.NewConversation and
// agents.NewExecutor(..., agents.WithMemory(m)). It behaves like
// langchaingo's memory.ConversationBuffer over the session's assembled
// history (memory.Manager.LoadHistory):
//
//   - with summaries off (or while the session holds no more than
//     memory.Config.TriggerMessageCount messages) the history is the last
//     2 × memory.Config.MaxConversationTurns messages, like langchaingo's
//     ConversationWindowBuffer with a window of MaxConversationTurns turns;
//   - with summaries on, past the trigger, it is the summary's facts and
//     narrative (as system messages) followed by the verbatim window of
//     memory.Config.RecentMessageCount messages.
//
// By default the history is a string under the "history" key — exactly
// what llms.GetBufferString gives for the history's messages (the
// executor accepts only strings; the conversational agent's prompt has a
// {{.history}} slot). WithReturnMessages returns the []llms.ChatMessage
// itself, never nil.
//
// SaveContext stores the input as a user message and the output as an AI
// message, exactly as given; an empty output is stored as an empty AI
// message, as langchaingo's buffer does. The keys are chosen as
// langchaingo's memory.GetInputValue does: a configured key must be
// present; with none configured, the values must hold exactly one entry.
// Otherwise the error wraps langchaingo's memory.ErrInvalidInputValues.
type ConversationMemory struct {
	s                   Session
	memoryKey           string
	inputKey, outputKey string
	humanPrefix         string
	aiPrefix            string
	returnMessages      bool
}

var _ schema.Memory = (*ConversationMemory)(nil)

// Option configures a ConversationMemory.
type Option func(*ConversationMemory)

// WithMemoryKey sets the variable the history is returned under (default
// "history").
func WithMemoryKey(k string) Option { return func(c *ConversationMemory) { c.memoryKey = k } }

// WithInputKey sets the input variable saved as the user message. Default
// none: the inputs must then hold exactly one value.
func WithInputKey(k string) Option { return func(c *ConversationMemory) { c.inputKey = k } }

// WithOutputKey sets the output variable saved as the AI message. Default
// none: the outputs must then hold exactly one value (an executor that
// returns its intermediate steps needs WithOutputKey("output")).
func WithOutputKey(k string) Option { return func(c *ConversationMemory) { c.outputKey = k } }

// WithHumanPrefix sets the user line prefix in string mode (default "Human").
func WithHumanPrefix(p string) Option { return func(c *ConversationMemory) { c.humanPrefix = p } }

// WithAIPrefix sets the AI line prefix in string mode (default "AI").
func WithAIPrefix(p string) Option { return func(c *ConversationMemory) { c.aiPrefix = p } }

// WithReturnMessages returns the history as []llms.ChatMessage instead of a
// string.
func WithReturnMessages(on bool) Option {
	return func(c *ConversationMemory) { c.returnMessages = on }
}

// NewConversationMemory returns a schema.Memory over the session s (see
// ConversationMemory for the window that applies).
func NewConversationMemory(s Session, opts ...Option) *ConversationMemory {
	c := &ConversationMemory{s: s, memoryKey: "history",
		humanPrefix: "Human", aiPrefix: "AI"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// GetMemoryKey implements schema.Memory.
func (c *ConversationMemory) GetMemoryKey(context.Context) string { return c.memoryKey }

// MemoryVariables implements schema.Memory.
func (c *ConversationMemory) MemoryVariables(context.Context) []string {
	return []string{c.memoryKey}
}

// LoadMemoryVariables implements schema.Memory: the session's assembled
// history (memory.Manager.LoadHistory), as a string or as messages.
func (c *ConversationMemory) LoadMemoryVariables(ctx context.Context, _ map[string]any) (map[string]any, error) {
	msgs, err := c.s.Load(ctx)
	if err != nil {
		return nil, err
	}
	if c.returnMessages {
		if msgs == nil {
			msgs = []llms.ChatMessage{}
		}
		return map[string]any{c.memoryKey: msgs}, nil
	}
	s, err := llms.GetBufferString(msgs, c.humanPrefix, c.aiPrefix)
	if err != nil {
		return nil, fmt.Errorf("memory: load %q: %w", c.s.ID, err)
	}
	return map[string]any{c.memoryKey: s}, nil
}

// SaveContext implements schema.Memory: saves the input as the user message
// and the output as the AI message, exactly as given and atomically. An
// empty output is saved as an empty AI message (unlike memory.Manager.SaveTurn,
// which records a failed turn), as langchaingo's buffer does.
func (c *ConversationMemory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	in, err := lcmemory.GetInputValue(inputs, c.inputKey)
	if err != nil {
		return fmt.Errorf("memory: SaveContext input: %w", err)
	}
	out, err := lcmemory.GetInputValue(outputs, c.outputKey)
	if err != nil {
		return fmt.Errorf("memory: SaveContext output: %w", err)
	}
	return c.s.Save(ctx, llms.HumanChatMessage{Content: in}, llms.AIChatMessage{Content: out})
}

// Clear implements schema.Memory: deletes the session.
func (c *ConversationMemory) Clear(ctx context.Context) error {
	if err := c.s.Delete(ctx); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// ChatHistory adapts one session's stored messages to langchaingo's
// schema.ChatMessageHistory (e.g. for langchaingo's
// memory.NewConversationBuffer or NewConversationWindowBuffer). It reads and
// writes the raw, complete history — no window and no summary apply; for
// the assembled view use memory.Manager.Memory or memory.Manager.LoadHistory. Every
// langchaingo message type round-trips losslessly (see store.FromChatMessage).
type ChatHistory struct{ s Session }

// NewChatHistory returns a schema.ChatMessageHistory over the session s.
func NewChatHistory(s Session) *ChatHistory { return &ChatHistory{s: s} }

var _ schema.ChatMessageHistory = (*ChatHistory)(nil)

// AddMessage implements schema.ChatMessageHistory.
func (h *ChatHistory) AddMessage(ctx context.Context, msg llms.ChatMessage) error {
	return h.s.Save(ctx, msg)
}

// AddUserMessage implements schema.ChatMessageHistory.
func (h *ChatHistory) AddUserMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.HumanChatMessage{Content: text})
}

// AddAIMessage implements schema.ChatMessageHistory.
func (h *ChatHistory) AddAIMessage(ctx context.Context, text string) error {
	return h.AddMessage(ctx, llms.AIChatMessage{Content: text})
}

// Clear implements schema.ChatMessageHistory: deletes the session.
func (h *ChatHistory) Clear(ctx context.Context) error {
	if err := h.s.Delete(ctx); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// Messages implements schema.ChatMessageHistory: every stored message; an
// empty (non-nil) slice for a missing session.
func (h *ChatHistory) Messages(ctx context.Context) ([]llms.ChatMessage, error) {
	msgs, err := h.s.Stored(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return []llms.ChatMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]llms.ChatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.ChatMessage()
	}
	return out, nil
}

// SetMessages implements schema.ChatMessageHistory: replaces the session's
// history (and drops its summary), creating the session when it does not
// exist. Every message is converted and validated before anything changes:
// an invalid one leaves the history as it was. The replacement is one
// atomic store operation (store.Replacer, which both stores of this module
// implement) that checks the ownership in the same step, so the session
// keeps its owner and no other user can take its id in between.
func (h *ChatHistory) SetMessages(ctx context.Context, msgs []llms.ChatMessage) error {
	stored := make([]store.Message, 0, len(msgs))
	for i, cm := range msgs {
		sm, err := store.FromChatMessage(cm)
		if err != nil {
			return fmt.Errorf("memory: replace %q: message %d: %w", h.s.ID, i, err)
		}
		stored = append(stored, sm)
	}
	return h.s.Replace(ctx, stored)
}
