// Command chat-agent is a customer-support chat agent with an order-lookup
// tool and Strata's hierarchical memory.
//
// By default it runs offline: a scripted model plays a short support chat,
// and the transcript shows a tool call and the memory at work (the first
// order id survives in the folded facts after its turn has left the verbatim
// window). Set STRATA_LLM to talk to a real model instead:
//
//	go run ./examples/chat-agent                      # offline, scripted
//	go run ./examples/chat-agent -i                   # your own messages, from stdin
//	STRATA_LLM=gemini GOOGLE_API_KEY=… go run ./examples/chat-agent -i
//	STRATA_LLM=openai OPENAI_API_KEY=… go run ./examples/chat-agent -i
//
// For STRATA_LLM=openai, OPENAI_BASE_URL points at any OpenAI-compatible
// server (Ollama, vLLM, Gemini's OpenAI endpoint, …) and OPENAI_MODEL picks
// the model (default gpt-4o-mini). For gemini, GEMINI_MODEL (default
// gemini-2.0-flash).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

const systemPrompt = `You are Strata Shop's support agent. Be brief and friendly.
Use the lookup_order tool to check an order before talking about its status.`

// script is the offline conversation (also used without -i on a real model).
var script = []string{
	"Hi, I'm Dana Whitfield.",
	"Where is my order #A-1234?",
	"And what about order #B-5521?",
	"Can I still change the delivery address of that one?",
	"What is your return policy?",
	"Thanks! One last thing: which order did I ask about first, and where is it?",
}

func main() {
	interactive := flag.Bool("i", false, "read your messages from stdin instead of playing the script")
	flag.Parse()
	if err := run(context.Background(), os.Getenv("STRATA_LLM"), *interactive, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chat-agent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, provider string, interactive bool, in io.Reader, out io.Writer) error {
	llm, closeLLM, err := newModel(ctx, provider)
	if err != nil {
		return err
	}
	defer closeLLM()

	// Memory: once a session holds more than 8 messages, all but the last 4
	// are folded into facts and a narrative (small numbers, for the demo).
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 8, 4
	summarizer := summary.NewExtractiveService() // offline
	if !isOffline(provider) {
		summarizer = summary.NewLLMService(llm)
	}
	// The manager and the agent log nothing unless given a logger.
	ms := memory.NewInMemoryStore() // keeps each session's messages, summary and fold lease
	mgr, err := memory.NewManager(ms, cfg,
		memory.WithSummaries(ms.Summaries(), summarizer))
	if err != nil {
		return err
	}
	defer mgr.Close()

	bot, err := agent.New(llm, mgr,
		agent.WithSystemPrompt(systemPrompt),
		agent.WithTools(orderLookup{}))
	if err != nil {
		return err
	}

	const session, user = "support-chat", "dana"
	turn := func(text string) error {
		// The memory the agent is about to load, for the transcript: the
		// summary it shows (facts and narrative) comes from the manager as
		// data, never parsed back out of the prompt's text.
		mem, err := mgr.Load(ctx, session, user)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "you> %s\n", text)
		fmt.Fprint(out, "bot> ")
		res, err := bot.RunStream(ctx, session, user, text, func(_ context.Context, chunk []byte) error {
			_, err := out.Write(chunk)
			return err
		})
		fmt.Fprintln(out)
		if err != nil {
			return err
		}
		for _, m := range res.Messages {
			if ai, ok := m.(llms.AIChatMessage); ok {
				for _, tc := range ai.ToolCalls {
					fmt.Fprintf(out, "      [tool call] %s %s\n", tc.FunctionCall.Name, tc.FunctionCall.Arguments)
				}
			}
		}
		fmt.Fprintf(out, "      [memory] the model saw %s\n\n", describePrompt(res.Prompt, mem.Summary))
		// Wait for the background fold so the transcript is deterministic;
		// a real application never waits.
		return mgr.Flush(ctx)
	}

	if interactive {
		fmt.Fprintln(out, "Type a message (empty line or Ctrl-D to quit).")
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				break
			}
			if err := turn(text); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
	} else {
		for _, text := range script {
			if err := turn(text); err != nil {
				return err
			}
		}
	}
	return printMemory(ctx, out, mgr, session, user)
}

// newModel returns the model STRATA_LLM asks for: the offline scripted one
// by default, Gemini, or an OpenAI-compatible endpoint.
func newModel(ctx context.Context, provider string) (llms.Model, func(), error) {
	if isOffline(provider) {
		return newScriptedModel(), func() {}, nil
	}
	switch provider {
	case "gemini":
		key := os.Getenv("GOOGLE_API_KEY")
		if key == "" {
			return nil, nil, errors.New("STRATA_LLM=gemini needs GOOGLE_API_KEY")
		}
		llm, err := googleai.New(ctx, googleai.WithAPIKey(key), googleai.WithDefaultModel(envOr("GEMINI_MODEL", "gemini-2.0-flash")))
		if err != nil {
			return nil, nil, err
		}
		return llm, func() { _ = llm.Close() }, nil
	case "openai":
		llm, err := openai.New(openai.WithModel(envOr("OPENAI_MODEL", "gpt-4o-mini")))
		if err != nil {
			return nil, nil, fmt.Errorf("STRATA_LLM=openai: %w (set OPENAI_API_KEY, and OPENAI_BASE_URL for another server)", err)
		}
		return llm, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown STRATA_LLM %q (want gemini or openai, or unset for offline)", provider)
}

// isOffline reports whether STRATA_LLM asks for the offline scripted model.
func isOffline(provider string) bool {
	return provider == "" || provider == "offline" || provider == "scripted"
}

// describePrompt summarizes what one model call received: the system
// prompt, the loaded summary's facts and narrative (s, nil when none) and
// the conversation messages (everything but system messages).
func describePrompt(prompt []llms.ChatMessage, s *summary.Summary) string {
	var parts []string
	others := 0
	for _, m := range prompt {
		if m.GetType() != llms.ChatMessageTypeSystem {
			others++
		}
	}
	if len(prompt) > 0 && prompt[0].GetType() == llms.ChatMessageTypeSystem && strings.HasPrefix(prompt[0].GetContent(), systemPrompt) {
		parts = append(parts, "the system prompt")
	}
	if s != nil {
		if n := len(s.Facts); n > 0 {
			parts = append(parts, fmt.Sprintf("%d facts", n))
		}
		if strings.TrimSpace(s.Narrative) != "" {
			parts = append(parts, "a summary")
		}
	}
	plural := "s"
	if others == 1 {
		plural = ""
	}
	parts = append(parts, fmt.Sprintf("%d conversation message%s", others, plural))
	return strings.Join(parts, " + ")
}

// printMemory shows what the session's memory holds at the end.
func printMemory(ctx context.Context, out io.Writer, mgr *memory.Manager, session, user string) error {
	msgs, err := mgr.Messages(ctx, session, user, 0, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "=== memory: %d messages stored, tool calls and results included ===\n", len(msgs))
	s, err := mgr.Summary(ctx, session, user)
	if err != nil || s == nil {
		return err
	}
	fmt.Fprintf(out, "facts folded from messages 1-%d:\n", s.UpToSeq)
	for _, f := range s.Facts {
		fmt.Fprintf(out, "  - %s: %s [%s]\n", f.Key, f.Value, f.Category)
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
