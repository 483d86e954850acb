package memory

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/strata-go/strata/summary"
)

// The chunked policy (seeds 000/001). What the model sees is the summary
// plus every message the summary does not cover yet — the "no message
// leaves the view unless folded" invariant — and that verbatim tail is kept
// between K = RecentMessageCount and K+B messages by folding the oldest
// messages down to K, in the background, when a trigger fires:
//
//	token    summary + unfolded messages exceed the token threshold
//	overflow more than K+B unfolded messages
//	safety   SafetyTurns user turns since the last fold
//
// with that priority (it only names the fold; one fold per cycle). A load
// that finds the tail over K+B (background folds lagging or failing) folds
// synchronously; when that fails too it shows the whole unfolded tail rather
// than drop anything.

func (m *Manager) chunked() bool { return m.cfg.Policy == PolicyChunked }

// unfolded returns the messages after cursor (all of them, oldest first)
// and the session's message count, reading only the tail when the tail
// reaches back to the cursor.
func (m *Manager) unfolded(ctx context.Context, sessionID string, cursor int64) ([]Message, int, error) {
	t, err := m.store.Tail(ctx, sessionID, m.cfg.RecentMessageCount+m.cfg.BufferMessageCount+alignSlack)
	if err != nil {
		return nil, 0, err
	}
	if len(t.Messages) == t.Total || (len(t.Messages) > 0 && t.Messages[0].Seq <= cursor) {
		i := 0
		for i < len(t.Messages) && t.Messages[i].Seq <= cursor {
			i++
		}
		return t.Messages[i:], t.Total, nil
	}
	msgs, err := m.store.Range(ctx, sessionID, cursor, math.MaxInt64, 0)
	return msgs, t.Total, err
}

func cursorOf(s *summary.Summary) int64 {
	if s == nil {
		return 0
	}
	return s.UpToSeq
}

// foldTrigger names the highest-priority trigger that fires, "" for none.
func (m *Manager) foldTrigger(s *summary.Summary, unfolded []Message) string {
	k, b := m.cfg.RecentMessageCount, m.cfg.BufferMessageCount
	if th := m.tokenThreshold(); th > 0 && m.summaryTokens(s)+m.messageTokens(unfolded) > th {
		return "token"
	}
	if len(unfolded) > k+b {
		return "overflow"
	}
	if n := m.cfg.SafetyTurns; n > 0 {
		turns := 0
		for _, msg := range unfolded {
			if msg.Role == RoleUser {
				turns++
			}
		}
		if turns >= n && len(unfolded) > k {
			return "safety"
		}
	}
	return ""
}

// tokenThreshold is the smaller of the absolute and the fractional token
// triggers that are on, 0 when both are off.
func (m *Manager) tokenThreshold() int {
	th := m.cfg.FoldTokenThreshold
	if f := m.cfg.FoldTokenFraction; f > 0 {
		frac := int(f * float64(m.cfg.ContextWindowTokens))
		if th == 0 || frac < th {
			th = frac
		}
	}
	return th
}

func (m *Manager) backgroundChunked(ctx context.Context, sessionID string) error {
	s, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	unfolded, _, err := m.unfolded(ctx, sessionID, cursorOf(s))
	if err != nil {
		return err
	}
	trigger := m.foldTrigger(s, unfolded)
	start := alignedStart(unfolded, m.cfg.RecentMessageCount)
	if trigger == "" || start == 0 {
		return nil
	}
	m.stats.backgroundFolds.Add(1)
	_, err = m.fold(ctx, sessionID, unfolded[start-1].Seq, false, trigger)
	return err
}

func (m *Manager) loadChunked(ctx context.Context, sessionID string) (History, error) {
	s, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		m.stats.fallbacks.Add(1)
		m.log.WarnContext(ctx, "strata: summary store unavailable, using takeLast", "session_id", sessionID, "error", err)
		return m.loadTakeLast(ctx, sessionID, m.cfg.RecentMessageCount+m.cfg.BufferMessageCount, ModeFallback)
	}
	unfolded, total, err := m.unfolded(ctx, sessionID, cursorOf(s))
	if err != nil {
		m.stats.loadErrors.Add(1)
		return History{Mode: ModeEmpty}, fmt.Errorf("memory: load %q: %w", sessionID, err)
	}
	if total == 0 {
		return History{Mode: ModeEmpty}, nil
	}
	mode := ModeHierarchical
	// Twice at most: a fold grows the summary, which can push a prompt-memory
	// budget over again.
	for range 2 {
		start := m.keepFrom(s, unfolded)
		if start == 0 {
			break
		}
		m.stats.lazyFolds.Add(1)
		folded, err := m.fold(ctx, sessionID, unfolded[start-1].Seq, true, "load")
		if ctx.Err() != nil {
			return History{Mode: ModeEmpty}, ctx.Err()
		}
		if err != nil { // keep every unfolded message: never drop what is not folded
			m.stats.fallbacks.Add(1)
			mode = ModeFallback
			m.log.WarnContext(ctx, "strata: fold on load failed, showing the whole unfolded tail",
				"session_id", sessionID, "unfolded", len(unfolded), "error", err)
			break
		}
		s, unfolded = folded, unfolded[start:]
	}
	if s.IsEmpty() {
		s = nil
	}
	if s == nil && mode == ModeHierarchical {
		mode = ModeAll
	}
	shown := m.fitNarrative(ctx, sessionID, s, unfolded)
	return History{Messages: Assemble(shown, ChatMessages(unfolded)), Mode: mode, Summary: s, Recent: unfolded, Total: total}, nil
}

// keepFrom returns the index of the first unfolded message the view keeps:
// 0 keeps all; a larger index means the messages before it must be folded
// first (overflow beyond K+B, or the prompt-memory budget).
func (m *Manager) keepFrom(s *summary.Summary, unfolded []Message) int {
	start := 0
	if len(unfolded) > m.cfg.RecentMessageCount+m.cfg.BufferMessageCount {
		start = alignedStart(unfolded, m.cfg.RecentMessageCount)
	}
	if budget := m.cfg.PromptMemoryBudget; budget > 0 {
		avail := budget - m.summaryTokens(s)
		fit := 0
		for i := len(unfolded) - 1; i >= 0; i-- {
			avail -= m.messageTokens(unfolded[i : i+1])
			if avail < 0 {
				break
			}
			fit++
		}
		if from := alignedStart(unfolded, max(fit, m.cfg.MinTailMessages)); from > start {
			start = from
			m.log.Debug("strata: prompt-memory budget drops oldest verbatim messages (folding them first)",
				"budget", budget, "dropped", from)
		}
	}
	return start
}

// fitNarrative returns s with its narrative cut (oldest part first) when
// summary + tail still exceed the prompt-memory budget: the last resort of
// seed 000 §5.1 step 5. Facts are never cut. The stored summary is
// unchanged.
func (m *Manager) fitNarrative(ctx context.Context, sessionID string, s *summary.Summary, tail []Message) *summary.Summary {
	budget := m.cfg.PromptMemoryBudget
	if budget == 0 || s == nil {
		return s
	}
	over := m.summaryTokens(s) + m.messageTokens(tail) - budget
	if over <= 0 {
		return s
	}
	r := []rune(s.Narrative)
	keep := len(r)
	for keep > 0 && m.est.Estimate(string(r[len(r)-keep:])) > m.est.Estimate(s.Narrative)-over {
		keep -= max(keep/8, 1)
	}
	cut := *s
	cut.Narrative = ""
	if keep > 0 {
		cut.Narrative = "…" + string(r[len(r)-keep:])
	}
	m.log.InfoContext(ctx, "strata: prompt-memory budget truncated the narrative", "session_id", sessionID,
		"budget", budget, "over_tokens", over, "narrative_runes_before", len(r), "narrative_runes_after", keep)
	return &cut
}

// chunks splits msgs into runs of at most MaxFoldInputTokens (chunked
// policy), each at least one message and never starting with a tool result
// when that can be avoided. Parity folds are one chunk.
func (m *Manager) chunks(msgs []Message) [][]Message {
	limit := m.cfg.MaxFoldInputTokens
	if !m.chunked() || limit <= 0 {
		return [][]Message{msgs}
	}
	var out [][]Message
	start, used := 0, 0
	for i := range msgs {
		c := m.messageTokens(msgs[i : i+1])
		if i > start && used+c > limit && msgs[i].Role != RoleTool {
			out = append(out, msgs[start:i])
			start, used = i, 0
		}
		used += c
	}
	return append(out, msgs[start:])
}

func (m *Manager) messageTokens(msgs []Message) int {
	if len(msgs) == 0 {
		return 0
	}
	return m.cost.Cost(ChatMessages(msgs))
}

// summaryTokens prices the system messages a summary becomes.
func (m *Manager) summaryTokens(s *summary.Summary) int {
	if s == nil {
		return 0
	}
	return m.cost.Cost(Assemble(s, nil))
}

// foldRecord collects what one fold did, for its log record.
type foldRecord struct {
	trigger      string
	messages     int
	calls        int
	tokensBefore int
	inputTokens  int
}

func (r foldRecord) finish(m *Manager, ctx context.Context, sessionID string, began time.Time, s *summary.Summary, err error) {
	attrs := []any{"session_id", sessionID, "trigger", r.trigger, "messages_folded", r.messages,
		"summarizer_calls", r.calls, "tokens_before", r.tokensBefore, "tokens_after", m.summaryTokens(s),
		"input_tokens_reported", r.inputTokens, "duration", m.now().Sub(began)}
	m.observeFold(ctx, r, err)
	if err != nil {
		m.log.WarnContext(ctx, "strata: fold failed", append(attrs, "outcome", "error", "error", err)...)
		return
	}
	m.log.DebugContext(ctx, "strata: fold", append(attrs, "outcome", "ok", "up_to_seq", s.UpToSeq, "facts", len(s.Facts))...)
}
