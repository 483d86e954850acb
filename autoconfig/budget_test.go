package autoconfig

import (
	"strings"
	"testing"
)

// The session's daily summarizer token budget is a key of its own,
// off by default, set through the overrides and refused when negative
// under its key's name.
func TestSessionDailyTokenBudgetKey(t *testing.T) {
	cfg, err := LoadWith(LoadOptions{Environ: []string{}})
	if err != nil || cfg.Memory.SessionDailyTokenBudget != 0 {
		t.Fatalf("default: %d, %v", cfg.Memory.SessionDailyTokenBudget, err)
	}
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySessionTokenBudget + "=50000"}})
	if err != nil || cfg.Memory.SessionDailyTokenBudget != 50000 {
		t.Fatalf("set: %d, %v", cfg.Memory.SessionDailyTokenBudget, err)
	}
	e := loadErr(t, LoadOptions{Overrides: []string{keySessionTokenBudget + "=-1"}})
	if e.Key != keySessionTokenBudget || !strings.Contains(e.Error(), "must be >= 0") {
		t.Fatalf("negative: %v", e)
	}
}
