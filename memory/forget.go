package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Forget erases the session's messages with sequence numbers seqs and
// everything derived from them, by provenance (summary.Erase): the
// messages themselves; the facts and narrative sentences only they state
// (a fact or sentence a surviving message still states stays, its
// provenance narrowed); and, through the fold observers (the catalogue),
// the documents, titles and search entries built from them. A summary
// whose content cites no message (an LLM's) and that covers an erased
// message is emptied — its cursor and Forgotten list kept — so it is never
// shown again as it was, whatever the summarizer wrote: the view degrades
// as when no summary exists until the next fold rebuilds it from the
// surviving messages (one summarizer call per MaxFoldInputTokens of them).
// The cursor stays, so later folds never bring the content back — parity
// re-summarizes from the originals, which are gone, chunked continues from
// the cleaned summary.
//
// The stored summary is cleaned whether or not this manager has summaries
// on, when the message store keeps the summaries (PostgreSQL; the
// in-memory store's Summaries): a process running only erasures
// (strata forget) leaves nothing behind for a replica with summaries on.
//
// Erasing an assistant message with tool calls erases the tool results
// answering them too (store.ToolResultsOf): no provider accepts a result
// without its call, and the session's export would not import. Erasing a
// result alone keeps its call (the view then leaves the incomplete tool
// round out, as the trimmer does for any).
//
// Ownership is checked as everywhere (ErrNotFound, ErrNotOwner). A seq
// that is not one of the session's messages returns an error wrapping
// store.ErrUnknownMessage and changes nothing. The erasure is atomic per
// store: on PostgreSQL the messages, the summary, the session's erasure
// count and the catalogue document change in one transaction (a catalogue
// write built before it is refused afterwards, on any replica); with the
// in-memory store in one critical section; with a summary store apart
// from the message store (store.Compose) the summary is cleaned first and
// the messages erased second, so that a failure in between leaves nothing
// derived behind and a retry completes it, and a message store that
// cannot erase gives an error wrapping errors.ErrUnsupported. No fold of
// the session runs meanwhile (see Import).
func (m *Manager) Forget(ctx context.Context, sessionID, userID string, seqs ...int64) error {
	if len(seqs) == 0 {
		return fmt.Errorf("memory: forget %q: %w: no sequence numbers", sessionID, store.ErrUnknownMessage)
	}
	seqs = slices.Clone(seqs)
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	owner := m.owner(sessionID, userID)
	var cleaned, before *summary.Summary
	var gone []store.Message
	// The journal loses the erased values, and records the erasure, in
	// the erasure's own step (store.WithJournalEdit).
	jctx := store.WithJournalEdit(ctx, func(j *store.Journal) { forgetEdit(time.Now().UTC(), before, cleaned, gone)(j) })
	err := m.eng.exclusive(ctx, sessionID, func() error {
		clean := func(sum *summary.Summary, epoch int64, erased []store.Message) *summary.Summary {
			gone = erased
			if sum == nil || sum.Epoch != epoch {
				return nil
			}
			c := eraseFrom(*sum, erased)
			before, cleaned = sum, &c
			return &c
		}
		// Whether or not summaries are on in this process the store
		// cleans the summary it keeps (a replica with summaries on shows it),
		// and the journal loses the erased values in the same step.
		return m.store.Forget(jctx, sessionID, owner, seqs, clean)
	})
	if err != nil {
		return fmt.Errorf("memory: forget %q: %w", sessionID, err)
	}
	m.erased(ctx, sessionID, owner, cleaned)
	return nil
}

// eraseFrom is sum without what was derived from the erased messages
// (summary.Erase: by provenance; an untraced summary is emptied until the
// next fold rebuilds it).
func eraseFrom(sum summary.Summary, erased []store.Message) summary.Summary {
	seqs := make([]int64, 0, len(erased))
	for _, msg := range erased {
		seqs = append(seqs, msg.Seq)
	}
	return summary.Erase(sum, seqs)
}

// erased tells the fold observers (the catalogue) that the session's
// summary was rewritten by an erasure, on the caller's goroutine.
func (m *Manager) erased(ctx context.Context, sessionID, owner string, sum *summary.Summary) {
	ev := FoldEvent{SessionID: sessionID, UserID: owner, Erased: true}
	if sum != nil {
		ev.Summary = *sum
	}
	for _, fn := range m.obs.folds() {
		m.observeErased(ctx, fn, ev)
	}
}

// observeErased runs one fold observer for an erasure, turning a panic
// into a logged error: an observer never fails the erasure it follows.
func (m *Manager) observeErased(ctx context.Context, fn func(context.Context, FoldEvent), ev FoldEvent) {
	defer func() {
		if r := recover(); r != nil {
			m.log.ErrorContext(ctx, "strata: fold observer panicked after an erasure", "session_id", ev.SessionID, "panic", r)
		}
	}()
	fn(context.WithoutCancel(ctx), ev)
}

// ForgetFact removes the fact with key (compared as summary.NormalizeKey
// does) from the session's summary: its value — and the value it
// superseded — leave the facts and every narrative sentence carrying them,
// and the summary records them (as keyed digests, see summary.Forgotten)
// so that no later fold of messages already stored brings them back,
// whatever the policy, with their white space, case or digit separators
// rewritten (a value the ledger cut is matched by its words before the
// cut). This is matching, not provenance: a paraphrase escapes it, and
// only Forget of the messages guarantees the value is gone. The digests' key is a random per-session secret kept
// with the summary in the summary store and never exported, so an
// import leaves keyed entries out (they could never match there). A message stored after the
// erasure that states the value again sets it again. A session without
// such a fact gives store.ErrNoSuchFact; one whose summary already lists
// summary.DefaultMaxForgotten values gives summary.ErrTooManyForgotten;
// ownership is checked as everywhere. No fold of the session runs
// meanwhile.
func (m *Manager) ForgetFact(ctx context.Context, sessionID, userID, key string) error {
	if m.sums == nil {
		return fmt.Errorf("memory: forget fact %q of %q: %w", key, sessionID, store.ErrNoSuchFact)
	}
	owner := m.owner(sessionID, userID)
	var saved summary.Summary
	var journalErr error
	err := m.eng.exclusive(ctx, sessionID, func() error {
		t, err := m.store.Tail(ctx, sessionID, owner, 1)
		if err != nil {
			return err
		}
		sum, err := m.eng.usableSummary(ctx, sessionID, t.Epoch)
		if err != nil {
			return err
		}
		if sum == nil {
			return store.ErrNoSuchFact
		}
		var newest int64
		if len(t.Messages) > 0 {
			newest = t.Messages[len(t.Messages)-1].Seq
		}
		out, ok, err := summary.ForgetFact(*sum, key, max(newest, sum.UpToSeq))
		switch {
		case err != nil:
			return err
		case !ok:
			return store.ErrNoSuchFact
		}
		rec := store.JournalRecord{At: time.Now().UTC(), Kind: "forget_fact", Outcome: "done",
			Changes: factChanges(sum.Facts, out.Facts, nil, "forgotten")}
		scrub := forgetFactScrub(*sum, out)
		// The journal loses the values first, so that a failure after it
		// leaves nothing erased behind and a retry completes the erasure;
		// the save then carries the scrub and the record in its own step
		// (store.WithJournalEdit), so no fold's record saved in between
		// keeps a value; a save that cannot carry them (store.Compose's,
		// with the summaries apart) is followed by them.
		if err := m.eng.editJournal(ctx, sessionID, t.Epoch, scrub); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		applied := false
		sctx := store.WithJournalEdit(ctx, func(j *store.Journal) { applied = true; scrub(j); j.Add(rec, journalRetention) })
		if err := m.store.SaveSummary(sctx, out); err != nil {
			return fmt.Errorf("save summary: %w", err)
		}
		saved = out
		if !applied {
			journalErr = m.eng.editJournal(ctx, sessionID, t.Epoch, func(j *store.Journal) { scrub(j); j.Add(rec, journalRetention) })
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: forget fact %q of %q: %w", key, sessionID, err)
	}
	m.erased(ctx, sessionID, owner, &saved)
	if journalErr != nil {
		return fmt.Errorf("memory: forget fact %q of %q: erased, but its journal record was not written: %w", key, sessionID, journalErr)
	}
	return nil
}

// suppressForgotten applies a summary's Forgotten list to a fold's result
// next, which folded msgs: values stated again by the user in msgs after
// their erasure may be remembered again; the others stay out.
func suppressForgotten(next summary.Summary, msgs []store.Message) summary.Summary {
	if len(next.Forgotten) == 0 {
		return next
	}
	var texts []string
	var seqs []int64
	for _, msg := range msgs {
		if msg.Role == store.RoleUser {
			texts, seqs = append(texts, msg.Content), append(seqs, msg.Seq)
		}
	}
	next.Forgotten = summary.Restated(next, texts, seqs)
	return summary.SuppressForgotten(next)
}
