package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
)

// lastUserPeer is a peer whose model input is the current user message
// alone; it checks that the section drives it in turn order and reports
// one "summarizer call" of one token per turn.
type lastUserPeer struct {
	t       *testing.T
	pending string
	turns   int
}

func (p *lastUserPeer) ModelInput(_ context.Context, user string) ([]llms.ChatMessage, error) {
	if p.pending != "" {
		p.t.Errorf("ModelInput(%q) before the Save of %q", user, p.pending)
	}
	p.pending = user
	return []llms.ChatMessage{llms.HumanChatMessage{Content: user}}, nil
}

func (p *lastUserPeer) Save(_ context.Context, msgs []llms.ChatMessage) error {
	if len(msgs) == 0 || msgs[0].GetContent() != p.pending {
		p.t.Errorf("Save got %d messages, first %q; want the user message %q first", len(msgs), firstContent(msgs), p.pending)
	}
	p.pending = ""
	p.turns++
	return nil
}

func (p *lastUserPeer) Usage() PeerUsage { return PeerUsage{Calls: p.turns, InputTokens: p.turns} }
func (p *lastUserPeer) Close()           {}

func firstContent(msgs []llms.ChatMessage) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].GetContent()
}

func TestRunPeersQuick(t *testing.T) {
	dir := dataDir(t)
	peer := Peer{Name: "last user message", Description: "the current user message alone.", New: func(env PeerEnv) (PeerPolicy, error) {
		if env.CountMessages == nil || env.NewSummarizer == nil || env.Strata.TriggerMessageCount == 0 {
			t.Errorf("incomplete PeerEnv %+v", env)
		}
		return &lastUserPeer{t: t}, nil
	}}
	rep, err := RunPeers(context.Background(), PeersOptions{DataDir: dir, Quick: true, Command: "go test"}, []Peer{peer})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]PeerRow{}
	for _, r := range rep.Rows {
		rows[r.Name] = r
	}
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7: %v", len(rows), rep.Rows)
	}

	// The peer's model input is priced as given: the mean of the user
	// messages' prices.
	l, err := data.LoadLoCoMo(dir)
	if err != nil {
		t.Fatal(err)
	}
	conv := l.Conversations[0].Truncate(quickParams().locomoTurns)
	c, err := newCounter()
	if err != nil {
		t.Fatal(err)
	}
	var prices []int
	for _, turn := range conv.Turns {
		prices = append(prices, c.messages([]llms.ChatMessage{llms.HumanChatMessage{Content: turn.User}}))
	}
	p := rows["last user message"]
	if p.Turns != len(conv.Turns) || p.MeanTokens != meanInt(prices) || p.MaxTokens != maxInt(prices) {
		t.Errorf("peer row %+v, want %d turns, mean %.1f, max %d", p, len(conv.Turns), meanInt(prices), maxInt(prices))
	}
	if !p.Summarizes || p.SummarizerCalls != len(conv.Turns) || p.SummarizerInputTokens != len(conv.Turns) {
		t.Errorf("peer usage not reported: %+v", p)
	}

	// LoCoMo has no tool calls: langchaingo's ConversationBuffer holds the
	// full history; the window buffer holds at most 10 messages.
	full := rows["full history"]
	if lc := rows["langchaingo ConversationBuffer"]; lc.MeanTokens != full.MeanTokens || lc.MaxTokens != full.MaxTokens {
		t.Errorf("ConversationBuffer %+v differs from the full history %+v", lc, full)
	}
	for name, r := range rows {
		summarizes := strings.HasPrefix(name, "Strata") || name == "last user message"
		if r.Summarizes != summarizes || (summarizes && r.SummarizerCalls == 0) {
			t.Errorf("%s: summarizes %v with %d calls", name, r.Summarizes, r.SummarizerCalls)
		}
		if r.MeanTokens <= 0 || r.MeanTokens > full.MeanTokens || r.TurnP50 > r.TurnP99 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	for _, want := range []string{"### Context tokens per user turn", "### Summarizer use and time per turn", "**last user message**: the current user message alone.", "quick mode", "<sub>machine: "} {
		if !strings.Contains(rep.Body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	if len(rep.Headlines) != 1 || !strings.Contains(rep.Headlines[0], "last user message") {
		t.Errorf("headlines %q", rep.Headlines)
	}
}

func TestModulePath(t *testing.T) {
	for in, want := range map[string]string{
		"module github.com/strata-go/strata\n\ngo 1.25\n": rootModule,
		"// c\nmodule \"example.com/x\"\n":                "example.com/x",
		"go 1.25\n":                                       "",
	} {
		if got := modulePath([]byte(in)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTailWriterFirstError(t *testing.T) {
	var fwd strings.Builder
	w := &tailWriter{fwd: &fwd}
	_, _ = w.Write([]byte("strata-bench:   peers: LoCoMo conv-26\n# github.com/strata-go/strata/bench/peers\n"))
	_, _ = w.Write([]byte("./eino.go:1:1: undefined: x\n./eino.go:2:1: more\n"))
	if got := w.firstError(); got != "./eino.go:1:1: undefined: x" {
		t.Errorf("firstError = %q", got)
	}
	if !strings.HasPrefix(fwd.String(), "strata-bench:   peers") {
		t.Errorf("not forwarded: %q", fwd.String())
	}
	w = &tailWriter{}
	_, _ = w.Write([]byte("strata-bench: only progress\n"))
	if got := w.firstError(); got != "strata-bench: only progress" {
		t.Errorf("firstError without an error line = %q", got)
	}
}
