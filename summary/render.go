package summary

import (
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Prefixes of the two system messages a summary is shown as. They are the
// reference's, so prompts written for it keep working.
const (
	FactsHeader     = "Conversation Facts:"
	NarrativeHeader = "Conversation Summary:"
)

// FactsBlock renders facts as the reference does: "Conversation Facts:" and
// one "- key: value" line per fact, in ledger order. No facts: "".
func FactsBlock(facts []Fact) string {
	if len(facts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(FactsHeader)
	for _, f := range facts {
		b.WriteString("\n- ")
		b.WriteString(f.Key)
		b.WriteString(": ")
		b.WriteString(f.Value)
	}
	return b.String()
}

// NarrativeBlock renders the narrative block, "" when it is blank.
func NarrativeBlock(narrative string) string {
	if isBlank(narrative) {
		return ""
	}
	return NarrativeHeader + "\n" + narrative
}

// Blocks is the one rendering of a summary for a model: a facts system
// message (when there are facts), then a narrative system message (when the
// narrative is not blank). A nil or empty summary renders as nothing.
func (s *Summary) Blocks() []llms.ChatMessage {
	if s == nil {
		return nil
	}
	var out []llms.ChatMessage
	if f := FactsBlock(s.Facts); f != "" {
		out = append(out, llms.SystemChatMessage{Content: f})
	}
	if n := NarrativeBlock(s.Narrative); n != "" {
		out = append(out, llms.SystemChatMessage{Content: n})
	}
	return out
}

// Apply is how a summary evolves: it returns the summary that follows
// existing (nil for the first fold) once res, a summarizer's answer for the
// messages through upTo, is folded in. Facts are merged by key into the
// ledger (facts res leaves out are kept, see MergeFacts); a blank narrative
// keeps the previous one. sessionID and epoch name the session incarnation
// the summary is for; the creation time and version carry over.
func Apply(existing *Summary, sessionID string, epoch int64, res Result, upTo int64, opt MergeOptions) Summary {
	next := Summary{SessionID: sessionID, Epoch: epoch, Narrative: res.Narrative, UpToSeq: upTo}
	var old []Fact
	if existing != nil {
		old = existing.Facts
		next.CreatedAt, next.Version = existing.CreatedAt, existing.Version
		if isBlank(next.Narrative) {
			next.Narrative = existing.Narrative
		}
	}
	next.Facts = MergeFacts(old, res.Facts, opt)
	return next
}
