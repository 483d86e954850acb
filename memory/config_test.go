package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// nilSummaries is a summary store type used only as a typed nil.
type nilSummaries struct{ summary.Store }

// NewManager refuses configurations that would silently run without
// summaries, or panic later.
func TestNewManagerRefusesHalfConfiguredSummaries(t *testing.T) {
	sums := summary.NewInMemoryStore(0)
	svc := summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: "n"}, nil
	})
	var (
		nilStore   *nilMessageStore
		nilFunc    summary.ServiceFunc
		nilSumsPtr *nilSummaries
	)
	for name, tc := range map[string]struct {
		store memory.MessageStore
		opts  []memory.Option
	}{
		"enabled without WithSummaries": {memory.NewInMemoryStore(), nil},
		"nil summarizer":                {memory.NewInMemoryStore(), []memory.Option{memory.WithSummaries(sums, nil)}},
		"typed-nil summarizer":          {memory.NewInMemoryStore(), []memory.Option{memory.WithSummaries(sums, nilFunc)}},
		"nil summary store":             {memory.NewInMemoryStore(), []memory.Option{memory.WithSummaries(nil, svc)}},
		"typed-nil summary store":       {memory.NewInMemoryStore(), []memory.Option{memory.WithSummaries(nilSumsPtr, svc)}},
		"nil message store":             {nil, []memory.Option{memory.WithSummaries(sums, svc)}},
		"typed-nil message store":       {nilStore, []memory.Option{memory.WithSummaries(sums, svc)}},
	} {
		mgr, err := memory.NewManager(tc.store, hierConfig(), append(tc.opts, memory.WithLogger(quiet))...)
		if err == nil || mgr != nil {
			if mgr != nil {
				_ = mgr.Close()
			}
			t.Errorf("%s: NewManager accepted it (err %v)", name, err)
		}
	}
	// Summaries off need no summarizer, and may have one wired.
	for _, opts := range [][]memory.Option{nil, {memory.WithSummaries(sums, svc)}} {
		mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		_ = mgr.Close()
	}
	// A half pair is refused even with summaries off.
	if _, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig(), memory.WithSummaries(sums, nil)); err == nil {
		t.Error("accepted a summary store without a summarizer")
	}
}

func TestConfigValidation(t *testing.T) {
	for field, mutate := range map[string]func(*memory.Config){
		"RecentMessageCount":   func(c *memory.Config) { c.RecentMessageCount = -1 },
		"TriggerMessageCount":  func(c *memory.Config) { c.TriggerMessageCount = -1 },
		"MaxConversationTurns": func(c *memory.Config) { c.MaxConversationTurns = -1 },
		"MaxMessageBytes":      func(c *memory.Config) { c.MaxMessageBytes = -1 },
		"MaxFailureCooldown":   func(c *memory.Config) { c.MaxFailureCooldown = c.FailureCooldown - 1 },
		"Policy":               func(c *memory.Config) { c.Policy = "eager" },
		"FoldTokenFraction":    func(c *memory.Config) { c.FoldTokenFraction = 1.5 },
		"ContextWindowTokens":  func(c *memory.Config) { c.ContextWindowTokens = 0 },
		"OutputReserveTokens":  func(c *memory.Config) { c.OutputReserveTokens = c.ContextWindowTokens },
		"FoldMode":             func(c *memory.Config) { c.FoldMode = "partial" },
		"PromptMemoryBudget":   func(c *memory.Config) { c.PromptMemoryBudget = -1 },
		// A blank prefix would share every session.
		"SharedSessionPrefixes[1]": func(c *memory.Config) { c.SharedSessionPrefixes = []string{"slack-", " "} },
	} {
		cfg := memory.DefaultConfig()
		mutate(&cfg)
		err := cfg.Validate()
		var fe *memory.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want a *FieldError", field, err)
			continue
		}
		if fe.Field != field || fe.Want == "" {
			t.Errorf("%s: FieldError = %+v", field, fe)
		}
		_, err = memory.NewManager(memory.NewInMemoryStore(), cfg)
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: NewManager err = %v, want the FieldError", field, err)
		}
	}
	if err := memory.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	// A literal naming only the four arc-reactor fields lacks the token
	// budget: Validate says which field, rather than folding against a
	// zero-token window.
	lit := memory.Config{Enabled: true, TriggerMessageCount: 20, RecentMessageCount: 10, MaxConversationTurns: 10}
	var fe *memory.FieldError
	if err := lit.Validate(); !errors.As(err, &fe) || fe.Field != "ContextWindowTokens" {
		t.Fatalf("literal config: %v", err)
	}
}

func TestConfigAccessors(t *testing.T) {
	cfg := hierConfig()
	cfg.RecentMessageCount = 7
	f := newFixture(t, cfg)
	if got := f.mgr.Config(); got.RecentMessageCount != 7 || !got.Enabled {
		t.Fatalf("Config() = %+v", got)
	}
	if f.mgr.Config().Estimator == nil || f.mgr.Config().Estimator.Estimate("hello world") <= 0 {
		t.Fatal("no default estimator")
	}
}

// nilMessageStore is a MessageStore whose nil pointer NewManager must
// refuse.
type nilMessageStore struct{ memory.MessageStore }
