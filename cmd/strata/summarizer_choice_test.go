package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/strata-go/strata/autoconfig"
)

// Which summarizer runs, and why, for arc-reactor's llm.default-provider
// and its variations: with its key present it runs, as in arc-reactor;
// without a key, unknown to Strata or overridden, the choice says so; a
// build with summaries on logs the choice once, as a warning when
// arc-reactor's provider could not run.
func TestSummarizerChoiceFromArcReactor(t *testing.T) {
	t.Parallel()
	const dp = "arc.reactor.llm.default-provider="
	for _, tc := range []struct {
		name      string
		env, sets []string
		provider  string
		why       string
		warn      bool
	}{
		{"gemini with GEMINI_API_KEY", []string{"GEMINI_API_KEY=k"}, []string{dp + "gemini"}, "gemini", "$GEMINI_API_KEY holds its API key", false},
		{"gemini with GOOGLE_API_KEY", []string{"GOOGLE_API_KEY=k"}, []string{dp + " Gemini "}, "gemini", "$GOOGLE_API_KEY holds its API key", false},
		{"openai", []string{"OPENAI_API_KEY=k"}, []string{dp + "openai"}, "openai", "$OPENAI_API_KEY holds its API key", false},
		{"openai-compatible server", nil, []string{dp + "openai", "arc.reactor.memory.summarizer.base-url=http://127.0.0.1:11434/v1"}, "openai", "summarizer.base-url names its server", false},
		{"no key", []string{"GEMINI_API_KEY= "}, []string{dp + "gemini"}, "extractive", "but no API key is set ($GOOGLE_API_KEY, $GEMINI_API_KEY): the offline extractive summarizer runs instead", true},
		{"a key variable named", []string{"GEMINI_API_KEY=k"}, []string{dp + "gemini", "arc.reactor.memory.summarizer.api-key-env=MY_KEY"}, "extractive", "($MY_KEY)", true},
		{"unknown provider", []string{"ANTHROPIC_API_KEY=k"}, []string{dp + "anthropic"}, "extractive", "which Strata has no summarizer for", true},
		{"llm-model wins", []string{"GEMINI_API_KEY=k", "OPENAI_API_KEY=k"}, []string{dp + "gemini", "arc.reactor.memory.summary.llm-model=gpt-4o-mini"}, "openai", "is openai (arc.reactor.memory.summary.llm-model (--set))", false},
		{"summarizer.provider wins", []string{"GEMINI_API_KEY=k"}, []string{dp + "gemini", "arc.reactor.memory.summarizer.provider=extractive"}, "extractive", "summarizer.provider is extractive (--set)", false},
		{"nothing set", []string{"GEMINI_API_KEY=k"}, nil, "extractive", "the default", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sets := append([]string{"arc.reactor.memory.summary.enabled=true"}, tc.sets...)
			cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Environ: tc.env, Overrides: sets, OverrideSource: "--set"})
			if err != nil {
				t.Fatal(err)
			}
			p, why := cfg.SummarizerChoice()
			if p != tc.provider || !strings.Contains(why, tc.why) || p != cfg.EffectiveProvider() {
				t.Fatalf("SummarizerChoice = %s, %q; want %s, %q", p, why, tc.provider, tc.why)
			}
			var logs bytes.Buffer
			rt, err := autoconfig.BuildRuntime(context.Background(), cfg, autoconfig.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if n := strings.Count(logs.String(), "summarizer: "+p+": "); n != 1 || strings.Contains(logs.String(), "level=WARN") != tc.warn {
				t.Fatalf("start-up log (%d lines on the summarizer, warning %v):\n%s", n, tc.warn, logs.String())
			}
		})
	}
}
