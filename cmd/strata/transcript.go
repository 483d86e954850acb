package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-go/strata/internal/datasets"
	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory/store"
)

// Transcript formats.
const (
	formatAuto     = "auto"
	formatJSONL    = "jsonl"
	formatJSON     = "json" // a JSON array of {"role","content"} messages
	formatLoCoMo   = "locomo"
	formatTauBench = "taubench"
)

var formatNames = []string{formatAuto, formatJSONL, formatJSON, formatLoCoMo, formatTauBench}

// normalizeFormat maps a --format value (with a few aliases) to a format.
func normalizeFormat(f string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(f)) {
	case "", "auto":
		return formatAuto, true
	case "jsonl", "ndjson":
		return formatJSONL, true
	case "json", "messages":
		return formatJSON, true
	case "locomo":
		return formatLoCoMo, true
	case "taubench", "tau-bench", "tau", "τ-bench":
		return formatTauBench, true
	}
	return "", false
}

// transcript is one conversation to replay.
type transcript struct {
	// Name identifies the conversation (sample id, file name); the replay
	// session id is derived from it.
	Name string
	// System is the system prompt: the leading system messages, joined.
	System string
	// Msgs are the conversation's messages after the system prompt.
	Msgs []store.Message
}

// userTurns counts the user messages.
func (t transcript) userTurns() int {
	n := 0
	for _, m := range t.Msgs {
		if m.Role == store.RoleUser {
			n++
		}
	}
	return n
}

// inputError is a problem with the input file; its message starts with the
// file name (and line).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// stdinPath is the FILE argument that means standard input; stdinName
// names it in messages and in the replay session id.
const (
	stdinPath = "-"
	stdinName = "stdin"
)

// loadTranscripts reads path ("-": stdin) in format (auto-detected when
// formatAuto) and returns the selected samples.
func loadTranscripts(path, format, sample string, maxBytes int, stdin io.Reader) ([]transcript, string, error) {
	var data []byte
	var err error
	if path == stdinPath {
		path = stdinName
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		if data, err = io.ReadAll(stdin); err != nil {
			return nil, "", inputErrorf("%s: %v", path, err)
		}
	} else {
		data, err = os.ReadFile(path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", inputErrorf("%s: no such file", path)
	case err != nil:
		return nil, "", inputErrorf("%s: %v", path, unwrapPathError(err))
	}
	if format == formatAuto {
		format, err = detectFormat(path, data)
		if err != nil {
			return nil, "", err
		}
	}
	var ts []transcript
	switch format {
	case formatJSONL:
		var t transcript
		t, err = parseJSONL(path, data, maxBytes)
		ts = []transcript{t}
	case formatJSON:
		var t transcript
		t, err = parseJSONMessages(path, data, maxBytes)
		ts = []transcript{t}
	case formatLoCoMo:
		ts, err = parseLoCoMo(path, data, sample)
	case formatTauBench:
		ts, err = parseTauBench(path, data, sample, maxBytes)
	default:
		err = inputErrorf("%s: unknown format %q", path, format)
	}
	if err != nil {
		return nil, format, err
	}
	if (format == formatJSONL || format == formatJSON) && sample != "" {
		return nil, format, usagef("replay: --sample applies to LoCoMo and τ-bench files, not %s", format)
	}
	for _, t := range ts {
		if t.userTurns() == 0 {
			return nil, format, inputErrorf("%s: %s has no user message to replay", path, t.Name)
		}
	}
	return ts, format, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// detectFormat guesses the format from the extension and the first bytes.
func detectFormat(path string, data []byte) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return formatJSONL, nil
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) == 0 {
		return "", inputErrorf("%s: empty file", path)
	}
	switch trimmed[0] {
	case '{':
		// One object holding "messages" (an OpenAI chat request or
		// export), else one message per line.
		var doc map[string]json.RawMessage
		if json.Unmarshal(trimmed, &doc) == nil {
			if _, ok := doc["messages"]; ok {
				return formatJSON, nil
			}
		}
		return formatJSONL, nil
	case '[':
		var first []map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		// Decode only the first element's keys.
		if tok, err := dec.Token(); err == nil && tok == json.Delim('[') && dec.More() {
			var el map[string]json.RawMessage
			if err := dec.Decode(&el); err == nil {
				first = append(first, el)
			}
		}
		if len(first) == 1 {
			el := first[0]
			_, conv := el["conversation"]
			_, traj := el["traj"]
			_, role := el["role"]
			switch {
			case conv:
				return formatLoCoMo, nil
			case traj:
				return formatTauBench, nil
			case role:
				return formatJSON, nil
			}
		}
	}
	return "", inputErrorf("%s: cannot detect the format; pass --format (%s)", path, strings.Join(formatNames[1:], ", "))
}

// transcriptOptions are the rules of a message of a JSONL or JSON
// transcript: msgjson's lenient Transcript format, which refuses a field
// it does not know (say "text" for "content") rather than replay an empty
// message.
var transcriptOptions = msgjson.Transcript

// tauBenchOptions are the rules of a message of a τ-bench trajectory
// (msgjson.TauBench).
var tauBenchOptions = msgjson.TauBench

// toMessage decodes one message object of a transcript and checks that it
// can be stored (within maxBytes); the error has no location prefix.
func toMessage(raw []byte, opts msgjson.Options, maxBytes int) (store.Message, error) {
	w, err := msgjson.Decode(raw, opts)
	if err != nil {
		return store.Message{}, err
	}
	m, err := msgjson.ToMemory(w, opts)
	if err != nil {
		return store.Message{}, err
	}
	if err := m.Validate(maxBytes); err != nil {
		return store.Message{}, &reworded{msg: strings.TrimPrefix(err.Error(), "memory: "), err: err}
	}
	return m, nil
}

// parseJSONL reads one {"role","content"} object per line.
func parseJSONL(path string, data []byte, maxBytes int) (transcript, error) {
	var msgs []store.Message
	var where []string // each message's location, for checkToolResults
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		if len(text) == 0 {
			continue
		}
		if !json.Valid(text) {
			var v any
			return transcript{}, inputErrorf("%s:%d: malformed JSON: %s", path, line, jsonErrorText(json.Unmarshal(text, &v)))
		}
		if text[0] != '{' {
			return transcript{}, inputErrorf("%s:%d: want one {\"role\", \"content\"} object per line", path, line)
		}
		if _, ok := jsonKeys(text)["messages"]; ok {
			return transcript{}, inputErrorf(`%s:%d: a {"messages": [...]} object: replay reads one conversation per file (save it alone as .json, or pass --format json)`, path, line)
		}
		m, err := toMessage(text, transcriptOptions, maxBytes)
		if err != nil {
			return transcript{}, inputErrorf("%s:%d: %v", path, line, err)
		}
		msgs = append(msgs, m)
		where = append(where, fmt.Sprintf("%s:%d", path, line))
	}
	if err := sc.Err(); err != nil {
		return transcript{}, inputErrorf("%s: %v", path, err)
	}
	if len(msgs) == 0 {
		return transcript{}, inputErrorf("%s: no messages", path)
	}
	if err := checkToolResults(msgs, where); err != nil {
		return transcript{}, err
	}
	return newTranscript(baseName(path), msgs), nil
}

// parseJSONMessages reads a JSON array of messages, or an object holding
// one in "messages" (an OpenAI-style chat request or export; its other
// fields are ignored).
func parseJSONMessages(path string, data []byte, maxBytes int) (transcript, error) {
	elems, err := messageArray(data)
	if err != nil {
		return transcript{}, inputErrorf("%s: %v", path, err)
	}
	msgs := make([]store.Message, 0, len(elems))
	where := make([]string, 0, len(elems))
	for i, el := range elems {
		loc := fmt.Sprintf("%s:%d: message %d", path, el.line, i+1)
		m, err := toMessage(el.raw, transcriptOptions, maxBytes)
		if err != nil {
			return transcript{}, inputErrorf("%s: %v", loc, err)
		}
		msgs = append(msgs, m)
		where = append(where, loc)
	}
	if len(msgs) == 0 {
		return transcript{}, inputErrorf("%s: no messages", path)
	}
	if err := checkToolResults(msgs, where); err != nil {
		return transcript{}, err
	}
	return newTranscript(baseName(path), msgs), nil
}

// located is one element of a JSON array and the line it starts on.
type located struct {
	raw  json.RawMessage
	line int
}

// messageArray returns the elements of data, a JSON array of messages or an
// object with a "messages" array, with their lines.
func messageArray(data []byte) ([]located, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	fail := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("malformed JSON: line %d: %s", lineAt(se.Offset), se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("malformed JSON: unexpected end of input")
		}
		return fmt.Errorf("malformed JSON: %s", jsonErrorText(err))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fail(err)
	}
	if tok == json.Delim('{') {
		found := false
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, fail(err)
			}
			if key != "messages" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, fail(err)
				}
				continue
			}
			if tok, err = dec.Token(); err != nil {
				return nil, fail(err)
			}
			if tok != json.Delim('[') {
				return nil, errors.New(`"messages" must be an array of messages`)
			}
			found = true
			break
		}
		if !found {
			return nil, errors.New(`want a JSON array of messages or an object with "messages"`)
		}
	} else if tok != json.Delim('[') {
		return nil, errors.New(`want a JSON array of messages or an object with "messages"`)
	}
	var out []located
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail(err)
		}
		line := lineAt(dec.InputOffset() - int64(len(raw)))
		if len(raw) == 0 || raw[0] != '{' {
			return nil, fmt.Errorf("line %d: message %d is not a JSON object", line, len(out)+1)
		}
		out = append(out, located{raw: raw, line: line})
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return nil, fail(err)
	}
	return out, nil
}

// jsonKeys returns the fields of a JSON object (nil when raw is not one).
func jsonKeys(raw []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m
}

// checkToolResults rejects a tool result that does not answer a call of
// the assistant message heading its run of tool messages — providers
// reject such an orphan — naming its location (where[i] locates msgs[i]).
// A call left without a result (a dangling tool call) is accepted: replay
// shows it being left out of the prompt.
func checkToolResults(msgs []store.Message, where []string) error {
	var open []string // unanswered call ids of the current tool run
	for i, m := range msgs {
		switch {
		case m.Role == store.RoleAssistant && len(m.ToolCalls) > 0:
			open = open[:0]
			for _, tc := range m.ToolCalls {
				open = append(open, tc.ID)
			}
		case m.Role == store.RoleTool:
			k := slices.Index(open, m.ToolCallID)
			if k < 0 {
				return inputErrorf("%s: orphan tool result: no assistant tool call %q right before it is waiting for a result (a tool message must follow the assistant message that made the call)", where[i], m.ToolCallID)
			}
			open = slices.Delete(open, k, k+1)
		default:
			open = open[:0]
		}
	}
	return nil
}

// newTranscript moves the leading system messages into the system prompt.
func newTranscript(name string, msgs []store.Message) transcript {
	var sys []string
	i := 0
	for ; i < len(msgs) && msgs[i].Role == store.RoleSystem; i++ {
		sys = append(sys, msgs[i].Content)
	}
	return transcript{Name: name, System: strings.Join(sys, "\n\n"), Msgs: msgs[i:]}
}

func baseName(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("want %s, got %s", te.Type, te.Value)
	}
	return err.Error()
}

// jsonErrorAt adds the line of a syntax error in a whole-file document.
func jsonErrorAt(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("line %d: %s", line, se.Error())
	}
	return jsonErrorText(err)
}

// LoCoMo (locomo10.json) and τ-bench (gpt-4o-airline.json) are read by
// internal/datasets; here they become transcripts.

// parseLoCoMo maps speaker_a to the user and speaker_b to the assistant,
// reads the sessions in numeric order and prefixes each session's first
// turn with its date ("[1:56 pm on 8 May, 2023] …"). Image captions are
// appended as "[shares a photo: …]".
func parseLoCoMo(path string, data []byte, sample string) ([]transcript, error) {
	samples, err := datasets.ParseLoCoMo(data)
	if err != nil {
		return nil, inputErrorf("%s: malformed LoCoMo JSON: %s", path, jsonErrorAt(data, err))
	}
	if len(samples) == 0 {
		return nil, inputErrorf("%s: no LoCoMo samples", path)
	}
	ids := make([]string, len(samples))
	for i, s := range samples {
		ids[i] = s.ID
	}
	idx, err := selectSample(path, sample, len(samples), func(i int) bool { return samples[i].ID == sample }, "sample ids: "+strings.Join(ids, ", "))
	if err != nil {
		return nil, err
	}
	var out []transcript
	for _, i := range idx {
		t, err := locomoTranscript(samples[i])
		if err != nil {
			return nil, inputErrorf("%s: %s: %v", path, samples[i].ID, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func locomoTranscript(s datasets.LoCoMoSample) (transcript, error) {
	speakerA := s.Speaker("a")
	if speakerA == "" {
		return transcript{}, errors.New(`conversation has no "speaker_a"`)
	}
	sessions, err := s.Sessions()
	if fe := (*datasets.FieldError)(nil); errors.As(err, &fe) {
		return transcript{}, fmt.Errorf("%s: %s", fe.Field, jsonErrorText(fe.Err))
	} else if err != nil {
		return transcript{}, err
	}
	var msgs []store.Message
	for _, sess := range sessions {
		date := sess.DateTime
		for j, t := range sess.Turns {
			text := strings.TrimSpace(t.Text)
			if c := strings.TrimSpace(t.BlipCaption); c != "" {
				text = strings.TrimSpace(text + " [shares a photo: " + c + "]")
			}
			if j == 0 && date != "" {
				text = "[" + date + "] " + text
			}
			role := store.RoleAssistant
			if t.Speaker == speakerA {
				role = store.RoleUser
			}
			msgs = append(msgs, store.Message{Role: role, Content: text})
		}
	}
	if len(msgs) == 0 {
		return transcript{}, errors.New("no sessions")
	}
	return transcript{Name: s.ID, Msgs: msgs}, nil
}

var taskSampleRE = regexp.MustCompile(`^task[:=_-]?(\d+)(?:[/,:_-]trial[:=_-]?(\d+))?$`)

func parseTauBench(path string, data []byte, sample string, maxBytes int) ([]transcript, error) {
	trajs, err := datasets.ParseTauBench(data)
	if err != nil {
		return nil, inputErrorf("%s: malformed τ-bench JSON: %s", path, jsonErrorAt(data, err))
	}
	if len(trajs) == 0 {
		return nil, inputErrorf("%s: no τ-bench trajectories", path)
	}
	match := func(i int) bool { return false }
	if m := taskSampleRE.FindStringSubmatch(strings.ToLower(sample)); m != nil {
		task, _ := strconv.Atoi(m[1])
		trial := -1
		if m[2] != "" {
			trial, _ = strconv.Atoi(m[2])
		}
		match = func(i int) bool {
			return trajs[i].TaskID == task && (trial < 0 || trajs[i].Trial == trial)
		}
	}
	idx, err := selectSample(path, sample, len(trajs), match, "use an index, task:N or task:N/trial:T")
	if err != nil {
		return nil, err
	}
	var out []transcript
	for _, i := range idx {
		tr := trajs[i]
		msgs := make([]store.Message, 0, len(tr.Traj))
		where := make([]string, 0, len(tr.Traj))
		for j, raw := range tr.Traj {
			m, err := toMessage(raw, tauBenchOptions, maxBytes)
			if err != nil {
				return nil, inputErrorf("%s: trajectory %d message %d: %v", path, i, j+1, err)
			}
			msgs = append(msgs, m)
			where = append(where, fmt.Sprintf("%s: trajectory %d message %d", path, i, j+1))
		}
		if err := checkToolResults(msgs, where); err != nil {
			return nil, err
		}
		out = append(out, newTranscript(tr.ID(), msgs))
	}
	return out, nil
}

// selectSample picks samples: "" the first, "all" every one, a number the
// index, otherwise the first for which match is true.
func selectSample(path, sample string, n int, match func(int) bool, hint string) ([]int, error) {
	switch s := strings.TrimSpace(sample); {
	case s == "":
		return []int{0}, nil
	case strings.EqualFold(s, "all"):
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	default:
		if i, err := strconv.Atoi(s); err == nil {
			if i < 0 || i >= n {
				return nil, inputErrorf("%s: --sample %d out of range (0–%d)", path, i, n-1)
			}
			return []int{i}, nil
		}
		for i := 0; i < n; i++ {
			if match(i) {
				return []int{i}, nil
			}
		}
		return nil, inputErrorf("%s: no sample %q (%s)", path, s, hint)
	}
}
