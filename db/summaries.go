package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// SummaryStore is the PostgreSQL summary.Store over the
// strata_summaries table. It also implements store.FoldLocker (the
// same leases as MessageStore.TryLockFold). It is safe for concurrent use,
// within one process and across processes sharing the database.
//
// It works beside any memory.MessageStore. For sessions kept by the
// MessageStore of the same database, Save refuses a summary whose session
// was deleted or re-created since it was made, whichever replica did it;
// for sessions that store does not know (another MessageStore keeps
// them), it saves unconditionally.
type SummaryStore struct {
	d   *sqlx.DB
	opt options
}

var (
	_ summary.Store    = (*SummaryStore)(nil)
	_ store.FoldLocker = (*SummaryStore)(nil)
)

// NewSummaryStore returns a summary store over d, whose schema must have
// been migrated (Migrate). The store never closes d.
func NewSummaryStore(d *sqlx.DB, opts ...Option) *SummaryStore {
	return &SummaryStore{d: d, opt: buildOptions(opts)}
}

// getSummarySQL reads one summary.
const getSummarySQL = `
SELECT session_id, epoch, narrative, facts_json, up_to_seq, version, created_at, updated_at
  FROM strata_summaries
 WHERE session_id = $1`

type summaryRow struct {
	SessionID string    `db:"session_id"`
	Epoch     int64     `db:"epoch"`
	Narrative string    `db:"narrative"`
	FactsJSON []byte    `db:"facts_json"`
	UpToSeq   int64     `db:"up_to_seq"`
	Version   int64     `db:"version"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

// Get implements summary.Store: nil, nil when the session has no summary.
// Facts that cannot be decoded are dropped with a logged warning (all of
// them when facts_json is not an array); the rest of the summary is
// returned as stored.
func (s *SummaryStore) Get(ctx context.Context, sessionID string) (*summary.Summary, error) {
	if !text.Storable(sessionID) {
		return nil, nil
	}
	var r summaryRow
	err := s.d.GetContext(ctx, &r, getSummarySQL, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("db: get summary of session %q: %w", sessionID, classify(ctx, err))
	}
	l, ferr := decodeLedger(r.FactsJSON)
	if ferr != nil {
		s.opt.logger.WarnContext(ctx, "db: facts of a stored summary could not be decoded; dropping them",
			"session_id", sessionID, "kept", len(l.facts), "error", ferr)
	}
	sm := &summary.Summary{
		SessionID: r.SessionID,
		Narrative: r.Narrative,
		UpToSeq:   r.UpToSeq,
		Epoch:     r.Epoch,
		Version:   r.Version,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
	}
	l.fill(sm)
	return sm, nil
}

// saveSummarySQL is the guarded upsert of a summary ($1 session, $2 epoch,
// $3 narrative, $4 facts, $5 cursor), in one call of the function
// strata_save_summary (migration 15), whose statements are these:
//
//   - It reads the session's row in strata_sessions, if the message store
//     of this database has one, and takes FOR KEY SHARE on it. That lock
//     conflicts with the FOR UPDATE a Delete takes first and with the
//     revival of a tombstone, so it waits for either to commit and then
//     reads the row as they left it (PostgreSQL re-reads a row it had to
//     wait for), not as the statement's snapshot saw it.
//   - gone is true when that row is a tombstone or carries another epoch:
//     the session was deleted, or deleted and re-created, after the summary
//     was made. Then nothing is written. No row at all means a session
//     kept by another message store: the summary is saved.
//   - The upsert replaces a summary of another epoch (it belonged to a
//     deleted predecessor) and, within the epoch, only one whose cursor is
//     not above $5, so a save never lowers the cursor. Within an epoch
//     created_at is kept and version counts the saves; a new epoch starts
//     both afresh.
//
// saved says whether a row was written; gone = false and saved = false
// means a newer summary of the same epoch is stored. On Citus the call
// runs on the worker holding the session (db.Distribute).
const saveSummarySQL = `SELECT gone, saved FROM strata_save_summary($1, $2, $3, $4::jsonb, $5, NULL)`

// saveReleaseSQL is saveSummarySQL for the holder $6 of the session's fold
// lease, which it releases in the same call (one commit instead of two):
//
//   - The lease row is locked first if it is still $6's (FOR UPDATE: a
//     take-over in progress is waited for and then seen). held is false
//     when another holder took the lease over after it expired: then
//     nothing is saved, since that holder folds the session now, and its
//     lease is left alone.
//   - When held, the summary is saved exactly as saveSummarySQL saves it,
//     and the lease is deleted, whether the save wrote or was refused
//     (gone, or a newer summary stored): the fold is over either way.
const saveReleaseSQL = `SELECT held, gone, saved FROM strata_save_summary($1, $2, $3, $4::jsonb, $5, $6)`

// Save implements summary.Store with one guarded statement
// (saveSummarySQL). It returns an error wrapping summary.ErrSessionGone,
// writing nothing, when this database's message store knows the session
// and it was deleted or carries another epoch than sm.Epoch; one wrapping
// summary.ErrStale when a summary of the same epoch with a higher cursor
// is stored. A summary of another epoch is replaced. The timestamps and
// Version of sm are ignored: the database sets them. Text that PostgreSQL
// cannot store (NUL bytes, invalid UTF-8) is cleaned. A journal edit ctx
// carries (store.WithJournalEdit) is applied in the save's transaction
// when the save writes.
func (s *SummaryStore) Save(ctx context.Context, sm summary.Summary) error {
	if err := checkSummary(sm); err != nil {
		return err
	}
	facts, err := encodeLedger(sm)
	if err != nil {
		return fmt.Errorf("db: save summary of session %q: %w", sm.SessionID, err)
	}
	_, gone, saved, err := saveJournaled(ctx, s.d, nil, nil, sm, facts, nil)
	return saveResult(ctx, sm, gone, saved, err)
}

// checkSummary refuses a summary that Save cannot store.
func checkSummary(sm summary.Summary) error {
	if sm.SessionID == "" {
		return fmt.Errorf("db: save summary: %w", summary.ErrNoSessionID)
	}
	if !text.Storable(sm.SessionID) {
		return fmt.Errorf("db: save summary: session id %s", invalidID)
	}
	if sm.UpToSeq < 0 {
		return fmt.Errorf("db: save summary of session %q: negative cursor %d", sm.SessionID, sm.UpToSeq)
	}
	return nil
}

// saveResult is Save's error for the outcome of saveSummarySQL.
func saveResult(ctx context.Context, sm summary.Summary, gone, saved bool, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("db: save summary of session %q: %w", sm.SessionID, classify(ctx, err))
	case gone:
		return fmt.Errorf("db: save summary of session %q (epoch %d): %w", sm.SessionID, sm.Epoch, summary.ErrSessionGone)
	case !saved:
		return fmt.Errorf("db: save summary of session %q through seq %d: %w", sm.SessionID, sm.UpToSeq, summary.ErrStale)
	}
	return nil
}

// deleteSummarySQL deletes a session's summary and raises the session's
// summary_writes (see cachedTail) in one statement: the session row's
// update runs first, so a delete locks the session row, then the summary
// row, in the order a save does. A session without a row (a summary saved
// for an id no message store knows) has no held tail to invalidate.
const deleteSummarySQL = `
WITH c AS (DELETE FROM strata_summaries WHERE session_id = $1)
UPDATE strata_sessions SET summary_writes = summary_writes + 1 WHERE session_id = $1`

// Delete implements summary.Store. Deleting an absent summary is not an
// error.
func (s *SummaryStore) Delete(ctx context.Context, sessionID string) error {
	if !text.Storable(sessionID) {
		return nil
	}
	if _, err := s.d.ExecContext(ctx, deleteSummarySQL, sessionID); err != nil {
		return fmt.Errorf("db: delete summary of session %q: %w", sessionID, classify(ctx, err))
	}
	return nil
}

// TryLockFold implements store.FoldLocker (the lease of a store composed
// with this summary store, see store.Compose); see MessageStore.TryLockFold.
func (s *SummaryStore) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), ok bool, err error) {
	return tryLockFold(ctx, s.d, s.opt.leaseSlice, sessionID, ttl)
}

// factJSON is one element of facts_json: arc-reactor's shape
// {"key","value","category","extractedAt"} plus the ledger's provenance,
// pin, superseded value and whether the user stated it, each omitted when zero so that rows written
// before them still decode.
type factJSON struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Category    string `json:"category"`
	ExtractedAt string `json:"extractedAt,omitempty"`
	FirstSeq    int64  `json:"firstSeq,omitempty"`
	LastSeq     int64  `json:"lastSeq,omitempty"`
	Mentions    int    `json:"mentions,omitempty"`
	Pinned      bool   `json:"pinned,omitempty"`
	Previous    string `json:"previousValue,omitempty"`
	Stated      bool   `json:"stated,omitempty"`
	// Forgotten marks an element that is no fact but a value erased by
	// ForgetFact (see encodeLedger); it has no key, so decoders that
	// predate it drop it.
	Forgotten *summary.Forgotten `json:"forgotten,omitempty"`
	// Sources is the fact's exact provenance (summary.Fact.Sources).
	Sources []int64 `json:"sources,omitempty"`
	// Sentences and ForgetKey mark the elements holding the narrative's
	// provenance and the key of the forgotten digests (see encodeLedger).
	Sentences []summary.SentenceSource `json:"sentences,omitempty"`
	ForgetKey string                   `json:"forgetKey,omitempty"`
}

func encodeFacts(facts []summary.Fact) (string, error) {
	out := make([]factJSON, len(facts))
	for i, f := range facts {
		out[i] = factJSONOf(f)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode facts: %w", err)
	}
	return string(raw), nil
}

// factJSONOf is how facts_json stores f.
func factJSONOf(f summary.Fact) factJSON {
	fj := factJSON{Key: text.Clean(f.Key), Value: text.Clean(f.Value), Category: string(f.Category),
		FirstSeq: f.FirstSeq, LastSeq: f.LastSeq, Mentions: f.Mentions, Pinned: f.Pinned, Previous: text.Clean(f.Previous), Stated: f.Stated, Sources: f.Sources}
	if f.Category == "" || !f.Category.Valid() {
		fj.Category = string(summary.ParseCategory(string(f.Category)))
	}
	if !f.ExtractedAt.IsZero() {
		fj.ExtractedAt = f.ExtractedAt.UTC().Format(time.RFC3339Nano)
	}
	return fj
}

// decodeFacts parses facts_json leniently: unknown fields are ignored, a
// missing or unknown category becomes General, a missing or unparsable
// extractedAt is zero. An element that is not a fact object with a
// non-empty string key and a string value is dropped; a value that is not an array drops them all.
// The error describes what was dropped.
func decodeFacts(raw []byte) ([]summary.Fact, error) {
	facts, _, err := decodeElems(raw)
	return facts, err
}

// decodeElems is decodeFacts that also returns the elements that are no
// facts (see decodeLedger), decoding every element once; extras is nil
// when an element could not be decoded at all, as when the whole array
// is decoded in one call.
func decodeElems(raw []byte) (facts []summary.Fact, extras []factJSON, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, nil, fmt.Errorf("facts_json is not a JSON array: %w", err)
	}
	var errs []error
	broken := false
	for i, e := range elems {
		var fj factJSON
		if err := json.Unmarshal(e, &fj); err != nil {
			errs = append(errs, fmt.Errorf("fact %d: %w", i, err))
			broken = true
			continue
		}
		if fj.Forgotten != nil || fj.Sentences != nil || fj.ForgetKey != "" {
			extras = append(extras, fj) // see decodeLedger
			continue
		}
		if fj.Key == "" {
			errs = append(errs, fmt.Errorf("fact %d: no key", i))
			continue
		}
		facts = append(facts, fj.fact())
	}
	if broken {
		extras = nil
	}
	return facts, extras, errors.Join(errs...)
}

// fact is the fact fj encodes.
func (fj factJSON) fact() summary.Fact {
	f := summary.Fact{Key: fj.Key, Value: fj.Value, Category: summary.ParseCategory(fj.Category),
		FirstSeq: fj.FirstSeq, LastSeq: fj.LastSeq, Mentions: fj.Mentions, Pinned: fj.Pinned, Previous: fj.Previous, Stated: fj.Stated, Sources: fj.Sources}
	if fj.ExtractedAt != "" {
		if t, err := time.Parse(time.RFC3339Nano, fj.ExtractedAt); err == nil {
			f.ExtractedAt = t
		}
	}
	return f
}
