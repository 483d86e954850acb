package msgjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-go/strata/internal/text"
)

// UnmarshalStrict decodes the one JSON value r holds into v, strictly: an
// object field v has no place for, at any depth, is an
// *UnknownFieldError, and anything but white space after the value is
// ErrTrailingData. An input of white space only is io.EOF. Other errors
// are those of encoding/json (*json.SyntaxError, *json.UnmarshalTypeError,
// io.ErrUnexpectedEOF) or of r (say, *http.MaxBytesError), as they are,
// for the caller to word.
func UnmarshalStrict(r io.Reader, v any) error {
	return unmarshal(r, v, false)
}

func unmarshal(r io.Reader, v any, allowUnknown bool) error {
	dec := json.NewDecoder(r)
	if !allowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return unknownField(err)
	}
	var extra json.RawMessage
	err := dec.Decode(&extra)
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil, errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrTrailingData
	}
	return err // reading r failed
}

// unknownField turns encoding/json's error for an unknown field, which has
// no type of its own, into an *UnknownFieldError.
func unknownField(err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, qerr := strconv.Unquote(rest); qerr == nil {
			return &UnknownFieldError{Field: name}
		}
	}
	return err
}

// wrapped is an error worded for people that keeps its cause.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

// decodeError words an error of UnmarshalStrict or json.Unmarshal; field,
// when not empty, is the path of the value that was decoded.
func decodeError(field string, err error) error {
	var (
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	join := func(sub string) string {
		switch {
		case field == "":
			return sub
		case sub == "":
			return field
		}
		return field + "." + sub
	}
	switch {
	case errors.As(err, &ute):
		if f := join(ute.Field); f != "" {
			return &FieldError{Field: f, Problem: fmt.Sprintf(": want %s, got JSON %s", Kind(ute.Type), ute.Value), Err: err}
		}
		return &wrapped{msg: fmt.Sprintf("want %s, got JSON %s", Kind(ute.Type), ute.Value), err: err}
	case errors.As(err, &se):
		return at(field, &wrapped{msg: fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error()), err: err})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return at(field, &wrapped{msg: "malformed JSON: unexpected end", err: err})
	case errors.Is(err, io.EOF):
		return at(field, &wrapped{msg: "empty: want a JSON value", err: err})
	}
	return at(field, err)
}

// at places err, an error about the value at path field, in the message.
func at(field string, err error) error {
	if field == "" {
		return err
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: field + "." + fe.Field, Problem: fe.Problem, Err: fe.Err}
	}
	return &FieldError{Field: field, Problem: ": " + err.Error(), Err: err}
}

// Decode reads one message object in the format o describes. Strictly
// (o.Lenient false), it is the Message shape exactly, read by
// UnmarshalStrict (unknown fields refused unless o.AllowUnknownFields). A
// lenient decoding also reads what chat exports of other tools write, and
// normalizes it into the Message shape:
//
//   - a role in any case, with surrounding white space, and the aliases
//     human (user), ai and model (assistant), developer (system) and
//     function (tool);
//   - content null, or an array of parts whose texts are joined by new
//     lines (parts without text, such as images, are skipped);
//   - tool calls in the flat form {"id", "name", "arguments"} too, with
//     arguments given as a JSON value (kept as compact JSON text), and
//     fields of a call it does not know (such as "index") ignored;
//   - the fields refusal, annotations and audio of OpenAI's responses,
//     ignored.
//
// An unknown field is refused with a hint at the field meant, unless
// o.AllowUnknownFields. Empty tool_calls and metadata decode as nil, so a
// decoded message encodes (encoding/json) to JSON that decodes to it again.
// The rules of the format are ToMemory's to check.
func Decode(data []byte, o Options) (Message, error) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return Message{}, errors.New("want an object, got JSON null")
	}
	var m Message
	var err error
	if o.Lenient {
		m, err = decodeLenient(data, o)
	} else if err = unmarshal(bytes.NewReader(data), &m, o.AllowUnknownFields); err != nil {
		err = decodeError("", err)
	}
	if err != nil {
		return Message{}, err
	}
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	if len(m.Metadata) == 0 {
		m.Metadata = nil
	}
	return m, nil
}

// ignoredFields are fields of OpenAI's chat messages a lenient decoding
// accepts and ignores.
var ignoredFields = []string{"refusal", "annotations", "audio"}

// fieldSuggestions map misspellings and other tools' names of a field (in
// lower case) to the field meant.
var fieldSuggestions = map[string]string{
	"text": "content", "message": "content", "body": "content", "msg": "content", "contents": "content",
	"speaker": "role", "author": "role", "from": "role", "type": "role",
	"toolcalls": "tool_calls", "tool_call": "tool_calls", "toolcallid": "tool_call_id", "call_id": "tool_call_id",
	"id": "tool_call_id", "parts": "content",
}

// roleAliases map the role names of other chat formats (in lower case) to
// the role meant.
var roleAliases = map[string]string{
	"user": "user", "human": "user",
	"assistant": "assistant", "ai": "assistant", "model": "assistant",
	"system": "system", "developer": "system",
	"tool": "tool", "function": "tool",
}

// decodeLenient is Decode of a lenient format, field by field, so that
// every error names its field.
func decodeLenient(data []byte, o Options) (Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return Message{}, decodeError("", err)
	}
	if !o.AllowUnknownFields {
		var unknown []string
		for k := range fields {
			if !slices.Contains(fieldNames, k) && !slices.Contains(ignoredFields, k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			k := slices.Min(unknown)
			hint := ""
			if s, ok := fieldSuggestions[strings.ToLower(k)]; ok {
				hint = fmt.Sprintf("did you mean %q? ", s)
			}
			return Message{}, &UnknownFieldError{Field: k,
				Hint: fmt.Sprintf(" (%sa message has %s)", hint, strings.Join(fieldNames, ", "))}
		}
	}
	var m Message
	field := func(name string, v any) error {
		raw, ok := fields[name]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return decodeError(name, err)
		}
		return nil
	}
	if err := field("role", &m.Role); err != nil {
		return Message{}, err
	}
	if r, ok := roleAliases[strings.ToLower(strings.TrimSpace(m.Role))]; ok {
		m.Role = r
	} else if strings.TrimSpace(m.Role) == "" {
		m.Role = ""
	}
	var err error
	if m.Content, err = contentText(fields["content"]); err != nil {
		return Message{}, err
	}
	var calls []json.RawMessage
	if err := field("tool_calls", &calls); err != nil {
		return Message{}, err
	}
	for i, raw := range calls {
		tc, err := lenientToolCall(raw)
		if err != nil {
			return Message{}, at(fmt.Sprintf("tool_calls[%d]", i), err)
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	if err := field("tool_call_id", &m.ToolCallID); err != nil {
		return Message{}, err
	}
	if err := field("name", &m.Name); err != nil {
		return Message{}, err
	}
	if err := field("metadata", &m.Metadata); err != nil {
		return Message{}, err
	}
	return m, nil
}

// contentText reads content given as a string, null, or an array of parts
// ({"type": "text", "text": …}).
func contentText(raw json.RawMessage) (string, error) {
	raw, s, done := plainText(raw)
	if done {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	err := json.Unmarshal(raw, &parts)
	if err != nil {
		return "", &FieldError{Field: "content", Problem: ": want a string, null or an array of text parts", Err: err}
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// lenientToolCall reads one tool call, nested or flat.
func lenientToolCall(raw json.RawMessage) (ToolCall, error) {
	var c struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
		// The flat form.
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return ToolCall{}, decodeError("", err)
	}
	name, args, argsAt := c.Name, c.Arguments, "arguments"
	if c.Function != nil {
		name, args, argsAt = c.Function.Name, c.Function.Arguments, "function.arguments"
	}
	text, err := argumentsText(args)
	if err != nil {
		return ToolCall{}, decodeError(argsAt, err)
	}
	tc := ToolCall{ID: c.ID, Type: c.Type}
	if c.Function != nil || name != "" || text != "" {
		tc.Function = &Function{Name: name, Arguments: text}
	}
	return tc, nil
}

// argumentsText reads tool-call arguments given as a JSON string or as a
// JSON value (kept as compact JSON).
func argumentsText(raw json.RawMessage) (string, error) {
	raw, s, done := plainText(raw)
	if done {
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return text.ValidUTF8(buf.String()), nil
}

// plainText reads the two forms a lenient text field shares: absent or
// null (""), and a JSON string. done is false for anything else, returned
// trimmed for the caller's own forms.
func plainText(raw json.RawMessage) (trimmed json.RawMessage, text string, done bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return raw, "", true
	}
	if err := json.Unmarshal(raw, &text); err == nil {
		return raw, text, true
	}
	return raw, "", false
}
