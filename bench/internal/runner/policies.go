package runner

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// The memory configurations compared throughout the report.
func takeLastConfig() memory.Config { return memory.DefaultConfig() }

func parityConfig() memory.Config {
	c := memory.DefaultConfig()
	c.Enabled = true
	return c
}

func chunkedConfig() memory.Config {
	c := parityConfig()
	c.Policy = memory.PolicyChunked
	return c
}

// newManager builds a manager with the bench's quiet logger; svc nil means
// no summaries.
func (r *runner) newManager(store memory.MessageStore, sums summary.Store, svc summary.Service, cfg memory.Config, opts ...memory.Option) (*memory.Manager, error) {
	all := []memory.Option{memory.WithLogger(r.quiet)}
	if svc != nil {
		all = append(all, memory.WithSummaries(sums, svc))
	}
	return memory.NewManager(store, cfg, append(all, opts...)...)
}

// policy is one way of remembering a conversation, replayed turn by turn.
type policy interface {
	// view is what the model sees of the history before the current user
	// message.
	view(ctx context.Context) ([]llms.ChatMessage, error)
	// save records a finished turn.
	save(ctx context.Context, t data.Turn) error
	close()
}

// fullHistory keeps and shows every message.
type fullHistory struct{ msgs []llms.ChatMessage }

func (f *fullHistory) view(context.Context) ([]llms.ChatMessage, error) { return f.msgs, nil }
func (f *fullHistory) save(_ context.Context, t data.Turn) error {
	f.msgs = append(f.msgs, t.Messages()...)
	return nil
}
func (f *fullHistory) close() {}

// tokenBuffer is langchaingo's ConversationTokenBuffer used the way
// langchaingo's chains and agents use a memory: SaveContext with the user
// input and the final answer (agents never pass tool calls or tool results
// to memory).
type tokenBuffer struct {
	tb *lcmemory.ConversationTokenBuffer
}

func newTokenBuffer(limit int) *tokenBuffer {
	return &tokenBuffer{tb: lcmemory.NewConversationTokenBuffer(nil, limit)}
}

func (b *tokenBuffer) view(ctx context.Context) ([]llms.ChatMessage, error) {
	return b.tb.ChatHistory.Messages(ctx)
}

func (b *tokenBuffer) save(ctx context.Context, t data.Turn) error {
	return b.tb.SaveContext(ctx, map[string]any{"input": t.User}, map[string]any{"output": t.AssistantText()})
}
func (b *tokenBuffer) close() {}

// strataPolicy is a Strata manager over one session, flushed after every
// save so that folds are deterministic.
type strataPolicy struct {
	m       *memory.Manager
	session string
}

func (s *strataPolicy) view(ctx context.Context) ([]llms.ChatMessage, error) {
	return s.m.LoadHistory(ctx, s.session, benchUser)
}

func (s *strataPolicy) save(ctx context.Context, t data.Turn) error {
	if err := s.m.SaveMessages(ctx, s.session, benchUser, t.Messages()...); err != nil {
		return err
	}
	return s.m.Flush(ctx)
}

func (s *strataPolicy) close() { _ = s.m.Close() }

// newStrata builds an in-memory Strata policy.
func (r *runner) newStrata(cfg memory.Config, svc summary.Service, session string) (*strataPolicy, error) {
	m, err := r.newManager(memory.NewInMemoryStore(), summary.NewInMemoryStore(0), svc, cfg)
	if err != nil {
		return nil, err
	}
	return &strataPolicy{m: m, session: session}, nil
}

// replay feeds conv to every policy turn by turn and calls measure with
// each policy's index and the context the model sees at each user turn
// (its view plus the current user message).
func replay(ctx context.Context, conv data.Conversation, pols []policy, measure func(turn, pol int, msgs []llms.ChatMessage)) error {
	for i, t := range conv.Turns {
		cur := llms.HumanChatMessage{Content: t.User}
		for j, p := range pols {
			v, err := p.view(ctx)
			if err != nil {
				return fmt.Errorf("%s turn %d: load: %w", conv.ID, i, err)
			}
			msgs := make([]llms.ChatMessage, 0, len(v)+1)
			msgs = append(append(msgs, v...), cur)
			measure(i, j, msgs)
		}
		for _, p := range pols {
			if err := p.save(ctx, t); err != nil {
				return fmt.Errorf("%s turn %d: save: %w", conv.ID, i, err)
			}
		}
	}
	return nil
}
