// Command memory-alone replays a built-in customer-support conversation
// through Strata with the embedded defaults (in-memory store, offline
// extractive summarizer) and prints what the model would see at a few
// turns, then the final facts and narrative. No network, no API key.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// conversation is a support chat: user message, assistant answer.
var conversation = [][2]string{
	{"Hi, my name is Dana Whitfield. I need help with order #A-7731.", "Hello Dana! I can help with order #A-7731. What seems to be the problem?"},
	{"I was charged $129.99 but the blender arrived broken.", "I'm sorry to hear that. I can see the charge of $129.99 for the blender on order #A-7731."},
	{"I'd like a refund, not a replacement.", "Understood: a refund rather than a replacement."},
	{"You can reach me at dana.whitfield@example.com or +1 415 555 0134.", "Thanks, I've noted dana.whitfield@example.com and +1 415 555 0134."},
	{"How long does the refund take?", "Refunds post within 5 business days once the return is scanned."},
	{"Do I need to ship the blender back?", "Yes, please use the prepaid label; the return must be sent by 2026-12-05."},
	{"Can I drop it at a UPS store?", "Yes, any UPS store accepts the prepaid label."},
	{"Will I get an email when it's scanned?", "Yes, you'll get a confirmation email when the carrier scans it."},
	{"Is there a restocking fee?", "No restocking fee applies to damaged items."},
	{"Great. Also, 2 mugs from the same order were fine.", "Good to hear the 2 mugs arrived intact; they stay with you."},
	{"Could you send the label again? I lost it.", "I've re-sent the prepaid return label to your email."},
	{"Got it, thanks.", "You're welcome! Anything else?"},
	{"What was my order number again, and how much will I get back?", "Your order is #A-7731 and the refund is $129.99."},
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "memory-alone:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	// Small numbers for the demo: once a session holds more than 8
	// messages, all but the last 4 are folded into facts and a narrative,
	// and prompts are fitted into a 2 000-token window of which 500 are
	// kept for the answer. The budget lives in the configuration only.
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 8, 4
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 2_000, 500

	ms := memory.NewInMemoryStore() // keeps each session's messages, summary and fold lease
	mgr, err := memory.NewManager(ms, cfg,
		memory.WithSummaries(ms.Summaries(), summary.NewExtractiveService()))
	if err != nil {
		return err
	}
	defer mgr.Close()
	// Only to print token counts: prices messages with the manager's own
	// estimator and budget.
	pricer := trimmer.New(cfg.ContextWindowTokens, cfg.OutputReserveTokens, mgr.Config().Estimator)

	const session, user = "support-42", "dana"
	const systemPrompt = "You are a helpful support agent."
	for i, turn := range conversation {
		history, err := mgr.LoadHistory(ctx, session, user)
		if err != nil {
			return err
		}
		// What a model call would receive: the manager's one prompt builder
		// puts the system prompt first and fits memory + the new message
		// into the budget.
		prompt, _ := mgr.Prompt(systemPrompt, append(history, llms.HumanChatMessage{Content: turn[0]}), 0)
		if i == 2 || i == 6 || i == len(conversation)-1 {
			fmt.Fprintf(w, "=== before turn %d: the model sees %d messages (~%d tokens) ===\n", i+1, len(prompt), pricer.Cost(prompt))
			for j, m := range prompt {
				mark := ""
				if j == len(prompt)-1 {
					mark = "   <- current message"
				}
				fmt.Fprintf(w, "  [%s] %s%s\n", m.GetType(), indent(m.GetContent()), mark)
			}
			fmt.Fprintln(w)
		}
		// ... call the model with prompt; here the scripted answer ...
		if err := mgr.SaveTurn(ctx, session, user, turn[0], turn[1]); err != nil {
			return err
		}
		if err := mgr.Flush(ctx); err != nil { // deterministic output; real apps never wait
			return err
		}
	}

	s, err := mgr.Summary(ctx, session, user)
	if err != nil {
		return err
	}
	if s == nil {
		return errors.New("no summary was made")
	}
	fmt.Fprintf(w, "=== final memory: messages 1-%d folded into %d facts ===\n", s.UpToSeq, len(s.Facts))
	for _, f := range s.Facts {
		fmt.Fprintf(w, "  - %s: %s [%s]\n", f.Key, f.Value, f.Category)
	}
	fmt.Fprintf(w, "narrative: %s\n", s.Narrative)
	st := mgr.Stats()
	fmt.Fprintf(w, "folds: %d, summarizer calls: %d, fallbacks: %d\n", st.Folds, st.SummarizerCalls, st.Fallbacks)
	return nil
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") }
