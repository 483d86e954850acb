package record

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// Role is the stored role of a message.
type Role string

// The stored roles. Unknown role strings read back from a store are treated
// as RoleUser, as arc-reactor does.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Message is one stored message of a session. It holds everything a
// langchaingo chat message carries, losslessly, plus the store's bookkeeping.
type Message struct {
	// Seq is the message's sequence number, assigned by the store on append:
	// strictly increasing within a session and never reused for a later
	// message of the same session id. Both of Strata's stores count it per
	// session, so another session's writes never show in it; it is not
	// necessarily dense (erased messages leave gaps, and a session created
	// again under a deleted id goes on from its predecessor's numbers).
	Seq     int64
	Role    Role
	Content string
	// ToolCalls are the tool calls requested by an assistant message.
	ToolCalls []llms.ToolCall
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string
	// Name is the tool's name on a tool message (Gemini needs it on function
	// responses), when known.
	Name string
	// Metadata carries free-form per-message annotations, e.g.
	// "model_variant". Stored and returned, ignored by the memory policy.
	Metadata map[string]string
	// UserID is the user that wrote the message: given to Append (and
	// Replace, Import), the author the caller names — memory.Manager names
	// the user acting, who for a shared session is not its owner — and
	// when empty the session's owner; read back, the author the store
	// recorded. Stores that record participants (ParticipantLister) take
	// them from it.
	UserID string
	// CreatedAt is set by the store on append.
	CreatedAt time.Time
}

// MetadataModelVariant is the metadata key for the model variant that
// produced an assistant message.
const MetadataModelVariant = "model_variant"

// Metadata keys under which FromChatMessage keeps what a stored Message has
// no field for, so Message.ChatMessage gives back the very message saved.
const (
	// metadataGenericRole is the role of a langchaingo generic message
	// (stored as a user message; its Name is the message's name).
	metadataGenericRole = "langchaingo.generic_role"
	// metadataFunctionCall is the JSON of an assistant message's deprecated
	// FunctionCall.
	metadataFunctionCall = "langchaingo.function_call"
	// metadataReasoning is an assistant message's ReasoningContent.
	metadataReasoning = "langchaingo.reasoning_content"
	// metadataCallFromFunction marks tool calls that FromChatMessage derived
	// from a FunctionCall (so providers see the call); they are not returned.
	metadataCallFromFunction = "langchaingo.tool_calls_from_function_call"
)

// FromChatMessage converts a langchaingo chat message into a storable
// Message, losslessly: Message.ChatMessage returns an equal message.
// Human, AI (tool calls, FunctionCall, ReasoningContent), system, tool,
// function and generic messages are supported. A generic message is stored
// as a user message with its role in Metadata[metadataGenericRole] and its
// name in Name; a deprecated function message as a tool message with the
// function's name and no call id; an AI message's FunctionCall is also
// stored as its tool call when it has none, so every provider sees it.
func FromChatMessage(cm llms.ChatMessage) (Message, error) {
	switch m := valueOf(cm).(type) {
	case nil:
		return Message{}, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	case llms.HumanChatMessage:
		return Message{Role: RoleUser, Content: m.Content}, nil
	case llms.AIChatMessage:
		msg := Message{Role: RoleAssistant, Content: m.Content, ToolCalls: cloneToolCalls(m.ToolCalls)}
		if m.FunctionCall != nil {
			raw, err := json.Marshal(m.FunctionCall)
			if err != nil {
				return Message{}, fmt.Errorf("%w: function call: %w", ErrInvalidMessage, err)
			}
			msg.Metadata = map[string]string{metadataFunctionCall: string(raw)}
			if len(m.ToolCalls) == 0 {
				fc := *m.FunctionCall
				msg.ToolCalls = []llms.ToolCall{{Type: "function", FunctionCall: &fc}}
				msg.Metadata[metadataCallFromFunction] = "true"
			}
		}
		if m.ReasoningContent != "" {
			if msg.Metadata == nil {
				msg.Metadata = map[string]string{}
			}
			msg.Metadata[metadataReasoning] = m.ReasoningContent
		}
		return msg, nil
	case llms.SystemChatMessage:
		return Message{Role: RoleSystem, Content: m.Content}, nil
	case llms.ToolChatMessage:
		if m.ID == "" {
			return Message{}, fmt.Errorf("%w: tool result without a tool call id", ErrInvalidMessage)
		}
		return Message{Role: RoleTool, Content: m.Content, ToolCallID: m.ID}, nil
	case llms.FunctionChatMessage:
		if m.Name == "" {
			return Message{}, fmt.Errorf("%w: function result without a function name", ErrInvalidMessage)
		}
		return Message{Role: RoleTool, Content: m.Content, Name: m.Name}, nil
	case llms.GenericChatMessage:
		return Message{Role: RoleUser, Content: m.Content, Name: m.Name,
			Metadata: map[string]string{metadataGenericRole: m.Role}}, nil
	}
	return Message{}, fmt.Errorf("%w: unsupported message type %T", ErrInvalidMessage, cm)
}

// ChatMessage converts a stored message back into a langchaingo chat
// message (a value, not a pointer): the message FromChatMessage was given.
// A tool message without a call id is a function message.
func (m Message) ChatMessage() llms.ChatMessage {
	switch m.Role {
	case RoleAssistant:
		ai := llms.AIChatMessage{Content: m.Content, ToolCalls: cloneToolCalls(m.ToolCalls),
			ReasoningContent: m.Metadata[metadataReasoning]}
		if raw, ok := m.Metadata[metadataFunctionCall]; ok {
			var fc llms.FunctionCall
			if json.Unmarshal([]byte(raw), &fc) == nil {
				ai.FunctionCall = &fc
				if m.Metadata[metadataCallFromFunction] == "true" {
					ai.ToolCalls = nil
				}
			}
		}
		return ai
	case RoleSystem:
		return llms.SystemChatMessage{Content: m.Content}
	case RoleTool:
		if m.ToolCallID == "" && m.Name != "" {
			return llms.FunctionChatMessage{Name: m.Name, Content: m.Content}
		}
		return llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Content}
	default:
		if role, ok := m.Metadata[metadataGenericRole]; ok {
			return llms.GenericChatMessage{Role: role, Name: m.Name, Content: m.Content}
		}
		return llms.HumanChatMessage{Content: m.Content}
	}
}

// Validate checks that a message can be stored by every store: valid UTF-8,
// no NUL bytes (PostgreSQL TEXT rejects them), a known role, tool results
// with a call id, a size within maxBytes (0 = unlimited) and a CreatedAt
// that is zero (the store sets it) or one every store keeps (NormalTime).
func (m Message) Validate(maxBytes int) error {
	if !m.CreatedAt.IsZero() {
		if _, ok := NormalTime(m.CreatedAt); !ok {
			return fmt.Errorf("%w: created_at %s is outside the years 1 to 9999 (in UTC, to the microsecond) that every store keeps", ErrInvalidMessage, m.CreatedAt.Format(time.RFC3339Nano))
		}
	}
	size := len(m.Content)
	for _, tc := range m.ToolCalls {
		if tc.FunctionCall != nil {
			size += len(tc.FunctionCall.Name) + len(tc.FunctionCall.Arguments)
		}
	}
	if maxBytes > 0 && size > maxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, size, maxBytes)
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleSystem:
	case RoleTool:
		if m.ToolCallID == "" && m.Name == "" {
			return fmt.Errorf("%w: tool result without a tool call id", ErrInvalidMessage)
		}
	default:
		return fmt.Errorf("%w: unknown role %q", ErrInvalidMessage, m.Role)
	}
	texts := []string{m.Content, m.ToolCallID, m.Name}
	for _, tc := range m.ToolCalls {
		texts = append(texts, tc.ID, tc.Type)
		if tc.FunctionCall != nil {
			texts = append(texts, tc.FunctionCall.Name, tc.FunctionCall.Arguments)
		}
	}
	for k, v := range m.Metadata {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidMessage)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: text contains a NUL byte", ErrInvalidMessage)
		}
	}
	return nil
}

// Clone returns a deep copy of m (tool calls and metadata included), so a
// store never shares mutable state with its callers.
func (m Message) Clone() Message {
	m.ToolCalls = cloneToolCalls(m.ToolCalls)
	if m.Metadata != nil {
		md := make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			md[k] = v
		}
		m.Metadata = md
	}
	return m
}

// maxTime is the latest time every store keeps and JSON (RFC 3339) writes:
// PostgreSQL's timestamptz goes further, encoding/json stops at year 9999.
var maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC)

// NormalTime returns t as the stores keep it: in UTC, truncated to the
// microsecond (PostgreSQL's precision, which would otherwise round it,
// possibly into the next year). ok is false when the result is outside
// the years 1 to 9999, which not every store keeps and JSON cannot
// write: such a time is refused (ErrInvalidMessage), never stored, and n
// is then the nearest time inside the range (what a store reading a row
// written before the check gives back). The zero time is returned as
// is, with ok true.
func NormalTime(t time.Time) (n time.Time, ok bool) {
	if t.IsZero() {
		return t, true
	}
	n = t.UTC().Truncate(time.Microsecond)
	switch {
	case n.Year() < 1:
		return time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), false
	case n.After(maxTime):
		return maxTime, false
	}
	return n, true
}

// valueOf is cm in its value form: langchaingo accepts both *T and T for
// its message types; a nil interface or nil pointer becomes nil.
func valueOf(cm llms.ChatMessage) llms.ChatMessage {
	rv := reflect.ValueOf(cm)
	if !rv.IsValid() {
		return nil
	}
	if rv.Kind() != reflect.Pointer {
		return cm
	}
	if rv.IsNil() {
		return nil
	}
	if v, ok := rv.Elem().Interface().(llms.ChatMessage); ok {
		return v
	}
	return cm
}

// cloneToolCalls returns a deep copy of calls (nil when empty), so a copy
// handed on never shares a FunctionCall with the caller's. It is the one
// copy of tool calls (internal/chatmsg.CloneToolCalls calls it).
func cloneToolCalls(calls []llms.ToolCall) []llms.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]llms.ToolCall, len(calls))
	for i, tc := range calls {
		out[i] = tc
		if tc.FunctionCall != nil {
			fc := *tc.FunctionCall
			out[i].FunctionCall = &fc
		}
	}
	return out
}
