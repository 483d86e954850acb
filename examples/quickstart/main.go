// Command quickstart replays a built-in customer-support conversation
// through Strata with the embedded defaults (in-memory store, offline
// extractive summarizer) and prints what the model would see at a few
// turns, then the final facts and narrative. No network, no API key.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

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
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 8, 4

	sums := summary.NewInMemoryStore(0)
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(sums, summary.NewExtractiveService()))
	if err != nil {
		return err
	}
	defer mgr.Close()
	est := trimmer.NewEstimator()
	trim := trimmer.New(2_000, 500, est)

	const session, user = "support-42", "dana"
	for i, turn := range conversation {
		history, err := mgr.LoadHistory(ctx, session, user)
		if err != nil {
			return err
		}
		if i == 2 || i == 6 || i == len(conversation)-1 {
			prompt := trim.Trim(history, "You are a helpful support agent.", 0)
			fmt.Fprintf(w, "=== before turn %d: the model sees %d messages (~%d tokens) ===\n", i+1, len(prompt), trim.Cost(prompt))
			for _, m := range prompt {
				fmt.Fprintf(w, "  [%s] %s\n", m.GetType(), indent(m.GetContent()))
			}
			fmt.Fprintf(w, "  [human] %s   <- current message\n\n", turn[0])
		}
		if err := mgr.SaveTurn(ctx, session, user, turn[0], turn[1]); err != nil {
			return err
		}
		if err := mgr.Flush(ctx); err != nil { // deterministic output; real apps never wait
			return err
		}
	}

	s, err := sums.Get(ctx, session)
	if err != nil || s == nil {
		return fmt.Errorf("no summary was made (err=%v)", err)
	}
	fmt.Fprintf(w, "=== final memory: %d messages folded into %d facts ===\n", s.UpToSeq, len(s.Facts))
	for _, f := range s.Facts {
		fmt.Fprintf(w, "  - %s: %s [%s]\n", f.Key, f.Value, f.Category)
	}
	fmt.Fprintf(w, "narrative: %s\n", s.Narrative)
	st := mgr.Stats()
	fmt.Fprintf(w, "folds: %d, summarizer calls: %d, fallbacks: %d\n", st.Folds, st.SummarizerCalls, st.Fallbacks)
	return nil
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") }
