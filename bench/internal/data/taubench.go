package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/datasets"
	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory/store"
)

// TauBenchFile is the τ-bench airline file's path below the data directory.
const TauBenchFile = datasets.TauBenchFile

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

// LoadTauBench reads dir/taubench_airline/gpt-4o-airline.json
// (internal/datasets; each message read by the one message codec,
// msgjson's TauBench format). The shared system prompt (traj[0]) is left
// out; tool calls and tool results are kept.
func LoadTauBench(dir string) ([]Trajectory, error) {
	path := filepath.Join(dir, TauBenchFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: read τ-bench: %w", err)
	}
	recs, err := datasets.ParseTauBench(raw)
	if err != nil {
		return nil, fmt.Errorf("data: decode %s: %w", path, err)
	}
	out := make([]Trajectory, 0, len(recs))
	for _, r := range recs {
		tr := Trajectory{TaskID: r.TaskID, Trial: r.Trial, Reward: r.Reward}
		tr.ID = r.ID()
		for j, rm := range r.Traj {
			w, err := msgjson.Decode(rm, msgjson.TauBench)
			if err != nil {
				return nil, fmt.Errorf("data: %s: message %d: %w", tr.ID, j+1, err)
			}
			m, err := msgjson.ToMemory(w, msgjson.TauBench)
			if err != nil {
				return nil, fmt.Errorf("data: %s: message %d: %w", tr.ID, j+1, err)
			}
			switch m.Role {
			case store.RoleSystem:
				continue
			case store.RoleUser:
				tr.Turns = append(tr.Turns, Turn{User: m.Content})
				continue
			}
			if len(tr.Turns) == 0 {
				return nil, fmt.Errorf("data: %s: %s message before the first user message", tr.ID, m.Role)
			}
			last := &tr.Turns[len(tr.Turns)-1]
			if m.Role == store.RoleTool {
				last.Replies = append(last.Replies, llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Content})
			} else {
				last.Replies = append(last.Replies, llms.AIChatMessage{Content: m.Content, ToolCalls: m.ToolCalls})
			}
		}
		actions, err := r.Actions()
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w", tr.ID, err)
		}
		seen := map[GoldValue]bool{}
		for _, a := range actions {
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
