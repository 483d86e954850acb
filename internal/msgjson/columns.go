package msgjson

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// The PostgreSQL store keeps a message's tool calls and metadata in two
// JSONB columns, tool_calls and metadata, NULL when the message has none.
// Rows written by every version of the store hold exactly what
// EncodeToolCalls and EncodeMetadata write (PostgreSQL keeps it
// normalized: keys reordered, white space added), so the decoders are
// strict.

// EncodeToolCalls returns the JSON of a message's tool_calls column: the
// array of its calls in the ToolCall shape, each as it is (its type as
// given, "function" left out of a call without one), as encoding/json
// writes it (HTML characters escaped). No calls give "" (the column is
// then NULL).
func EncodeToolCalls(tcs []llms.ToolCall) (string, error) {
	if len(tcs) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(StoredToolCalls(tcs))
	if err != nil {
		return "", fmt.Errorf("tool_calls: %w", err)
	}
	return string(raw), nil
}

// DecodeToolCalls reads a tool_calls column: NULL (empty), JSON null and
// an empty array give nil; a call without "function" has a nil
// FunctionCall. An element that is not a tool call object, an unknown
// field or trailing data is an error naming the column.
func DecodeToolCalls(raw []byte) ([]llms.ToolCall, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var tcs []*ToolCall
	if err := UnmarshalStrict(bytes.NewReader(raw), &tcs); err != nil {
		return nil, decodeError("tool_calls", err)
	}
	if len(tcs) == 0 {
		return nil, nil
	}
	calls := make([]ToolCall, len(tcs))
	for i, tc := range tcs {
		if tc == nil {
			return nil, &FieldError{Field: fmt.Sprintf("tool_calls[%d]", i), Problem: ": want an object, got JSON null"}
		}
		calls[i] = *tc
	}
	return LLMToolCalls(calls), nil
}

// EncodeMetadata returns the JSON of a message's metadata column: an
// object of strings, keys sorted, as encoding/json writes it. No metadata
// gives "" (the column is then NULL).
func EncodeMetadata(md map[string]string) (string, error) {
	if len(md) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(md)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	return string(raw), nil
}

// DecodeMetadata reads a metadata column: NULL (empty), JSON null and an
// empty object give nil; anything but an object of strings is an error
// naming the column.
func DecodeMetadata(raw []byte) (map[string]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var md map[string]string
	if err := UnmarshalStrict(bytes.NewReader(raw), &md); err != nil {
		return nil, decodeError("metadata", err)
	}
	if len(md) == 0 {
		return nil, nil
	}
	return md, nil
}
