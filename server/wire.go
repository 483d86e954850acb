package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// reservedMetadataPrefix marks metadata keys the server keeps for itself:
// clients cannot set keys starting with it, and the API never shows them in
// a message's metadata (earlier versions stored a session's title under
// "strata.title" on its first message).
const reservedMetadataPrefix = "strata."

// Limits of request contents.
const (
	maxMessagesPerRequest = 1000
	maxTitleRunes         = 80 // the catalogue's longest title
	maxSessionIDLength    = 128
	maxSearchQueryRunes   = 1000
)

// wireMessage is a message as clients send it and as the context endpoint
// returns it: OpenAI-like.
type wireMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	ToolCalls  []wireToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Name       string            `json:"name,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// wireToolCall is an assistant's tool call.
type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// wireFunction is the function a tool call names.
type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// storedMessage is a message of GET /v1/sessions/{id}: a wireMessage with
// the store's sequence number and time.
type storedMessage struct {
	Seq int64 `json:"seq"`
	wireMessage
	CreatedAt time.Time `json:"created_at"`
}

// wireFact is one fact of a summary.
type wireFact struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Category string `json:"category"`
}

func wireFacts(fs []summary.Fact) []wireFact {
	out := make([]wireFact, 0, len(fs))
	for _, f := range fs {
		out = append(out, wireFact{Key: f.Key, Value: f.Value, Category: string(f.Category)})
	}
	return out
}

// toMemory validates a client message and converts it; i is its index in
// the request, for error messages.
func (m wireMessage) toMemory(i int) (memory.Message, error) {
	at := fmt.Sprintf("messages[%d]", i)
	out := memory.Message{Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	switch m.Role {
	case "user", "assistant", "system", "tool":
		out.Role = memory.Role(m.Role)
	case "":
		return out, fmt.Errorf("%s.role is missing (want user, assistant, system or tool)", at)
	default:
		return out, fmt.Errorf("%s.role = %q: want user, assistant, system or tool", at, m.Role)
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return out, fmt.Errorf("%s.tool_calls: only assistant messages make tool calls", at)
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return out, fmt.Errorf("%s.tool_call_id is missing: a tool message answers one tool call", at)
	}
	if m.Role != "tool" && m.ToolCallID != "" {
		return out, fmt.Errorf("%s.tool_call_id: only tool messages answer tool calls", at)
	}
	seen := map[string]bool{}
	for j, tc := range m.ToolCalls {
		tat := fmt.Sprintf("%s.tool_calls[%d]", at, j)
		switch {
		case tc.ID == "":
			return out, fmt.Errorf("%s.id is missing", tat)
		case seen[tc.ID]:
			return out, fmt.Errorf("%s.id %q is repeated", tat, tc.ID)
		case tc.Type != "" && tc.Type != "function":
			return out, fmt.Errorf("%s.type = %q: want \"function\"", tat, tc.Type)
		case tc.Function.Name == "":
			return out, fmt.Errorf("%s.function.name is missing", tat)
		}
		seen[tc.ID] = true
		out.ToolCalls = append(out.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	if len(m.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			if strings.HasPrefix(k, reservedMetadataPrefix) {
				return out, fmt.Errorf("%s.metadata: key %q is reserved (keys starting with %q)", at, k, reservedMetadataPrefix)
			}
			if k == "" {
				return out, fmt.Errorf("%s.metadata: empty key", at)
			}
			out.Metadata[k] = v
		}
	}
	return out, nil
}

// fromMemory converts a stored message for the wire, without the server's
// own metadata.
func fromMemory(m memory.Message) wireMessage {
	out := wireMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	for _, tc := range m.ToolCalls {
		w := wireToolCall{ID: tc.ID, Type: tc.Type}
		if w.Type == "" {
			w.Type = "function"
		}
		if tc.FunctionCall != nil {
			w.Function = wireFunction{Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments}
		}
		out.ToolCalls = append(out.ToolCalls, w)
	}
	for k, v := range m.Metadata {
		if strings.HasPrefix(k, reservedMetadataPrefix) {
			continue
		}
		if out.Metadata == nil {
			out.Metadata = map[string]string{}
		}
		out.Metadata[k] = v
	}
	return out
}

// fromChat converts a chat message of an assembled context for the wire.
func fromChat(cm llms.ChatMessage) wireMessage {
	m, err := memory.FromChatMessage(cm)
	if err != nil { // not produced by the manager (nil message): keep its text
		role := "user"
		switch cm.GetType() {
		case llms.ChatMessageTypeAI:
			role = "assistant"
		case llms.ChatMessageTypeSystem:
			role = "system"
		case llms.ChatMessageTypeTool:
			role = "tool"
		}
		return wireMessage{Role: role, Content: cm.GetContent()}
	}
	out := fromMemory(m)
	out.Metadata = nil
	return out
}

// cleanTitle validates a session title and collapses its white space, as
// the catalogue keeps it.
func cleanTitle(t string) (string, error) {
	t = strings.Join(strings.Fields(t), " ")
	switch {
	case !utf8.ValidString(t):
		return "", errors.New("title is not valid UTF-8")
	case utf8.RuneCountInString(t) > maxTitleRunes:
		return "", fmt.Errorf("title is longer than %d characters", maxTitleRunes)
	case strings.IndexFunc(t, unicode.IsControl) >= 0:
		return "", errors.New("title contains control characters")
	}
	return t, nil
}

// validSessionID reports whether id can name a session: 1 to 128
// characters among letters, digits and . _ : @ -, starting with a letter or
// digit (UUIDs, ULIDs, "chat-42", "tenant:1234").
func validSessionID(id string) bool {
	if id == "" || len(id) > maxSessionIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == ':' || c == '@' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// apiError is an error response.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "bad_request", msg: fmt.Sprintf(format, args...)}
}

// errNotFound is the one answer for a session that does not exist and for
// one that belongs to another user.
var errNotFound = &apiError{status: http.StatusNotFound, code: "not_found", msg: "session not found"}

// errorBody is every error response's body.
type errorBody struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
}

// decodeJSON reads the request body into dst strictly: a JSON object of
// known fields, nothing after it, within the size limit. allowEmpty accepts
// an empty body (dst keeps its zero value).
func decodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, dst any, allowEmpty bool) *apiError {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
				msg: fmt.Sprintf("Content-Type %q: want application/json", ct)}
		}
	}
	if r.ContentLength > maxBytes { // refused before reading a byte
		return jsonError(&http.MaxBytesError{Limit: maxBytes}, maxBytes)
	}
	body := http.MaxBytesReader(w, r.Body, maxBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) && allowEmpty {
			return nil
		}
		return jsonError(err, maxBytes)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return jsonError(err, maxBytes)
		}
	}
	return badRequest("malformed JSON: unexpected data after the JSON object")
}

// jsonError turns a decoding error into a response naming the problem.
func jsonError(err error, maxBytes int64) *apiError {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large",
			msg: fmt.Sprintf("request body larger than %d bytes", maxBytes)}
	case errors.Is(err, io.EOF):
		return badRequest("empty body: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: unexpected end of body")
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &ute):
		if ute.Field == "" {
			return badRequest("malformed request: want a JSON object, got JSON %s", ute.Value)
		}
		return badRequest("field %q: want %s, got JSON %s", ute.Field, jsonKind(ute.Type.Kind().String()), ute.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return badRequest("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}
