package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Limits of request contents.
const (
	maxMessagesPerRequest = 1000
	maxTitleRunes         = 80 // the catalogue's longest title
	maxSessionIDLength    = 128
	maxSearchQueryRunes   = 1000
)

// wireMessage is a message as clients send it and as the context endpoint
// returns it: the JSON shape of package msgjson, read and written by its
// Wire rules.
type wireMessage msgjson.Message

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
// the request, which errors name ("messages[2].role is missing …").
func (m wireMessage) toMemory(i int) (store.Message, error) {
	out, err := msgjson.ToMemory(msgjson.Message(m), msgjson.Wire)
	if err != nil {
		return store.Message{}, fmt.Errorf("messages[%d].%w", i, err)
	}
	return out, nil
}

// fromMemory converts a stored message for the wire, without the server's
// own metadata.
func fromMemory(m store.Message) wireMessage {
	return wireMessage(msgjson.FromMemory(m, msgjson.Wire))
}

// fromChat converts a chat message of an assembled context for the wire.
func fromChat(cm llms.ChatMessage) wireMessage {
	return wireMessage(msgjson.FromChat(cm))
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
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return jsonError(err, maxBytes)
	}
	// encoding/json would store invalid UTF-8, and escaped lone
	// surrogates, as U+FFFD: refuse them instead of changing the text.
	if !utf8.Valid(raw) {
		return badRequest("the body is not valid UTF-8")
	}
	if i := loneSurrogate(raw); i >= 0 {
		return badRequest("malformed JSON at byte %d: a \\u escape of a lone UTF-16 surrogate is not a character", i)
	}
	if err := msgjson.UnmarshalStrict(bytes.NewReader(raw), dst); err != nil {
		if errors.Is(err, io.EOF) && allowEmpty {
			return nil
		}
		return jsonError(err, maxBytes)
	}
	return nil
}

// loneSurrogate returns the offset of the first \u escape in raw that is
// half of a UTF-16 surrogate pair without its other half, or -1. JSON
// allows backslashes only in strings, where each starts an escape.
func loneSurrogate(raw []byte) int {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // a one-character escape, such as \\ or \"
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := hex4(i + 6); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		default:
			i += 5
		}
	}
	return -1
}

// jsonError turns an error of msgjson.UnmarshalStrict into a response
// naming the problem.
func jsonError(err error, maxBytes int64) *apiError {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
		ufe *msgjson.UnknownFieldError
	)
	switch {
	case errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large",
			msg: fmt.Sprintf("request body larger than %d bytes", maxBytes)}
	case errors.Is(err, msgjson.ErrTrailingData):
		return badRequest("malformed JSON: unexpected data after the JSON object")
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
		return badRequest("field %q: want %s, got JSON %s", ute.Field, msgjson.Kind(ute.Type), ute.Value)
	case errors.As(err, &ufe):
		return badRequest("%s", ufe.Error())
	}
	return badRequest("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}
