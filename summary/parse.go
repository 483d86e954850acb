package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrUnparseable reports a summarizer reply that looks like JSON (it starts
// with "{" or "[", or mentions a "narrative" or "facts" key) but holds no
// JSON object that can be decoded. Such a reply is never used as a
// narrative.
var ErrUnparseable = errors.New("summary: summarizer reply looks like JSON but cannot be parsed")

// ErrNotJSON reports a summarizer reply that holds no JSON object at all
// (prose, a refusal, a question back). Such a reply is never used as a
// narrative: it would replace the summary so far with something that is
// not one. A fold that gets it fails and is retried later.
var ErrNotJSON = errors.New("summary: summarizer reply is not the expected JSON object")

// ParseReply turns a summarizer's reply into a Result. It is tolerant of the
// ways models wrap JSON:
//
//   - code fences are stripped whatever their tag and its case (```json,
//     ```JSON, ```), also when prose precedes the fence or text follows it,
//     and when the closing fence is missing;
//   - the first balanced JSON object is extracted from the text (braces
//     inside JSON strings are ignored); an object with a "narrative" or
//     "facts" field is preferred over an earlier one without;
//   - field names match case-insensitively, unknown fields are ignored at
//     every level and nulls mean "absent";
//   - numbers and booleans in a fact's key or value become their JSON text;
//     an object or array value becomes its compact JSON text;
//   - the category is matched case-insensitively, unknown ones become General;
//   - facts with an empty key are dropped; so are facts whose value is
//     null, missing, blank or a placeholder ("unknown", "not mentioned",
//     "N/A", "none", … see IsPlaceholder): they mean "no change", never
//     "remove"; a "facts" field that is not an array is ignored;
//   - removal is explicit only: a fact with "remove": true (a JSON boolean
//     or the string "true") becomes a Fact with Remove set, whatever its
//     value;
//   - a fact's "replaces" field (also spelled "previous", "previous_value"
//     or "old_value") names the value it updates and becomes
//     Fact.Replaces, so the update lands on the fact holding that value;
//   - a fact's "stated" field (also "stated_by_user"), a JSON boolean or
//     the string "true", sets Fact.Stated: the user gave the value;
//   - the narrative is trimmed; a narrative that is itself JSON is decoded
//     once more (double-encoded replies) or else dropped.
//
// A reply without any JSON object is an error: one that looks like JSON
// yields an error wrapping ErrUnparseable, any other (prose, a refusal)
// an error wrapping ErrNotJSON — unlike arc-reactor,
// prose never becomes the narrative, so a model that answers off-script
// cannot wipe the summary so far. A blank reply yields an error wrapping
// ErrEmptyReply.
//
// ParseReply sets no ExtractedAt times; MergeFacts does.
func ParseReply(reply string) (Result, error) {
	return parseReply(reply, 0)
}

// maxReplyNesting bounds how often a narrative that is itself JSON is
// decoded again.
const maxReplyNesting = 1

func parseReply(reply string, depth int) (Result, error) {
	text := trimReply(reply)
	if text == "" {
		return Result{}, fmt.Errorf("summary: parse reply: %w", ErrEmptyReply)
	}
	cleaned := stripFences(text)

	obj, ok := findObject(cleaned)
	if !ok && cleaned != text {
		obj, ok = findObject(text)
	}
	if !ok {
		if looksLikeJSON(cleaned) || looksLikeJSON(text) {
			return Result{}, fmt.Errorf("summary: parse reply: %w", ErrUnparseable)
		}
		if cleaned == "" {
			return Result{}, fmt.Errorf("summary: parse reply: %w", ErrEmptyReply)
		}
		return Result{}, fmt.Errorf("summary: parse reply: %w", ErrNotJSON)
	}

	var res Result
	if raw, ok := field(obj, "narrative"); ok {
		if s, ok := scalarString(raw); ok {
			res.Narrative = trimReply(s)
		}
	}
	if raw, ok := field(obj, "facts"); ok {
		res.Facts = decodeFacts(raw)
	}
	if looksLikeJSON(res.Narrative) {
		nested := Result{}
		var err error
		if depth < maxReplyNesting {
			nested, err = parseReply(res.Narrative, depth+1)
		}
		if err != nil || depth >= maxReplyNesting || looksLikeJSON(nested.Narrative) {
			nested = Result{}
		}
		res.Narrative = nested.Narrative
		if len(res.Facts) == 0 {
			res.Facts = nested.Facts
		}
	}
	return res, nil
}

// trimReply trims white space and byte-order marks.
func trimReply(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
}

// looksLikeJSON reports whether s starts like JSON or names one of the reply
// fields, so that it must not be used as prose.
func looksLikeJSON(s string) bool {
	s = trimReply(s)
	if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
		return true
	}
	lower := strings.ToLower(s)
	return strings.Contains(lower, `"narrative"`) || strings.Contains(lower, `"facts"`)
}

// stripFences returns the body of the first ``` fence in s, trimmed, or s
// when it has no fence. A fence without its closing ``` (a truncated reply)
// yields everything after the opening line.
func stripFences(s string) string {
	start := strings.Index(s, "```")
	if start < 0 {
		return s
	}
	rest := strings.TrimLeft(s[start:], "`")
	rest = skipFenceTag(rest)
	if end := strings.Index(rest, "```"); end >= 0 {
		rest = rest[:end]
	}
	return trimReply(rest)
}

// skipFenceTag drops an info string such as "json" or "JSON" after an
// opening fence. A word counts as a tag only when the line ends after it or
// JSON starts right after it, so "```The user asked…" keeps its first word.
func skipFenceTag(s string) string {
	i := 0
	for i < len(s) && (isASCIIAlnum(s[i]) || strings.IndexByte("_+.-", s[i]) >= 0) {
		i++
	}
	if i == 0 {
		return s
	}
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j == len(s) || strings.IndexByte("\r\n{[", s[j]) >= 0 {
		return s[i:]
	}
	return s
}

func isASCIIAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// findObject returns the first top-level balanced {...} span of s that
// decodes as a JSON object, preferring one with a "narrative" or "facts"
// field. Spans that are balanced but not JSON (prose such as "{name}") are
// skipped whole; an unbalanced span ends the search.
func findObject(s string) (map[string]json.RawMessage, bool) {
	var first map[string]json.RawMessage
	for pos := 0; pos < len(s); {
		i := strings.IndexByte(s[pos:], '{')
		if i < 0 {
			break
		}
		start := pos + i
		end := matchBrace(s, start)
		if end < 0 {
			break
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s[start:end]), &obj); err == nil && obj != nil {
			if hasField(obj, "narrative") || hasField(obj, "facts") {
				return obj, true
			}
			if first == nil {
				first = obj
			}
		}
		pos = end
	}
	return first, first != nil
}

// matchBrace returns the index just past the brace that closes the one at
// s[start], ignoring braces inside JSON strings, or -1 when it never closes.
func matchBrace(s string, start int) int {
	depth := 0
	inString, escaped := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// field looks a JSON object field up, exactly first and then
// case-insensitively. A null value counts as absent.
func field(obj map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	raw, ok := obj[name]
	if !ok {
		for k, v := range obj {
			if strings.EqualFold(k, name) {
				raw, ok = v, true
				break
			}
		}
	}
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func hasField(obj map[string]json.RawMessage, name string) bool {
	_, ok := field(obj, name)
	return ok
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// scalarString decodes a JSON string, number or boolean to its text.
func scalarString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case '{', '[', 'n':
		return "", false
	default: // number, true, false
		return string(raw), true
	}
}

// decodeFacts decodes a "facts" array; anything else yields no facts.
func decodeFacts(raw json.RawMessage) []Fact {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var facts []Fact
	for _, item := range items {
		var obj map[string]json.RawMessage
		if json.Unmarshal(item, &obj) != nil || obj == nil {
			continue
		}
		var f Fact
		if v, ok := field(obj, "key"); ok {
			f.Key, _ = scalarString(v)
		}
		f.Key = strings.TrimSpace(f.Key)
		if f.Key == "" {
			continue
		}
		if v, ok := field(obj, "value"); ok {
			s, isScalar := scalarString(v)
			if !isScalar {
				s = compactJSON(v)
			}
			f.Value = strings.TrimSpace(s)
		}
		f.Category = General
		if v, ok := field(obj, "category"); ok {
			s, _ := scalarString(v)
			f.Category = ParseCategory(s)
		}
		if v, ok := field(obj, "remove"); ok {
			s, _ := scalarString(v)
			f.Remove = strings.EqualFold(strings.TrimSpace(s), "true")
		}
		for _, name := range []string{"stated", "stated_by_user"} {
			if v, ok := field(obj, name); ok {
				s, _ := scalarString(v)
				f.Stated = f.Stated || strings.EqualFold(strings.TrimSpace(s), "true")
			}
		}
		for _, name := range []string{"replaces", "previous", "previous_value", "old_value"} {
			if v, ok := field(obj, name); ok {
				if s, ok := scalarString(v); ok && !IsPlaceholder(s) {
					f.Replaces = strings.TrimSpace(s)
					break
				}
			}
		}
		if !f.Remove && IsPlaceholder(f.Value) {
			continue // null, missing or a placeholder: no change
		}
		if f.Remove {
			f.Value = ""
		}
		facts = append(facts, f)
	}
	return facts
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
