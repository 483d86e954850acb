package dbtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// FullLedgerFacts is the number of facts of FullLedgerSummary: the
// summarizer's default cap (summary.DefaultMaxFacts).
const FullLedgerFacts = summary.DefaultMaxFacts

// FullLedgerSummary is the summary of a long conversation whose ledger is
// full: FullLedgerFacts facts with their provenance, and a narrative of
// about summary.DefaultMaxNarrativeTokens tokens (the narrative's cap),
// covering messages up to upToSeq of the session's epoch.
func FullLedgerSummary(session string, epoch, upToSeq int64) summary.Summary {
	cats := []summary.Category{summary.Entity, summary.Decision, summary.Condition, summary.State, summary.Numeric, summary.General}
	facts := make([]summary.Fact, FullLedgerFacts)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range facts {
		facts[i] = summary.Fact{
			Key:         fmt.Sprintf("fact_%03d_order_or_preference", i),
			Value:       fmt.Sprintf("value %d: order #L-%05d shipped to the Lisbon office, refund of $%d.50 agreed", i, 10000+i, 20+i),
			Category:    cats[i%len(cats)],
			ExtractedAt: at.Add(time.Duration(i) * time.Minute),
			FirstSeq:    int64(1 + i), LastSeq: max(upToSeq-int64(i), 1), Mentions: 1 + i%7,
			Pinned: i%25 == 0, Stated: i%3 == 0,
		}
	}
	// About 4 characters per token: a narrative at its cap.
	sentence := "The user and the assistant went through orders, refunds, delivery dates and the office move; decisions were recorded. "
	narrative := strings.TrimSpace(strings.Repeat(sentence, 4*summary.DefaultMaxNarrativeTokens/len(sentence)))
	return summary.Summary{SessionID: session, Epoch: epoch, UpToSeq: upToSeq, Narrative: narrative, Facts: facts}
}

// MessageStore is what SeedFullLedger needs of a message store.
type MessageStore interface {
	Create(ctx context.Context, sessionID, userID string) error
	Append(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error)
	Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error)
}

// SeedFullLedger creates session for user with n alternating user and
// assistant messages, appended through ms in batches of 500, and saves
// through sums a FullLedgerSummary covering all but the newest keep
// messages.
func SeedFullLedger(ctx context.Context, ms MessageStore, sums summary.Store, session, user string, n, keep int) error {
	if err := ms.Create(ctx, session, user); err != nil {
		return err
	}
	const batch = 500
	msgs := make([]store.Message, 0, batch)
	for i := 1; i <= n; i++ {
		m := store.Message{Role: store.RoleUser, Content: fmt.Sprintf("turn %d: where is order #L-%05d and when does the refund arrive?", i/2, i)}
		if i%2 == 0 {
			m = store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("turn %d: order #L-%05d ships on Friday; the refund follows within five days.", i/2, i)}
		}
		msgs = append(msgs, m)
		if len(msgs) == batch || i == n {
			if _, err := ms.Append(ctx, session, user, msgs...); err != nil {
				return err
			}
			msgs = msgs[:0]
		}
	}
	t, err := ms.Tail(ctx, session, user, keep+1)
	if err != nil {
		return err
	}
	if len(t.Messages) != keep+1 {
		return fmt.Errorf("session %s: %d messages, want more than %d", session, len(t.Messages), keep)
	}
	return sums.Save(ctx, FullLedgerSummary(session, t.Epoch, t.Messages[0].Seq))
}
