// Package datasets is Strata's one reader of the third-party conversation
// sets it replays — LoCoMo (locomo10.json) and τ-bench airline
// (gpt-4o-airline.json) — shared by the CLI's replay (cmd/strata) and the
// benchmarks (bench). It knows the files' layout and nothing of what a
// caller makes of them: the CLI and the benchmarks map speakers, merge
// turns and pick samples in their own ways. The parts a caller may never
// read (a sample's sessions, its questions, a trajectory's gold actions)
// are decoded on demand, so that a flaw in one sample does not refuse the
// others. Messages of a trajectory stay raw JSON, for the one message codec
// (internal/msgjson, TauBench options) to read.
package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// LoCoMoFile and TauBenchFile are the files' paths below the shared data
// directory.
const (
	LoCoMoFile   = "locomo/locomo10.json"
	TauBenchFile = "taubench_airline/gpt-4o-airline.json"
)

// FieldError is a part of a sample that does not decode: Field names it
// ("session_3", "qa", "info"), Err is encoding/json's error.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the decoding error.
func (e *FieldError) Unwrap() error { return e.Err }

// LoCoMoSample is one sample of locomo10.json: a conversation between
// speaker_a and speaker_b over numbered sessions, and questions about it.
type LoCoMoSample struct {
	ID           string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	RawQA        json.RawMessage            `json:"qa"`
}

// LoCoMoSession is one session of a sample: its date and its turns.
type LoCoMoSession struct {
	// N is the session's number (session_<N>).
	N int
	// DateTime is session_<N>_date_time ("1:56 pm on 8 May, 2023"), "" when
	// absent or not a string.
	DateTime string
	Turns    []LoCoMoTurn
}

// LoCoMoTurn is one turn of a session.
type LoCoMoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

// LoCoMoQA is one question about a sample, with its answer (a JSON string
// or number; absent for the adversarial category 5) and the dialogue ids
// ("D1:3", sometimes several in one entry) that are its evidence.
type LoCoMoQA struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
}

// ParseLoCoMo reads locomo10.json: an array of samples. Its error is
// encoding/json's, as it is.
func ParseLoCoMo(data []byte) ([]LoCoMoSample, error) {
	var out []LoCoMoSample
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Speaker returns the conversation's speaker_a ("a") or speaker_b ("b"),
// "" when absent or not a string.
func (s LoCoMoSample) Speaker(which string) string {
	var name string
	if raw, ok := s.Conversation["speaker_"+which]; ok {
		_ = json.Unmarshal(raw, &name)
	}
	return name
}

// Sessions returns the sample's sessions in numeric order: session_1,
// session_2, … while they exist (some samples have dates beyond their last
// session). A session that does not decode is a *FieldError.
func (s LoCoMoSample) Sessions() ([]LoCoMoSession, error) {
	var out []LoCoMoSession
	for n := 1; ; n++ {
		field := "session_" + strconv.Itoa(n)
		raw, ok := s.Conversation[field]
		if !ok {
			return out, nil
		}
		sess := LoCoMoSession{N: n}
		if err := json.Unmarshal(raw, &sess.Turns); err != nil {
			return nil, &FieldError{Field: field, Err: err}
		}
		if raw, ok := s.Conversation[field+"_date_time"]; ok {
			_ = json.Unmarshal(raw, &sess.DateTime)
		}
		out = append(out, sess)
	}
}

// TurnTexts returns the text of every turn of samples, sample by sample
// and session by session, in order; a sample whose sessions do not decode
// adds none.
func TurnTexts(samples []LoCoMoSample) []string {
	var out []string
	for _, s := range samples {
		sessions, _ := s.Sessions()
		for _, se := range sessions {
			for _, t := range se.Turns {
				out = append(out, t.Text)
			}
		}
	}
	return out
}

// ReplayTexts are texts to replay as a conversation: the turn texts
// (TurnTexts) of the first samples samples of the LoCoMo file in dataDir,
// or, when dataDir has no such file, fallback generated sentences that
// each state a fact. A file that is there but does not parse is an error.
func ReplayTexts(dataDir string, samples, fallback int) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dataDir, LoCoMoFile))
	if errors.Is(err, fs.ErrNotExist) {
		texts := make([]string, fallback)
		for i := range texts {
			texts[i] = fmt.Sprintf("Message %d: my sister Anna moved to Lisbon on %d March and works as a nurse at the hospital there.", i, i%28+1)
		}
		return texts, nil
	}
	if err != nil {
		return nil, err
	}
	all, err := ParseLoCoMo(raw)
	if err != nil {
		return nil, err
	}
	return TurnTexts(all[:min(max(samples, 0), len(all))]), nil
}

// QA returns the sample's questions (none when it has no "qa"). A list
// that does not decode is a *FieldError.
func (s LoCoMoSample) QA() ([]LoCoMoQA, error) {
	if len(s.RawQA) == 0 {
		return nil, nil
	}
	var out []LoCoMoQA
	if err := json.Unmarshal(s.RawQA, &out); err != nil {
		return nil, &FieldError{Field: "qa", Err: err}
	}
	return out, nil
}

// TauTrajectory is one trajectory of gpt-4o-airline.json: a task, a trial
// of it, the reward, and the conversation (OpenAI-style messages, the
// system prompt first).
type TauTrajectory struct {
	TaskID int               `json:"task_id"`
	Trial  int               `json:"trial"`
	Reward float64           `json:"reward"`
	Traj   []json.RawMessage `json:"traj"`
	Info   json.RawMessage   `json:"info"`
}

// TauAction is one gold action of a τ-bench task: the tool call a
// successful trajectory makes.
type TauAction struct {
	Name   string         `json:"name"`
	Kwargs map[string]any `json:"kwargs"`
}

// ID names the trajectory: "task-<task>-trial-<trial>".
func (t TauTrajectory) ID() string { return fmt.Sprintf("task-%d-trial-%d", t.TaskID, t.Trial) }

// ParseTauBench reads gpt-4o-airline.json: an array of trajectories. Its
// error is encoding/json's, as it is.
func ParseTauBench(data []byte) ([]TauTrajectory, error) {
	var out []TauTrajectory
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Actions returns the task's gold actions (info.task.actions; none when
// absent). Info that does not decode is a *FieldError.
func (t TauTrajectory) Actions() ([]TauAction, error) {
	if len(t.Info) == 0 {
		return nil, nil
	}
	var info struct {
		Task struct {
			Actions []TauAction `json:"actions"`
		} `json:"task"`
	}
	if err := json.Unmarshal(t.Info, &info); err != nil {
		return nil, &FieldError{Field: "info", Err: err}
	}
	return info.Task.Actions, nil
}
