package runner

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// This file is the part of section 13 that a program outside this package
// drives: the peer harness in bench/peers (a module of its own, so that
// the root module never depends on the peers it compares) plugs its
// policies in as Peers and renders the section with RunPeers.

// PeerPolicy is one conversation's memory under a policy supplied from
// outside this package, replayed turn by turn next to the built-in ones.
type PeerPolicy interface {
	// ModelInput returns everything the model is sent at the coming user
	// turn, the user message user included (or folded away, if the
	// policy folds it). It is called once per turn, before Save, and may
	// change the policy's state as the policy would before a model call.
	ModelInput(ctx context.Context, user string) ([]llms.ChatMessage, error)
	// Save records the finished turn: msgs are its messages, the user
	// message (the one ModelInput was given) first, then the replies.
	Save(ctx context.Context, msgs []llms.ChatMessage) error
	// Usage reports the summarizer use so far.
	Usage() PeerUsage
	// Close releases the policy.
	Close()
}

// PeerUsage is a policy's summarizer use.
type PeerUsage struct {
	// Calls counts summarizer calls.
	Calls int
	// InputTokens sums what the summarizer was sent, priced with
	// PeerEnv.CountMessages.
	InputTokens int
	// Pricing is the time spent counting InputTokens, which the section
	// subtracts from the policy's time per turn (counting is the
	// benchmark's work, not the policy's).
	Pricing time.Duration
}

// PeerEnv is what a peer's constructor gets from the section.
type PeerEnv struct {
	// CountMessages prices messages as the section prices every policy's
	// context: tiktoken cl100k_base over contents and tool-call names and
	// arguments, plus 3 tokens per message.
	CountMessages func([]llms.ChatMessage) int
	// NewSummarizer returns the offline extractive summarizer that Strata's
	// policies use in the same replay (summary.NewExtractiveService).
	NewSummarizer func() summary.Service
	// Strata is the configuration of the Strata chunked policy of the
	// replay (memory.DefaultConfig with summaries on and the chunked
	// policy), for matching a peer's windows and triggers to it.
	Strata memory.Config
}

// Peer is a policy supplied from outside this package.
type Peer struct {
	// Name is the policy's row name in the tables.
	Name string
	// Description is Markdown that says what the policy does and how it is
	// configured, rendered as one bullet of the section.
	Description string
	// New builds the policy for one conversation.
	New func(env PeerEnv) (PeerPolicy, error)
}

// PeersOptions configures RunPeers.
type PeersOptions struct {
	// DataDir holds locomo/ (read in place).
	DataDir string
	// Quick replays one short conversation: a smoke test, not a
	// measurement.
	Quick bool
	// Command is the command line shown in the tables' provenance line.
	Command string
	// Progress receives progress lines (nil: discarded).
	Progress io.Writer
}

// PeerRow is one policy's numbers over the replay.
type PeerRow struct {
	// Name is the policy's row name.
	Name string `json:"name"`
	// Turns is the number of user turns replayed.
	Turns int `json:"turns"`
	// MeanTokens and MaxTokens are the context tokens per turn.
	MeanTokens float64 `json:"mean_tokens"`
	MaxTokens  int     `json:"max_tokens"`
	// Summarizes tells whether the policy calls a summarizer at all.
	Summarizes bool `json:"summarizes"`
	// SummarizerCalls and SummarizerInputTokens are totals over the replay.
	SummarizerCalls       int `json:"summarizer_calls"`
	SummarizerInputTokens int `json:"summarizer_input_tokens"`
	// TurnMean, TurnP50 and TurnP99 are the policy's time per turn (its
	// load and its save, summarizer included), in nanoseconds.
	TurnMean time.Duration `json:"turn_mean_ns"`
	TurnP50  time.Duration `json:"turn_p50_ns"`
	TurnP99  time.Duration `json:"turn_p99_ns"`
}

// PeersReport is section 13 as RunPeers renders it.
type PeersReport struct {
	// Body is the section's Markdown, without its heading.
	Body string `json:"body"`
	// Headlines are the section's headline lines.
	Headlines []string `json:"headlines"`
	// Rows are the numbers behind the tables, in table order.
	Rows []PeerRow `json:"rows"`
}

// RunPeers replays LoCoMo through the built-in policies of section 13 and
// through peers, and renders the section.
func RunPeers(ctx context.Context, opts PeersOptions, peers []Peer) (*PeersReport, error) {
	if opts.DataDir == "" {
		return nil, errors.New("runner: no data directory")
	}
	if opts.Command == "" {
		opts.Command = "go run ./bench/cmd/strata-bench -sections 13"
	}
	r, err := newRunner(Options{DataDir: opts.DataDir, Quick: opts.Quick, Command: opts.Command, Progress: opts.Progress}, time.Now())
	if err != nil {
		return nil, err
	}
	out := &sectionOut{}
	rows, err := r.peersBody(ctx, peers, out)
	if err != nil {
		return nil, err
	}
	return &PeersReport{Body: out.body.String(), Headlines: out.headlines, Rows: rows}, nil
}
