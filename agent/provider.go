package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// Provider names the request rules of a family of chat APIs.
type Provider string

// The providers. Rules that differ:
//
//   - ProviderOpenAI (also every OpenAI-compatible server, Ollama, Mistral, …):
//     the system prompt and the memory's facts and narrative are separate
//     system messages; a stored system message in the middle of the
//     conversation stays a system message; one tool message per result.
//   - ProviderGemini: one system instruction (the system prompt, facts and
//     narrative merged); any later system message becomes a user message
//     "[system note] …" (joined with an adjacent user message); the
//     conversation opens with a user turn (OmittedHistoryNote when trimming
//     left an assistant message first); every function response carries the
//     function's name; the results of one round of calls go in one message.
//   - ProviderAnthropic: the system prompt, system notes and user-first rule
//     as for Gemini; each tool call and each tool result is its own message
//     (langchaingo's anthropic client reads one part per message; the API
//     joins consecutive messages of one role into one turn); the text and
//     tool calls of a response, which the client returns as separate
//     choices, are joined back into one assistant message.
//
// All providers get tool-call ids (generated when the model gave none, as
// Gemini does), tool-call arguments that are a JSON object, and no empty
// assistant texts where the provider rejects them.
const (
	ProviderAuto      Provider = ""
	ProviderOpenAI    Provider = "openai"
	ProviderGemini    Provider = "gemini"
	ProviderAnthropic Provider = "anthropic"
)

// SystemNotePrefix starts the user message a mid-conversation system message
// becomes for Gemini and Anthropic.
const SystemNotePrefix = "[system note] "

// DetectProvider returns the provider of a langchaingo model from its
// concrete type's package: llms/googleai (and its vertex sub-package) is
// ProviderGemini, llms/anthropic is ProviderAnthropic, anything else
// ProviderOpenAI.
func DetectProvider(m llms.Model) Provider {
	t := reflect.TypeOf(m)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ProviderOpenAI
	}
	switch pkg := t.PkgPath(); {
	case pkg == "github.com/tmc/langchaingo/llms/googleai" || strings.HasPrefix(pkg, "github.com/tmc/langchaingo/llms/googleai/"):
		return ProviderGemini
	case pkg == "github.com/tmc/langchaingo/llms/anthropic":
		return ProviderAnthropic
	}
	return ProviderOpenAI
}

func (p Provider) valid() bool {
	switch p {
	case ProviderAuto, ProviderOpenAI, ProviderGemini, ProviderAnthropic:
		return true
	}
	return false
}

// singleSystem reports whether the provider takes one system instruction
// only, at the start.
func (p Provider) singleSystem() bool { return p == ProviderGemini || p == ProviderAnthropic }

// plain returns the value form of a langchaingo message (nil for a nil
// pointer) so the rest of the package switches on value types only.
// Generic and legacy function messages become user text.
func plain(m llms.ChatMessage) llms.ChatMessage {
	switch v := chatmsg.Value(m).(type) {
	case nil:
		return nil
	case llms.HumanChatMessage, llms.AIChatMessage, llms.SystemChatMessage, llms.ToolChatMessage:
		return v
	default:
		return llms.HumanChatMessage{Content: v.GetContent()}
	}
}

// systemNotes turns every system message after the first non-system one
// into a "[system note] …" user message, for providers with a single
// system instruction. Other providers get msgs back unchanged.
func systemNotes(msgs []llms.ChatMessage, p Provider) []llms.ChatMessage {
	if !p.singleSystem() {
		return msgs
	}
	out := make([]llms.ChatMessage, len(msgs))
	leading := true
	for i, m := range msgs {
		out[i] = m
		s, ok := m.(llms.SystemChatMessage)
		switch {
		case !ok:
			leading = false
		case !leading:
			out[i] = llms.HumanChatMessage{Content: SystemNotePrefix + s.Content}
		}
	}
	return out
}

// OmittedHistoryNote is the user message put first, for Gemini and
// Anthropic, when the history sent would otherwise open with an assistant
// message or a tool result (both providers want a user turn first).
const OmittedHistoryNote = "[earlier conversation omitted]"

var omittedNote = llms.HumanChatMessage{Content: OmittedHistoryNote}

// userFirst reports whether the first non-system message, if any, is a user
// message.
func userFirst(msgs []llms.ChatMessage) bool {
	for _, m := range msgs {
		switch m.(type) {
		case llms.SystemChatMessage:
			continue
		case llms.HumanChatMessage:
			return true
		}
		return false
	}
	return true
}

// insertUserFirst puts omittedNote before the first non-system message.
func insertUserFirst(msgs []llms.ChatMessage) []llms.ChatMessage {
	i := 0
	for i < len(msgs) {
		if _, ok := msgs[i].(llms.SystemChatMessage); !ok {
			break
		}
		i++
	}
	out := make([]llms.ChatMessage, 0, len(msgs)+1)
	out = append(out, msgs[:i]...)
	out = append(out, omittedNote)
	return append(out, msgs[i:]...)
}

// mergeSystems merges the leading system messages of a prompt (the system
// prompt, facts, narrative) into one, separated by blank lines, for
// providers with a single system instruction. Other providers get msgs back
// unchanged.
func mergeSystems(msgs []llms.ChatMessage, p Provider) []llms.ChatMessage {
	if !p.singleSystem() {
		return msgs
	}
	n := 0
	var texts []string
	for n < len(msgs) {
		s, ok := msgs[n].(llms.SystemChatMessage)
		if !ok {
			break
		}
		if strings.TrimSpace(s.Content) != "" {
			texts = append(texts, s.Content)
		}
		n++
	}
	if n <= 1 && len(texts) == n {
		return msgs
	}
	rest := msgs[n:]
	out := make([]llms.ChatMessage, 0, len(rest)+1)
	if len(texts) > 0 {
		out = append(out, llms.SystemChatMessage{Content: strings.Join(texts, "\n\n")})
	}
	return append(out, rest...)
}

// contents converts the chat messages of one request into the message
// contents the provider's langchaingo client takes: MessageContents
// (every tool result named after the call it answers), then the provider's
// rules — Gemini gets the results of one round in one message, providers
// with a single system instruction get adjacent user texts joined.
func contents(msgs []llms.ChatMessage, p Provider) []llms.MessageContent {
	base := MessageContents(msgs)
	out := make([]llms.MessageContent, 0, len(base))
	for _, mc := range base {
		last := len(out) - 1
		switch mc.Role {
		case llms.ChatMessageTypeHuman:
			if p.singleSystem() && last >= 0 && isUserText(out[last]) && isUserText(mc) {
				// Keep user turns alternating (e.g. a system note followed by
				// a user message): one user message with two texts.
				out[last].Parts = append(out[last].Parts, mc.Parts...)
				continue
			}
		case llms.ChatMessageTypeAI:
			out = appendAI(out, mc, p)
			continue
		case llms.ChatMessageTypeTool:
			if p == ProviderGemini && last >= 0 && out[last].Role == llms.ChatMessageTypeTool {
				out[last].Parts = append(out[last].Parts, mc.Parts...)
				continue
			}
		}
		out = append(out, mc)
	}
	return out
}

// callNames maps the call ids of the latest assistant tool-call message to
// function names, so each saved tool result gets the name of the call it
// answers (ids need only be unique within one assistant message).
type callNames map[string]string

// track follows the message list: an assistant message with tool calls
// starts a new group, tool results keep it, anything else ends it.
func (n *callNames) track(m llms.ChatMessage) {
	switch m := m.(type) {
	case llms.ToolChatMessage:
	case llms.AIChatMessage:
		*n = nil
		for _, tc := range m.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			if *n == nil {
				*n = make(callNames, len(m.ToolCalls))
			}
			if _, dup := (*n)[tc.ID]; !dup {
				(*n)[tc.ID] = tc.FunctionCall.Name
			}
		}
	default:
		*n = nil
	}
}

func (n callNames) of(id string) string { return n[id] }

// isUserText reports whether m is a user message made of text only.
func isUserText(m llms.MessageContent) bool {
	if m.Role != llms.ChatMessageTypeHuman {
		return false
	}
	for _, p := range m.Parts {
		if _, ok := p.(llms.TextContent); !ok {
			return false
		}
	}
	return true
}

// appendAI appends an assistant message: its text (dropped when empty for
// providers that reject empty texts, or when it calls tools) and its tool
// calls with arguments that are a JSON object; Anthropic gets one part per
// message.
func appendAI(out []llms.MessageContent, mc llms.MessageContent, p Provider) []llms.MessageContent {
	parts := make([]llms.ContentPart, 0, len(mc.Parts))
	for _, part := range mc.Parts {
		switch part := part.(type) {
		case llms.TextContent:
			if part.Text != "" || p == ProviderOpenAI {
				parts = append(parts, part)
			}
		case llms.ToolCall:
			parts = append(parts, toolCallPart(part))
		default:
			parts = append(parts, part)
		}
	}
	if p == ProviderAnthropic {
		// One part per message: the client reads only the first.
		for _, part := range parts {
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{part}})
		}
		return out
	}
	if len(parts) == 0 {
		return out // an empty answer: Gemini and Anthropic reject empty texts
	}
	return append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
}

func toolCallPart(tc llms.ToolCall) llms.ToolCall {
	fc := llms.FunctionCall{}
	if tc.FunctionCall != nil {
		fc = *tc.FunctionCall
	}
	fc.Arguments = objectArgs(fc.Arguments)
	typ := tc.Type
	if typ == "" {
		typ = "function"
	}
	return llms.ToolCall{ID: tc.ID, Type: typ, FunctionCall: &fc}
}

// objectArgs returns args as a JSON object: "{}" for empty or null
// arguments, {"input": args} for anything that is not an object (Gemini and
// Anthropic decode arguments into a map).
func objectArgs(args string) string {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" || trimmed == "null" {
		return "{}"
	}
	var obj map[string]any
	if json.Unmarshal([]byte(trimmed), &obj) == nil && obj != nil {
		return args
	}
	b, err := json.Marshal(map[string]string{toolInputParam: args})
	if err != nil {
		return fmt.Sprintf("{%q: %q}", toolInputParam, args)
	}
	return string(b)
}

// MessageContents converts a history — e.g. what memory.Manager.Prompt returns —
// into the []llms.MessageContent that llms.Model.GenerateContent takes,
// keeping tool calls and their results: an assistant message becomes its
// text (omitted when empty and the message calls tools) followed by one
// llms.ToolCall part per call; a tool result a llms.ToolCallResponse named
// after the call it answers (looked up by id among the calls of the
// assistant message before it); a function message a tool-role
// llms.ToolCallResponse with the function's name, as langchaingo's
// OpenAI-functions agent sends it; a generic message a text of role
// generic. Pointer messages are read as their values; nil ones are skipped.
func MessageContents(msgs []llms.ChatMessage) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	var names map[string]string // call id -> function name, of the latest calls
	for _, cm := range msgs {
		switch m := chatmsg.Value(cm).(type) {
		case llms.SystemChatMessage:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, m.Content))
		case llms.HumanChatMessage:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Content))
		case llms.GenericChatMessage:
			out = append(out, llms.TextParts(llms.ChatMessageTypeGeneric, m.Content))
		case llms.AIChatMessage:
			calls := m.ToolCalls
			if len(calls) == 0 && m.FunctionCall != nil {
				calls = []llms.ToolCall{{Type: "function", FunctionCall: m.FunctionCall}}
			}
			names = make(map[string]string, len(calls))
			var parts []llms.ContentPart
			if m.Content != "" || len(calls) == 0 {
				parts = append(parts, llms.TextContent{Text: m.Content})
			}
			for _, tc := range calls {
				tc = chatmsg.CloneToolCalls([]llms.ToolCall{tc})[0]
				if tc.FunctionCall != nil {
					if _, dup := names[tc.ID]; !dup {
						names[tc.ID] = tc.FunctionCall.Name
					}
				}
				parts = append(parts, tc)
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
			continue
		case llms.ToolChatMessage:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.ID, Name: names[m.ID], Content: m.Content}}})
			continue
		case llms.FunctionChatMessage:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{Name: m.Name, Content: m.Content}}})
			continue
		case nil:
			continue
		default:
			out = append(out, llms.TextParts(m.GetType(), m.GetContent()))
		}
		names = nil
	}
	return out
}
