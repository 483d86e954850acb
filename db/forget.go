package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// encodeLedger is encodeFacts for a summary's facts followed by what the
// summary keeps beside them, each as one more element of facts_json
// without a key, so that a decoder that predates it drops it rather than
// showing it as a fact, and decodeLedger reads it back: each forgotten
// value {"forgotten": {...}}, the narrative's provenance {"sentences":
// [...]} and the key of the forgotten digests {"forgetKey": "hex"}.
func encodeLedger(sm summary.Summary) (string, error) {
	raw, err := encodeFacts(sm.Facts)
	if err != nil {
		return raw, err
	}
	extra := ledgerExtras(sm)
	if len(extra) == 0 {
		return raw, nil
	}
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(raw, "]"))
	for i, x := range extra {
		el, err := json.Marshal(x)
		if err != nil {
			return "", fmt.Errorf("encode summary provenance: %w", err)
		}
		if len(sm.Facts) > 0 || i > 0 {
			b.WriteByte(',')
		}
		b.Write(el)
	}
	b.WriteByte(']')
	return b.String(), nil
}

// ledgerOf is decodeLedger of encodeLedger(sm), without the JSON of the
// facts: what a load reads back of a summary just saved.
func ledgerOf(sm summary.Summary) (ledger, error) {
	var l ledger
	for _, f := range sm.Facts {
		fj := factJSONOf(f)
		if fj.Key == "" {
			continue // decodeFacts drops it
		}
		if len(fj.Sources) == 0 {
			fj.Sources = nil // omitted in JSON
		} else {
			fj.Sources = slices.Clone(fj.Sources)
		}
		l.facts = append(l.facts, fj.fact())
	}
	// What is stored beside the facts is small: read back through JSON.
	extra := ledgerExtras(sm)
	if len(extra) == 0 {
		return l, nil
	}
	raw, err := json.Marshal(extra)
	if err != nil {
		return ledger{}, err
	}
	back, err := decodeLedger(raw)
	if err != nil {
		return ledger{}, err
	}
	back.facts = l.facts
	return back, nil
}

// ledger is what facts_json holds: the facts and what encodeLedger stored
// beside them.
type ledger struct {
	facts     []summary.Fact
	forgotten []summary.Forgotten
	sentences []summary.SentenceSource
	forgetKey []byte
}

// fill sets sm's facts and what the ledger keeps beside them, copied.
func (l ledger) fill(sm *summary.Summary) {
	sm.Facts = slices.Clone(l.facts)
	for i := range sm.Facts {
		sm.Facts[i].Sources = slices.Clone(sm.Facts[i].Sources)
	}
	sm.Forgotten = slices.Clone(l.forgotten)
	sm.SentenceSources = slices.Clone(l.sentences)
	for i := range sm.SentenceSources {
		sm.SentenceSources[i].Seqs = slices.Clone(sm.SentenceSources[i].Seqs)
	}
	sm.ForgetKey = slices.Clone(l.forgetKey)
}

// decodeLedger is decodeFacts that also returns what encodeLedger stored
// beside the facts.
func decodeLedger(raw []byte) (ledger, error) {
	facts, extras, err := decodeElems(raw)
	l := ledger{facts: facts}
	for _, e := range extras {
		switch {
		case e.Key != "":
		case e.Forgotten != nil:
			l.forgotten = append(l.forgotten, *e.Forgotten)
		case e.Sentences != nil:
			l.sentences = e.Sentences
		case e.ForgetKey != "":
			if k, herr := hex.DecodeString(e.ForgetKey); herr == nil {
				l.forgetKey = k
			}
		}
	}
	return l, err
}

// forgetLockSQL locks a live session's row for an erasure and reads its
// owner and epoch.
const forgetLockSQL = `
SELECT user_id, epoch FROM strata_sessions WHERE session_id = $1 AND deleted_at IS NULL FOR UPDATE`

// forgetReadSQL reads the messages to erase.
const forgetReadSQL = `
SELECT ` + messageColumns + ` FROM strata_messages WHERE session_id = $1 AND seq = ANY($2::bigint[]) ORDER BY seq`

// forgetNextSQL reads the $3 messages after seq $2: where the results
// answering an erased tool call are.
const forgetNextSQL = `
SELECT ` + messageColumns + ` FROM strata_messages WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`

// forgetSummarySQL reads the session's summary, locked for its rewrite.
const forgetSummarySQL = `
SELECT session_id, epoch, narrative, facts_json, up_to_seq, version, created_at, updated_at
  FROM strata_summaries WHERE session_id = $1 FOR UPDATE`

// forgetRewriteSQL rewrites the summary of epoch $2, its cursor kept.
const forgetRewriteSQL = `
UPDATE strata_summaries SET narrative = $3, facts_json = $4::jsonb, version = version + 1, updated_at = now()
 WHERE session_id = $1 AND epoch = $2`

// forgetDeleteSQL erases the messages and updates the session's counters
// (erasures too: catalogue writes built before it are refused, see
// CatalogIndex.Upsert) and listing preview (the first user message left).
const forgetDeleteSQL = `
WITH del AS (
    DELETE FROM strata_messages WHERE session_id = $1 AND seq = ANY($2::bigint[]) RETURNING seq
)
UPDATE strata_sessions
   SET message_count = message_count - (SELECT count(*) FROM del),
       erasures = erasures + 1,
       first_user_message = (SELECT left(m.content, 500) FROM strata_messages m
                              WHERE m.session_id = $1 AND m.role = 'user'
                                AND NOT m.seq = ANY($2::bigint[])
                              ORDER BY m.seq LIMIT 1)
 WHERE session_id = $1`

// forgetIndexSQL resets the session's catalogue document, which may carry
// erased content: it goes, or, with a pinned title, keeps only the title
// and yields to the next document written.
const forgetIndexSQL = `
WITH gone AS (
    DELETE FROM strata_session_index WHERE session_id = $1 AND NOT pinned
)
UPDATE strata_session_index
   SET fingerprint = '', source = 'turns', source_seq = 0, text = '', model = '', dims = 0, embedding = NULL, updated_at = now()
 WHERE session_id = $1 AND pinned`

// Forget implements store.Forgetter in one transaction, under the
// session's row lock: the ownership check, the check that every seq is
// one of the session's messages, the tool results answering an erased call
// added to the erasure (store.ToolResultsOf), the rewrite of the summary clean returns
// (when clean is not nil; it is given the stored summary of any epoch, or
// nil), the deletion of the messages with the session's counters and
// listing preview, the reset of its catalogue document
// (strata_session_index) and the journal edit ctx carries
// (store.WithJournalEdit). All of it commits or none does.
func (s *MessageStore) Forget(ctx context.Context, sessionID, userID string, seqs []int64,
	clean func(sum *summary.Summary, epoch int64, erased []store.Message) *summary.Summary) error {
	if !text.Storable(sessionID) {
		return fmt.Errorf("db: forget in session %q: %w", sessionID, store.ErrNotFound)
	}
	fail := func(what string, err error) error {
		return fmt.Errorf("db: forget in session %q: %s: %w", sessionID, what, classify(ctx, err))
	}
	tx, err := s.d.BeginTxx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	var owner sql.NullString
	var epoch int64
	err = tx.QueryRowxContext(ctx, forgetLockSQL, sessionID).Scan(&owner, &epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("db: forget in session %q: %w", sessionID, store.ErrNotFound)
	case err != nil:
		return fail("lock", err)
	case owner.String != userID:
		return fmt.Errorf("db: forget in session %q as %q: %w", sessionID, userID, store.ErrNotOwner)
	}
	var rows []messageRow
	if err := tx.SelectContext(ctx, &rows, forgetReadSQL, sessionID, pq.Array(seqs)); err != nil {
		return fail("read", err)
	}
	erased, err := messagesOf(rows)
	if err != nil {
		return fmt.Errorf("db: forget in session %q: %w", sessionID, err)
	}
	for _, q := range seqs {
		if !slices.ContainsFunc(erased, func(m store.Message) bool { return m.Seq == q }) {
			return fmt.Errorf("db: forget in session %q: seq %d: %w", sessionID, q, store.ErrUnknownMessage)
		}
	}
	// The results answering an erased call go with it, read under the
	// same row lock (appends take it too).
	seqs = slices.Clone(seqs)
	for _, call := range slices.Clone(erased) {
		if len(call.ToolCalls) == 0 {
			continue
		}
		var next []messageRow
		if err := tx.SelectContext(ctx, &next, forgetNextSQL, sessionID, call.Seq, len(call.ToolCalls)); err != nil {
			return fail("read tool results", err)
		}
		after, err := messagesOf(next)
		if err != nil {
			return fmt.Errorf("db: forget in session %q: %w", sessionID, err)
		}
		for _, r := range store.ToolResultsOf(call, after) {
			if !slices.Contains(seqs, r.Seq) {
				seqs = append(seqs, r.Seq)
				erased = append(erased, r)
			}
		}
	}
	slices.Sort(seqs)
	slices.SortFunc(erased, func(a, b store.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	if clean != nil {
		var r summaryRow
		var cur *summary.Summary
		err := tx.GetContext(ctx, &r, forgetSummarySQL, sessionID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fail("read summary", err)
		default:
			l, _ := decodeLedger(r.FactsJSON)
			cur = &summary.Summary{SessionID: sessionID, Narrative: r.Narrative,
				UpToSeq: r.UpToSeq, Epoch: r.Epoch, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
			l.fill(cur)
		}
		if next := clean(cur, epoch, erased); next != nil && cur != nil {
			facts, err := encodeLedger(*next)
			if err != nil {
				return fmt.Errorf("db: forget in session %q: %w", sessionID, err)
			}
			if _, err := tx.ExecContext(ctx, forgetRewriteSQL, sessionID, cur.Epoch, text.Clean(next.Narrative), facts); err != nil {
				return fail("rewrite summary", err)
			}
		}
	}
	if edit := store.JournalEditOf(ctx); edit != nil {
		if err := editJournalTx(ctx, tx, sessionID, epoch, edit); err != nil {
			return fmt.Errorf("db: forget in session %q: journal: %w", sessionID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, forgetDeleteSQL, sessionID, pq.Array(seqs)); err != nil {
		return fail("delete", err)
	}
	if _, err := tx.ExecContext(ctx, forgetIndexSQL, sessionID); err != nil {
		return fail("catalogue", err)
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return nil
}

// messagesOf decodes rows into messages.
func messagesOf(rows []messageRow) ([]store.Message, error) {
	out := make([]store.Message, 0, len(rows))
	for _, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ledgerExtras are the entries stored after sm's facts in facts_json:
// its forgotten entries, its sentences' sources and its forget key, in
// that order (none when sm has none of them).
func ledgerExtras(sm summary.Summary) []factJSON {
	var extra []factJSON
	for _, f := range sm.Forgotten {
		extra = append(extra, factJSON{Forgotten: &f})
	}
	if len(sm.SentenceSources) > 0 {
		extra = append(extra, factJSON{Sentences: sm.SentenceSources})
	}
	if len(sm.ForgetKey) > 0 {
		extra = append(extra, factJSON{ForgetKey: hex.EncodeToString(sm.ForgetKey)})
	}
	return extra
}
