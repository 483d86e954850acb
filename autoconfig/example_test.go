package autoconfig_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-go/strata/autoconfig"
)

// An arc-reactor application.yaml memory section, tuned by the
// environment.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "strata-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "application.yaml")
	_ = os.WriteFile(path, []byte(`
server:
  port: 8080            # not Strata's: ignored
arc:
  reactor:
    memory:
      summary:
        enabled: true
        trigger-message-count: 20
        recent-message-count: 10
`), 0o600)

	// Load(path) reads the process environment; LoadWithEnv takes it
	// explicitly.
	cfg, err := autoconfig.LoadWithEnv([]string{"ARC_REACTOR_MEMORY_SUMMARY_RECENT_MESSAGE_COUNT=6"}, path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("enabled:", cfg.Memory.Enabled)
	fmt.Println("recent:", cfg.Memory.RecentMessageCount, "from", cfg.Source("arc.reactor.memory.summary.recent-message-count"))
	fmt.Println("summarizer:", cfg.EffectiveProvider())

	// A typo is an error naming the key.
	_, err = autoconfig.LoadWithEnv([]string{"ARC_REACTOR_MEMORY_SUMMARY_RECENT_MESSAGE_COUNT=-1"}, path)
	fmt.Println(err)
	// Output:
	// enabled: true
	// recent: 6 from environment variable ARC_REACTOR_MEMORY_SUMMARY_RECENT_MESSAGE_COUNT
	// summarizer: extractive
	// invalid config: arc.reactor.memory.summary.recent-message-count = -1 (from environment variable ARC_REACTOR_MEMORY_SUMMARY_RECENT_MESSAGE_COUNT): must be >= 0
}

// Build a manager from configuration: summaries on, in-memory stores, the
// offline extractive summarizer.
func ExampleBuild() {
	ctx := context.Background()
	cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{
		Environ: []string{},
		Overrides: []string{
			"arc.reactor.memory.summary.enabled=true",
			"arc.reactor.memory.summary.trigger-message-count=4",
			"arc.reactor.memory.summary.recent-message-count=2",
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := autoconfig.Build(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer mgr.Close()

	turns := [][2]string{
		{"Hi, I'm Dana. Order #A-7731 arrived broken.", "Sorry, Dana! Let me help with order #A-7731."},
		{"It cost $129.99.", "I see the $129.99 charge."},
		{"I'd like a refund.", "Refund approved."},
	}
	for _, t := range turns {
		_ = mgr.SaveTurn(ctx, "support-1", "dana", t[0], t[1])
		_ = mgr.Flush(ctx) // only so that the example's output is deterministic
	}
	h, err := mgr.Load(ctx, "support-1", "dana")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Mode, len(h.Messages), "messages")
	for _, line := range strings.Split(h.Messages[0].GetContent(), "\n") {
		if line == "Conversation Facts:" || strings.Contains(line, "#A-7731") {
			fmt.Println(line)
		}
	}
	// Output:
	// hierarchical 4 messages
	// Conversation Facts:
	// - order_id: #A-7731
}
