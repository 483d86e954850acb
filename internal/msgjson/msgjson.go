// Package msgjson is the one JSON codec of a stored message
// (store.Message): it owns the JSON shape of a message, of its tool calls
// and of its metadata, the mapping between that shape and store.Message,
// and the rules a message must follow on its way in. The HTTP API's wire
// format, the PostgreSQL store's tool_calls and metadata columns and the
// CLI's transcript files all use it: the wire and the transcripts are the
// Message shape read under different Options (Wire strict, Transcript
// lenient), the columns hold the tool-call array and the metadata object of
// that same shape, and every format's sequence number, timestamps and
// envelope stay with its owner. Decoding is strict unless an option says
// otherwise, errors name the field at fault and wrap their cause, and no
// input makes the codec panic.
package msgjson

import (
	"errors"
	"fmt"
	"reflect"
)

// Message is the JSON shape of a message, OpenAI-like:
//
//	{"role", "content", "tool_calls"?, "tool_call_id"?, "name"?, "metadata"?}
//
// The optional fields are left out when empty. It has no JSON methods of
// its own, so a strict decoder of an enclosing value (UnmarshalStrict)
// refuses unknown fields inside messages as well.
type Message struct {
	// Role is user, assistant, system or tool.
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message, when known.
	Name string `json:"name,omitempty"`
	// Metadata are free-form string annotations, e.g. "model_variant".
	Metadata map[string]string `json:"metadata,omitempty"`
}

// fieldNames are the JSON names of Message's fields, in order (a test
// checks them against the struct tags).
var fieldNames = []string{"role", "content", "tool_calls", "tool_call_id", "name", "metadata"}

// ToolCall is the JSON shape of one tool call, OpenAI's:
//
//	{"id", "type", "function": {"name", "arguments"}}
//
// Function is left out when nil: a stored call may have none. The codec
// never uses llms.ToolCall's own JSON methods: they do not round-trip (its
// UnmarshalJSON drops the function).
type ToolCall struct {
	// ID identifies the call; the tool message answering it repeats it.
	ID string `json:"id"`
	// Type is "function" for every call a client sends.
	Type string `json:"type"`
	// Function is the function called.
	Function *Function `json:"function,omitempty"`
}

// Function is the function a tool call names.
type Function struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments are the arguments as the JSON text the model produced.
	Arguments string `json:"arguments"`
}

// ReservedMetadataPrefix starts the metadata keys the HTTP API keeps for
// itself: clients cannot set them and are never shown them (earlier
// versions of the server stored a session's title under "strata.title" on
// its first message).
const ReservedMetadataPrefix = "strata."

// Options are the rules of one format of a message. The zero value is the
// strictest: the exact shape, unknown fields refused, every rule applied,
// no metadata key reserved.
type Options struct {
	// Lenient reads what chat exports of other tools write as well (see
	// Decode) and relaxes ToMemory: a tool call may lack an id, repeat one
	// or have any type; a tool_call_id on a message other than a tool
	// result is dropped; a metadata key may be empty.
	Lenient bool
	// AllowUnknownFields makes Decode ignore the fields of a message it does
	// not know instead of refusing them.
	AllowUnknownFields bool
	// ReservedPrefix, when not empty, reserves the metadata keys starting
	// with it: ToMemory refuses them and FromMemory leaves them out.
	ReservedPrefix string
}

// The formats of the callers.
var (
	// Wire is the HTTP API's format (server/openapi.json): strict, with the
	// keys starting with ReservedMetadataPrefix reserved.
	Wire = Options{ReservedPrefix: ReservedMetadataPrefix}
	// Transcript is the format of the transcript files the CLI replays:
	// lenient, refusing unknown fields so that a misspelt one is noticed.
	Transcript = Options{Lenient: true}
	// TauBench is the format of a τ-bench trajectory's messages
	// (internal/datasets): Transcript, ignoring the fields it does not
	// know, as trajectories are dumps of provider responses rather than
	// files people write.
	TauBench = Options{Lenient: true, AllowUnknownFields: true}
)

// FieldError is a field of a message that breaks a rule of its format or
// cannot be decoded. Its text is the field's path followed by Problem,
// e.g. `tool_calls[1].function.name is missing` or
// `role = "bot": want user, assistant, system or tool`, so that a caller
// can place it in a larger document: fmt.Errorf("messages[%d].%w", i, err).
type FieldError struct {
	// Field is the field's path in the message: "role",
	// "tool_calls[1].function.name".
	Field string
	// Problem follows the path in the error's text, separator included:
	// " is missing", ": only assistant messages make tool calls".
	Problem string
	// Err is the cause: store.ErrInvalidMessage for a broken rule, the
	// error of encoding/json for a value that cannot be decoded.
	Err error
}

// Error returns the field's path followed by the problem.
func (e *FieldError) Error() string { return e.Field + e.Problem }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// UnknownFieldError is a field a strict decoding does not know.
type UnknownFieldError struct {
	// Field is the field's name as given.
	Field string
	// Hint follows the name in the error's text, separator included, e.g.
	// ` (did you mean "content"? …)`; often empty.
	Hint string
}

// Error returns `unknown field "name"` followed by the hint.
func (e *UnknownFieldError) Error() string { return fmt.Sprintf("unknown field %q%s", e.Field, e.Hint) }

// ErrTrailingData is returned by UnmarshalStrict when something other than
// white space follows the JSON value.
var ErrTrailingData = errors.New("unexpected data after the JSON value")

// Kind names the JSON a Go type decodes from, the way a JSON client thinks
// of it ("a string", "an array", "an object", "true or false", "a
// number"), for errors about a value of the wrong type.
func Kind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	case reflect.Interface:
		return "a value"
	}
	return "a number"
}
