package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/tmc/langchaingo/llms"
)

// TauBenchFile is the τ-bench airline file's path below the data directory.
const TauBenchFile = "taubench_airline/gpt-4o-airline.json"

// GoldValue is one argument value of a gold write action.
type GoldValue struct {
	// Kind groups values for reporting: "reservation code", "flight
	// number", "date", "amount", "user id", "payment id", "airport code",
	// "name".
	Kind  string
	Value string
}

// Trajectory is one τ-bench transcript.
type Trajectory struct {
	Conversation
	TaskID int
	Trial  int
	Reward float64
	// Gold are the distinct argument values of the task's gold actions
	// (info.task.actions[].kwargs) that a model must carry to make those
	// calls: ids, flight numbers, dates, amounts, airport codes and names.
	// Booleans, enum words (cabin, trip type, "no"), baggage counts,
	// free-text fields and one-character values are left out.
	Gold []GoldValue
}

// goldKinds maps the kwargs keys that are kept to their reporting kind.
var goldKinds = map[string]string{
	"reservation_id": "reservation code",
	"flight_number":  "flight number",
	"date":           "date",
	"dob":            "date",
	"amount":         "amount",
	"user_id":        "user id",
	"payment_id":     "payment id",
	"origin":         "airport code",
	"destination":    "airport code",
	"first_name":     "name",
	"last_name":      "name",
}

// GoldKinds lists the gold value kinds in reporting order.
var GoldKinds = []string{"reservation code", "flight number", "date", "amount", "user id", "payment id", "airport code", "name"}

type tauMessage struct {
	Role      string  `json:"role"`
	Content   *string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

// LoadTauBench reads dir/taubench_airline/gpt-4o-airline.json. The shared
// system prompt (traj[0]) is left out; tool calls and tool results are kept.
func LoadTauBench(dir string) ([]Trajectory, error) {
	path := filepath.Join(dir, TauBenchFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: read τ-bench: %w", err)
	}
	var recs []struct {
		TaskID int          `json:"task_id"`
		Trial  int          `json:"trial"`
		Reward float64      `json:"reward"`
		Traj   []tauMessage `json:"traj"`
		Info   struct {
			Task struct {
				Actions []struct {
					Name   string         `json:"name"`
					Kwargs map[string]any `json:"kwargs"`
				} `json:"actions"`
			} `json:"task"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, fmt.Errorf("data: decode %s: %w", path, err)
	}
	out := make([]Trajectory, 0, len(recs))
	for _, r := range recs {
		tr := Trajectory{TaskID: r.TaskID, Trial: r.Trial, Reward: r.Reward}
		tr.ID = fmt.Sprintf("task-%d-trial-%d", r.TaskID, r.Trial)
		for _, m := range r.Traj {
			content := ""
			if m.Content != nil {
				content = *m.Content
			}
			switch m.Role {
			case "system":
				continue
			case "user":
				tr.Turns = append(tr.Turns, Turn{User: content})
				continue
			}
			if len(tr.Turns) == 0 {
				return nil, fmt.Errorf("data: %s: %s message before the first user message", tr.ID, m.Role)
			}
			last := &tr.Turns[len(tr.Turns)-1]
			switch m.Role {
			case "assistant":
				ai := llms.AIChatMessage{Content: content}
				for _, tc := range m.ToolCalls {
					ai.ToolCalls = append(ai.ToolCalls, llms.ToolCall{
						ID: tc.ID, Type: tc.Type,
						FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
					})
				}
				last.Replies = append(last.Replies, ai)
			case "tool":
				last.Replies = append(last.Replies, llms.ToolChatMessage{ID: m.ToolCallID, Content: content})
			default:
				return nil, fmt.Errorf("data: %s: unknown role %q", tr.ID, m.Role)
			}
		}
		seen := map[GoldValue]bool{}
		for _, a := range r.Info.Task.Actions {
			keys := make([]string, 0, len(a.Kwargs))
			for k := range a.Kwargs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				collectGold(k, a.Kwargs[k], seen, &tr.Gold)
			}
		}
		out = append(out, tr)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("data: %s holds no trajectory", path)
	}
	return out, nil
}

// collectGold flattens a kwargs value: scalars under a kept key become gold
// values; objects and arrays are walked, their scalars keyed by their own
// field names.
func collectGold(key string, v any, seen map[GoldValue]bool, out *[]GoldValue) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			collectGold(k, x[k], seen, out)
		}
	case []any:
		for _, e := range x {
			collectGold(key, e, seen, out)
		}
	case string:
		addGold(key, x, seen, out)
	case float64:
		addGold(key, strconv.FormatFloat(x, 'f', -1, 64), seen, out)
	}
	// Booleans and nulls are never gold values.
}

func addGold(key, value string, seen map[GoldValue]bool, out *[]GoldValue) {
	kind, ok := goldKinds[key]
	if !ok || len(value) < 2 {
		return
	}
	g := GoldValue{Kind: kind, Value: value}
	if !seen[g] {
		seen[g] = true
		*out = append(*out, g)
	}
}
