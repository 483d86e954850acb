package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
)

// ConversationMemory adapts a Manager's session to langchaingo's
// schema.Memory, so it plugs into chains.NewConversation and
// agents.NewExecutor(..., agents.WithMemory(m)).
//
// By default the history is a string under the "history" key (the
// executor accepts only strings; the conversational agent's prompt has a
// {{.history}} slot): the summary blocks followed by "Human: …" / "AI: …"
// lines. WithReturnMessages switches to []llms.ChatMessage for callers that
// build []llms.MessageContent themselves.
type ConversationMemory struct {
	m                   *Manager
	sessionID, userID   string
	memoryKey           string
	inputKey, outputKey string
	humanPrefix         string
	aiPrefix            string
	returnMessages      bool
}

var _ schema.Memory = (*ConversationMemory)(nil)

// MemoryOption configures a ConversationMemory.
type MemoryOption func(*ConversationMemory)

// WithMemoryKey sets the variable the history is returned under (default
// "history").
func WithMemoryKey(k string) MemoryOption { return func(c *ConversationMemory) { c.memoryKey = k } }

// WithInputKey sets the input variable saved as the user message (default
// "input"; when absent and the inputs hold exactly one value, that value).
func WithInputKey(k string) MemoryOption { return func(c *ConversationMemory) { c.inputKey = k } }

// WithOutputKey sets the output variable saved as the assistant message
// (default: "output", else "text", else the only output).
func WithOutputKey(k string) MemoryOption { return func(c *ConversationMemory) { c.outputKey = k } }

// WithHumanPrefix sets the user line prefix in string mode (default "Human").
func WithHumanPrefix(p string) MemoryOption { return func(c *ConversationMemory) { c.humanPrefix = p } }

// WithAIPrefix sets the assistant line prefix in string mode (default "AI").
func WithAIPrefix(p string) MemoryOption { return func(c *ConversationMemory) { c.aiPrefix = p } }

// WithReturnMessages returns the history as []llms.ChatMessage instead of a
// string.
func WithReturnMessages(on bool) MemoryOption {
	return func(c *ConversationMemory) { c.returnMessages = on }
}

// NewConversationMemory returns a schema.Memory over one session of m.
func NewConversationMemory(m *Manager, sessionID, userID string, opts ...MemoryOption) *ConversationMemory {
	c := &ConversationMemory{m: m, sessionID: sessionID, userID: userID, memoryKey: "history",
		inputKey: "input", humanPrefix: "Human", aiPrefix: "AI"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Memory returns a langchaingo schema.Memory over one session, with string
// history under "history" (see ConversationMemory).
func (m *Manager) Memory(sessionID, userID string) schema.Memory {
	return NewConversationMemory(m, sessionID, userID)
}

// GetMemoryKey implements schema.Memory.
func (c *ConversationMemory) GetMemoryKey(context.Context) string { return c.memoryKey }

// MemoryVariables implements schema.Memory.
func (c *ConversationMemory) MemoryVariables(context.Context) []string {
	return []string{c.memoryKey}
}

// LoadMemoryVariables implements schema.Memory: the session's assembled
// history (Manager.LoadHistory).
func (c *ConversationMemory) LoadMemoryVariables(ctx context.Context, _ map[string]any) (map[string]any, error) {
	msgs, err := c.m.LoadHistory(ctx, c.sessionID, c.userID)
	if err != nil {
		return nil, err
	}
	if c.returnMessages {
		return map[string]any{c.memoryKey: msgs}, nil
	}
	return map[string]any{c.memoryKey: RenderBuffer(msgs, c.humanPrefix, c.aiPrefix)}, nil
}

// SaveContext implements schema.Memory: saves the input as the user message
// and the output as the assistant answer.
func (c *ConversationMemory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	in, err := pickValue(inputs, c.inputKey)
	if err != nil {
		return fmt.Errorf("memory: SaveContext input: %w", err)
	}
	outKeys := []string{c.outputKey}
	if c.outputKey == "" {
		outKeys = []string{"output", "text"}
	}
	var out string
	for _, k := range outKeys {
		if out, err = pickValue(outputs, k); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("memory: SaveContext output: %w", err)
	}
	// The conversational agent keeps the space after "AI:"; it is not content.
	return c.m.SaveTurn(ctx, c.sessionID, c.userID, strings.TrimSpace(in), strings.TrimSpace(out))
}

// Clear implements schema.Memory: deletes the session.
func (c *ConversationMemory) Clear(ctx context.Context) error {
	if err := c.m.DeleteSession(ctx, c.sessionID, c.userID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// pickValue returns values[key] as a string; when key is absent and values
// holds exactly one entry, that entry.
func pickValue(values map[string]any, key string) (string, error) {
	v, ok := values[key]
	if !ok && len(values) == 1 {
		for _, only := range values {
			v, ok = only, true
		}
	}
	if !ok {
		return "", fmt.Errorf("no value for key %q among %v", key, sortedKeys(values))
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("value for key %q is %T, want string", key, v)
	}
	return s, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RenderBuffer renders messages as text, one "<prefix>: <content>" line per
// message (like llms.GetBufferString, but tool calls and tool results are
// shown too): users get humanPrefix, assistants aiPrefix, system messages
// "System", tool results "Tool".
func RenderBuffer(msgs []llms.ChatMessage, humanPrefix, aiPrefix string) string {
	lines := make([]string, 0, len(msgs))
	for _, cm := range msgs {
		sm, err := FromChatMessage(cm)
		if err != nil {
			continue
		}
		var prefix string
		switch sm.Role {
		case RoleUser:
			prefix = humanPrefix
		case RoleAssistant:
			prefix = aiPrefix
		case RoleSystem:
			prefix = "System"
		case RoleTool:
			prefix = "Tool"
		}
		text := sm.Content
		for _, tc := range sm.ToolCalls {
			if tc.FunctionCall != nil {
				text = strings.TrimSpace(text + " [calls " + tc.FunctionCall.Name + " " + tc.FunctionCall.Arguments + "]")
			}
		}
		lines = append(lines, prefix+": "+text)
	}
	return strings.Join(lines, "\n")
}

// ChatHistory adapts one session's stored messages to langchaingo's
// schema.ChatMessageHistory (e.g. for memory.NewConversationBuffer). It
// reads and writes the raw, complete history; for the hierarchical view use
// Manager.Memory or Manager.LoadHistory.
type ChatHistory struct {
	m                 *Manager
	sessionID, userID string
}

var _ schema.ChatMessageHistory = (*ChatHistory)(nil)

// ChatHistory returns a schema.ChatMessageHistory over one session.
func (m *Manager) ChatHistory(sessionID, userID string) *ChatHistory {
	return &ChatHistory{m: m, sessionID: sessionID, userID: userID}
}

// AddMessage implements schema.ChatMessageHistory.
func (h *ChatHistory) AddMessage(ctx context.Context, msg llms.ChatMessage) error {
	return h.m.SaveMessages(ctx, h.sessionID, h.userID, msg)
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
	if err := h.m.DeleteSession(ctx, h.sessionID, h.userID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// Messages implements schema.ChatMessageHistory: every stored message.
func (h *ChatHistory) Messages(ctx context.Context) ([]llms.ChatMessage, error) {
	msgs, err := h.m.Messages(ctx, h.sessionID, h.userID, 0, 0)
	if errors.Is(err, ErrNotFound) {
		return []llms.ChatMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ChatMessages(msgs), nil
}

// SetMessages implements schema.ChatMessageHistory: replaces the session's
// history (and drops its summary).
func (h *ChatHistory) SetMessages(ctx context.Context, msgs []llms.ChatMessage) error {
	if err := h.Clear(ctx); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return h.m.SaveMessages(ctx, h.sessionID, h.userID, msgs...)
}
