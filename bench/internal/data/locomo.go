package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/datasets"
)

// LoCoMoFile is the LoCoMo file's path below the data directory.
const LoCoMoFile = datasets.LoCoMoFile

// LoCoMo is the LoCoMo set as replayable conversations.
type LoCoMo struct {
	// Conversations are the 10 conversations. The speaker of a
	// conversation's first message plays the user, the other one the
	// assistant; consecutive messages of one speaker are merged (joined
	// with a newline), so turns alternate.
	Conversations []Conversation
	// Texts are the raw turn texts, unmerged, in file order.
	Texts []string
	// Merged counts the messages merged into their predecessor.
	Merged int
	// QA holds each conversation's question–answer items, at the same index
	// as Conversations.
	QA [][]QAItem
}

// QAItem is one LoCoMo question with its answer and the dialogue turns
// that are its evidence.
type QAItem struct {
	Question string
	// Answer is the gold answer as text (numeric answers are formatted);
	// "" for the adversarial items (category 5), which have none.
	Answer   string
	Category int
	// Evidence are the dialogue ids ("D1:3") the item cites.
	Evidence []string
	// EvidenceMsgs are the positions, among the conversation's stored
	// messages (Turn.Messages() of every turn in order, 0-based), of the
	// messages holding Evidence, in the same order; -1 when an id is
	// malformed or names no turn.
	EvidenceMsgs []int
}

// LoadLoCoMo reads dir/locomo/locomo10.json (internal/datasets).
func LoadLoCoMo(dir string) (*LoCoMo, error) {
	path := filepath.Join(dir, LoCoMoFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: read LoCoMo: %w", err)
	}
	samples, err := datasets.ParseLoCoMo(raw)
	if err != nil {
		return nil, fmt.Errorf("data: decode %s: %w", path, err)
	}
	out := &LoCoMo{}
	for _, s := range samples {
		c := Conversation{ID: s.ID}
		var userSpeaker, lastSpeaker string
		msgOf := map[string]int{} // dia_id -> stored message position
		stored := 0
		sessions, err := s.Sessions()
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w", s.ID, err)
		}
		for _, sess := range sessions {
			for _, t := range sess.Turns {
				text := strings.TrimSpace(t.Text)
				if text == "" {
					continue
				}
				out.Texts = append(out.Texts, text)
				if userSpeaker == "" {
					userSpeaker = t.Speaker
				}
				switch {
				case t.Speaker == lastSpeaker && t.Speaker == userSpeaker:
					last := &c.Turns[len(c.Turns)-1]
					last.User += "\n" + text
					out.Merged++
				case t.Speaker == lastSpeaker:
					last := &c.Turns[len(c.Turns)-1]
					ai := last.Replies[len(last.Replies)-1].(llms.AIChatMessage)
					ai.Content += "\n" + text
					last.Replies[len(last.Replies)-1] = ai
					out.Merged++
				case t.Speaker == userSpeaker:
					c.Turns = append(c.Turns, Turn{User: text})
					stored++
				default:
					last := &c.Turns[len(c.Turns)-1]
					last.Replies = append(last.Replies, llms.AIChatMessage{Content: text})
					stored++
				}
				if t.DiaID != "" {
					msgOf[strings.TrimSpace(t.DiaID)] = stored - 1
				}
				lastSpeaker = t.Speaker
			}
		}
		if len(c.Turns) == 0 {
			return nil, fmt.Errorf("data: %s has no turns", s.ID)
		}
		out.Conversations = append(out.Conversations, c)
		qa, err := s.QA()
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w", s.ID, err)
		}
		items := make([]QAItem, 0, len(qa))
		for _, q := range qa {
			it := QAItem{Question: q.Question, Answer: answerText(q.Answer), Category: q.Category}
			for _, e := range q.Evidence {
				for _, id := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
					pos, ok := msgOf[id]
					if !ok {
						pos = -1
					}
					it.Evidence = append(it.Evidence, id)
					it.EvidenceMsgs = append(it.EvidenceMsgs, pos)
				}
			}
			items = append(items, it)
		}
		out.QA = append(out.QA, items)
	}
	if len(out.Conversations) == 0 {
		return nil, fmt.Errorf("data: %s holds no conversation", path)
	}
	return out, nil
}

// answerText renders a QA answer (a JSON string or number) as text; ""
// when absent or of another type.
func answerText(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// Pairs returns every (user, assistant) turn of the conversations in
// order, conversation after conversation, skipping turns without an answer.
func (l *LoCoMo) Pairs() [][2]string {
	var out [][2]string
	for _, c := range l.Conversations {
		for _, t := range c.Turns {
			if a := t.AssistantText(); a != "" {
				out = append(out, [2]string{t.User, a})
			}
		}
	}
	return out
}
