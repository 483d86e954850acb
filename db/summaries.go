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

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// SummaryStore is the PostgreSQL summary.Store over the
// conversation_summaries table. It also implements memory.FoldLocker (the
// same leases as MessageStore.TryLockFold). It is safe for concurrent use,
// within one process and across processes sharing the database.
type SummaryStore struct {
	d   *sqlx.DB
	opt options
}

var (
	_ summary.Store     = (*SummaryStore)(nil)
	_ memory.FoldLocker = (*SummaryStore)(nil)
)

// NewSummaryStore returns a summary store over d, whose schema must have
// been migrated (Migrate). The store never closes d. It works together
// with the message store of the same database: a summary is saved only
// while its session holds the message at its cursor.
func NewSummaryStore(d *sqlx.DB, opts ...Option) summary.Store {
	return newSummaryStore(d, opts...)
}

func newSummaryStore(d *sqlx.DB, opts ...Option) *SummaryStore {
	return &SummaryStore{d: d, opt: buildOptions(opts)}
}

// getSummarySQL reads one summary.
const getSummarySQL = `
SELECT session_id, narrative, facts_json, up_to_seq, version, title, created_at, updated_at
  FROM conversation_summaries
 WHERE session_id = $1`

type summaryRow struct {
	SessionID string    `db:"session_id"`
	Narrative string    `db:"narrative"`
	FactsJSON []byte    `db:"facts_json"`
	UpToSeq   int64     `db:"up_to_seq"`
	Version   int64     `db:"version"`
	Title     string    `db:"title"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

// Get implements summary.Store: nil, nil when the session has no summary.
// Facts that cannot be decoded are dropped with a logged warning (all of
// them when facts_json is not an array); the rest of the summary is
// returned as stored.
func (s *SummaryStore) Get(ctx context.Context, sessionID string) (*summary.Summary, error) {
	if !validID(sessionID) {
		return nil, nil
	}
	var r summaryRow
	err := s.d.GetContext(ctx, &r, getSummarySQL, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("db: get summary of session %q: %w", sessionID, err)
	}
	facts, ferr := decodeFacts(r.FactsJSON)
	if ferr != nil {
		s.opt.logger.WarnContext(ctx, "db: facts of a stored summary could not be decoded; dropping them",
			"session_id", sessionID, "kept", len(facts), "error", ferr)
	}
	return &summary.Summary{
		SessionID: r.SessionID,
		Narrative: r.Narrative,
		Facts:     facts,
		UpToSeq:   r.UpToSeq,
		Version:   r.Version,
		Title:     r.Title,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
	}, nil
}

// saveSummarySQL upserts a summary in one statement. The INSERT's source
// row exists only while the session is alive and holds the message at the
// cursor $4 (no message has seq 0, so a zero cursor needs only the
// session); FOR KEY SHARE locks the session row against a concurrent
// Delete, which therefore either waits for this save and then removes the
// summary, or commits first and leaves this save without a source row.
// The conflict branch updates only when the new cursor is not below the
// stored one, so a save never regresses. created_at is kept, updated_at
// refreshed, version incremented, and an empty title keeps the stored one.
const saveSummarySQL = `
INSERT INTO conversation_summaries AS cs
       (session_id, narrative, facts_json, up_to_seq, title, version, created_at, updated_at)
SELECT s.session_id, $2::text, $3::jsonb, $4::bigint, $5::text, 1, now(), now()
  FROM strata_sessions s
 WHERE s.session_id = $1
   AND ($4::bigint = 0 OR EXISTS (SELECT 1 FROM strata_messages m WHERE m.session_id = $1 AND m.seq = $4))
   FOR KEY SHARE OF s
ON CONFLICT (session_id) DO UPDATE
   SET narrative  = EXCLUDED.narrative,
       facts_json = EXCLUDED.facts_json,
       up_to_seq  = EXCLUDED.up_to_seq,
       title      = COALESCE(NULLIF(EXCLUDED.title, ''), cs.title),
       version    = cs.version + 1,
       updated_at = now()
 WHERE EXCLUDED.up_to_seq >= cs.up_to_seq`

// Save implements summary.Store as an upsert that never lowers the cursor.
// It writes nothing, and returns nil, when the stored cursor is higher or
// when the session no longer holds the message at s.UpToSeq (it was
// deleted, possibly re-created, while the summary was being made). The
// timestamps and Version of s are ignored: the database sets them. Text
// that PostgreSQL cannot store (NUL bytes, invalid UTF-8) is cleaned.
func (s *SummaryStore) Save(ctx context.Context, sm summary.Summary) error {
	if !validID(sm.SessionID) {
		return nil // no such session can exist
	}
	if sm.UpToSeq < 0 {
		return fmt.Errorf("db: save summary of session %q: negative cursor %d", sm.SessionID, sm.UpToSeq)
	}
	facts, err := encodeFacts(sm.Facts)
	if err != nil {
		return fmt.Errorf("db: save summary of session %q: %w", sm.SessionID, err)
	}
	res, err := s.d.ExecContext(ctx, saveSummarySQL, sm.SessionID, cleanText(sm.Narrative), facts, sm.UpToSeq, cleanText(sm.Title))
	if err != nil {
		return fmt.Errorf("db: save summary of session %q: %w", sm.SessionID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		s.opt.logger.DebugContext(ctx, "db: summary not saved: session gone or a newer summary is stored",
			"session_id", sm.SessionID, "up_to_seq", sm.UpToSeq)
	}
	return nil
}

// Delete implements summary.Store. Deleting an absent summary is not an
// error.
func (s *SummaryStore) Delete(ctx context.Context, sessionID string) error {
	if !validID(sessionID) {
		return nil
	}
	const q = `DELETE FROM conversation_summaries WHERE session_id = $1`
	if _, err := s.d.ExecContext(ctx, q, sessionID); err != nil {
		return fmt.Errorf("db: delete summary of session %q: %w", sessionID, err)
	}
	return nil
}

// TryLockFold implements memory.FoldLocker; see MessageStore.TryLockFold.
func (s *SummaryStore) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), ok bool, err error) {
	return tryLockFold(ctx, s.d, s.opt.leaseSlice, sessionID, ttl)
}

// factJSON is one element of facts_json, the reference's shape:
// {"key","value","category","extractedAt"}.
type factJSON struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Category    string `json:"category"`
	ExtractedAt string `json:"extractedAt,omitempty"`
}

func encodeFacts(facts []summary.Fact) (string, error) {
	out := make([]factJSON, len(facts))
	for i, f := range facts {
		out[i] = factJSON{Key: cleanText(f.Key), Value: cleanText(f.Value), Category: string(f.Category)}
		if f.Category == "" || !f.Category.Valid() {
			out[i].Category = string(summary.ParseCategory(string(f.Category)))
		}
		if !f.ExtractedAt.IsZero() {
			out[i].ExtractedAt = f.ExtractedAt.UTC().Format(time.RFC3339Nano)
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode facts: %w", err)
	}
	return string(raw), nil
}

// decodeFacts parses facts_json leniently: unknown fields are ignored, a
// missing or unknown category becomes General, a missing or unparsable
// extractedAt is zero. An element that is not a fact object with a
// non-empty string key and a string value is dropped; a value that is not an array drops them all.
// The error describes what was dropped.
func decodeFacts(raw []byte) ([]summary.Fact, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("facts_json is not a JSON array: %w", err)
	}
	var facts []summary.Fact
	var errs []error
	for i, e := range elems {
		var fj factJSON
		if err := json.Unmarshal(e, &fj); err != nil {
			errs = append(errs, fmt.Errorf("fact %d: %w", i, err))
			continue
		}
		if fj.Key == "" {
			errs = append(errs, fmt.Errorf("fact %d: no key", i))
			continue
		}
		f := summary.Fact{Key: fj.Key, Value: fj.Value, Category: summary.ParseCategory(fj.Category)}
		if fj.ExtractedAt != "" {
			if t, err := time.Parse(time.RFC3339Nano, fj.ExtractedAt); err == nil {
				f.ExtractedAt = t
			}
		}
		facts = append(facts, f)
	}
	return facts, errors.Join(errs...)
}
