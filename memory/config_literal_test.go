package memory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
)

// fullLiteral is a Config literal that sets every field whose zero would
// switch something off, and leaves the rest zero.
func fullLiteral() memory.Config {
	return memory.Config{
		TriggerMessageCount: 20, RecentMessageCount: 10, MaxConversationTurns: 10,
		MaxMessageBytes: 1 << 20, FailureCooldown: time.Second, MaxFailureCooldown: time.Minute,
		ContextWindowTokens: 8000, OutputReserveTokens: 1000,
		BufferMessageCount: 10, FoldTokenFraction: 0.5, SafetyTurns: 5, MaxFoldInputTokens: 4000, MinTailMessages: 2,
	}
}

var offFields = map[string]func(*memory.Config){
	"MaxMessageBytes":     func(c *memory.Config) { c.MaxMessageBytes = 0 },
	"FailureCooldown":     func(c *memory.Config) { c.FailureCooldown = 0 },
	"MaxFailureCooldown":  func(c *memory.Config) { c.MaxFailureCooldown, c.FailureCooldown = 0, 0 },
	"OutputReserveTokens": func(c *memory.Config) { c.OutputReserveTokens = 0 },
	"BufferMessageCount":  func(c *memory.Config) { c.BufferMessageCount = 0 },
	"FoldTokenFraction":   func(c *memory.Config) { c.FoldTokenFraction = 0 },
	"SafetyTurns":         func(c *memory.Config) { c.SafetyTurns = 0 },
	"MaxFoldInputTokens":  func(c *memory.Config) { c.MaxFoldInputTokens = 0 },
	"MinTailMessages":     func(c *memory.Config) { c.MinTailMessages = 0 },
}

func TestConfigLiteralNeverSwitchesAProtectionOffByOmission(t *testing.T) {
	for field, zero := range offFields {
		// From DefaultConfig, a zero is chosen: it means what the field's
		// documentation says.
		cfg := memory.DefaultConfig()
		zero(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s = 0 from DefaultConfig refused: %v", field, err)
		}
		// In a literal, it is refused, naming the field and the way out.
		lit := fullLiteral()
		if field == "MaxFailureCooldown" {
			lit.FailureCooldown = 0 // reported first otherwise
		}
		zero(&lit)
		err := lit.Validate()
		var fe *memory.FieldError
		want := field
		if field == "MaxFailureCooldown" {
			want = "FailureCooldown"
		}
		if !errors.As(err, &fe) || fe.Field != want || !strings.Contains(err.Error(), "start from DefaultConfig()") {
			t.Errorf("literal with %s = 0: err = %v", field, err)
		}
		if _, err := memory.NewManager(memory.NewInMemoryStore(), lit); !errors.As(err, &fe) || fe.Field != want {
			t.Errorf("NewManager took a literal with %s = 0: %v", field, err)
		}
	}
}

func TestConfigLiteralZeroTimingsAreDefaults(t *testing.T) {
	if err := fullLiteral().Validate(); err != nil {
		t.Fatal(err)
	}
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), fullLiteral())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	got, def := mgr.Config(), memory.DefaultConfig()
	if got.LoadGrace != def.LoadGrace || got.FoldWait != def.FoldWait || got.FoldLockTTL != def.FoldLockTTL ||
		got.SupersedeDelay != def.SupersedeDelay || got.CloseTimeout != def.CloseTimeout {
		t.Fatalf("timings of a literal = %+v", got)
	}
	// The manager's Config is a starting point like DefaultConfig.
	cfg := mgr.Config()
	cfg.MaxMessageBytes = 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Config() with MaxMessageBytes = 0: %v", err)
	}
}
