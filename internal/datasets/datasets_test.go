package datasets

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLoCoMo(t *testing.T) {
	t.Parallel()
	const file = `[
	 {"sample_id": "c1", "conversation": {
	   "speaker_a": "Ann", "speaker_b": "Bob",
	   "session_2_date_time": "2 pm on 9 May, 2023",
	   "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "later"}],
	   "session_1_date_time": "1 pm on 8 May, 2023",
	   "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi", "blip_caption": "a cat"}],
	   "session_3_date_time": "a date without a session"},
	  "qa": [{"question": "when?", "answer": 2023, "evidence": ["D1:1; D2:1"], "category": 2}]},
	 {"sample_id": "c2", "conversation": {"speaker_a": 7, "session_1": "not turns"}, "qa": {"not": "a list"}}
	]`
	samples, err := ParseLoCoMo([]byte(file))
	if err != nil || len(samples) != 2 {
		t.Fatalf("ParseLoCoMo = %d samples, %v", len(samples), err)
	}
	s := samples[0]
	if s.ID != "c1" || s.Speaker("a") != "Ann" || s.Speaker("b") != "Bob" || s.Speaker("c") != "" {
		t.Fatalf("sample %q speakers %q %q", s.ID, s.Speaker("a"), s.Speaker("b"))
	}
	sessions, err := s.Sessions()
	want := []LoCoMoSession{
		{N: 1, DateTime: "1 pm on 8 May, 2023", Turns: []LoCoMoTurn{{Speaker: "Ann", DiaID: "D1:1", Text: "hi", BlipCaption: "a cat"}}},
		{N: 2, DateTime: "2 pm on 9 May, 2023", Turns: []LoCoMoTurn{{Speaker: "Bob", DiaID: "D2:1", Text: "later"}}},
	}
	if err != nil || !reflect.DeepEqual(sessions, want) {
		t.Fatalf("Sessions = %+v, %v", sessions, err)
	}
	qa, err := s.QA()
	if err != nil || len(qa) != 1 || qa[0].Question != "when?" || string(qa[0].Answer) != "2023" || qa[0].Evidence[0] != "D1:1; D2:1" || qa[0].Category != 2 {
		t.Fatalf("QA = %+v, %v", qa, err)
	}
	if got := TurnTexts(samples); !reflect.DeepEqual(got, []string{"hi", "later"}) {
		t.Fatalf("TurnTexts = %q, want the first sample's two turns (the second's do not decode)", got)
	}
	// The second sample's flaws show only when its parts are read.
	bad := samples[1]
	if bad.Speaker("a") != "" {
		t.Errorf("a speaker that is no string: %q", bad.Speaker("a"))
	}
	var fe *FieldError
	if _, err := bad.Sessions(); !errors.As(err, &fe) || fe.Field != "session_1" {
		t.Errorf("Sessions of a broken session = %v", err)
	}
	var te *json.UnmarshalTypeError
	if _, err := bad.QA(); !errors.As(err, &fe) || fe.Field != "qa" || !errors.As(err, &te) {
		t.Errorf("QA of a broken list = %v", err)
	}
	if _, err := ParseLoCoMo([]byte(`{"sample_id": "x"}`)); err == nil {
		t.Error("an object read as a list of samples")
	}
}

func TestTauBench(t *testing.T) {
	t.Parallel()
	const file = `[
	 {"task_id": 3, "trial": 1, "reward": 1, "traj": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
	  "info": {"task": {"actions": [{"name": "book", "kwargs": {"flight_number": "HAT1"}}]}}},
	 {"task_id": 4, "trial": 0, "traj": [], "info": {"task": "not an object"}},
	 {"task_id": 5, "trial": 2, "traj": []}
	]`
	trajs, err := ParseTauBench([]byte(file))
	if err != nil || len(trajs) != 3 {
		t.Fatalf("ParseTauBench = %d, %v", len(trajs), err)
	}
	tr := trajs[0]
	if tr.ID() != "task-3-trial-1" || tr.Reward != 1 || len(tr.Traj) != 2 || string(tr.Traj[1]) != `{"role": "user", "content": "u"}` {
		t.Fatalf("trajectory %s: %+v", tr.ID(), tr)
	}
	acts, err := tr.Actions()
	if err != nil || !reflect.DeepEqual(acts, []TauAction{{Name: "book", Kwargs: map[string]any{"flight_number": "HAT1"}}}) {
		t.Fatalf("Actions = %+v, %v", acts, err)
	}
	var fe *FieldError
	if _, err := trajs[1].Actions(); !errors.As(err, &fe) || fe.Field != "info" {
		t.Errorf("Actions of broken info = %v", err)
	}
	if acts, err := trajs[2].Actions(); err != nil || acts != nil {
		t.Errorf("Actions without info = %v, %v", acts, err)
	}
}

// ReplayTexts reads the turn texts of a LoCoMo file's first samples,
// generates its fallback when the directory has no file, and refuses a
// file that does not parse.
func TestReplayTexts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fallback, err := ReplayTexts(dir, 3, 5)
	if err != nil || len(fallback) != 5 || fallback[0] == fallback[1] {
		t.Fatalf("no file: %q, %v", fallback, err)
	}
	path := filepath.Join(dir, LoCoMoFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	file := `[{"sample_id": "a", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "one"}, {"speaker": "B", "dia_id": "D1:2", "text": "two"}]}},
	          {"sample_id": "b", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "three"}]}}]`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int][]string{0: nil, 1: {"one", "two"}, 2: {"one", "two", "three"}, 9: {"one", "two", "three"}} {
		if got, err := ReplayTexts(dir, n, 5); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d samples: %q, %v; want %q", n, got, err, want)
		}
	}
	if err := os.WriteFile(path, []byte(`{"not": "a list"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReplayTexts(dir, 3, 5); err == nil {
		t.Fatal("a file that does not parse read without an error")
	}
}
