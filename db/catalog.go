package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// The conversation catalogue's table (migrations 000002 and 000004):
//
// strata_session_index — one catalog.Doc per live session:
//
//	session_id     TEXT PRIMARY KEY     → strata_sessions (live_session_id) ON DELETE CASCADE
//	title          TEXT NOT NULL        the conversation's title
//	pinned         BOOLEAN NOT NULL     title was given with Catalog.SetTitle
//	fingerprint    TEXT NOT NULL        salient terms the title was made from
//	source         TEXT NOT NULL        'summary' | 'turns'
//	source_seq     BIGINT NOT NULL      orders versions (see catalog.Doc)
//	message_count  BIGINT NOT NULL      messages when the document was built
//	text           TEXT NOT NULL        the exact text embedded ('' = none)
//	model          TEXT NOT NULL        the embedder's name ('' = none)
//	dims           INTEGER NOT NULL     the embedding's dimension (0 = none)
//	embedding      REAL[] NULL          the embedding, portable
//	updated_at     TIMESTAMPTZ NOT NULL
//	CHECK: embedding, text, model and dims are all set or all empty
//	CHECK: a pinned title is not empty
//
// and, on servers with pgvector after EnableVectorSearch,
//
//	embedding_vec  vector NULL          the same embedding, for <=>
//
// The owner, the epoch and the last activity are read from strata_sessions.
// The foreign key references the live session id, so the database refuses
// a document for a deleted session, and MessageStore.Delete removes the
// document in its own transaction.

// ErrVectorUnavailable is wrapped by EnableVectorSearch when the server
// lacks the pgvector extension or the role may not create it.
var ErrVectorUnavailable = errors.New("db: pgvector is not available")

// EnableVectorSearch prepares the catalogue for pgvector: it creates the
// vector extension when it is missing (CREATE EXTENSION IF NOT EXISTS
// vector, which needs the right to do so; installing it beforehand as a
// superuser is enough), adds the vector column embedding_vec to
// strata_session_index and fills it from the portable embeddings. It is
// idempotent and optional: migrations never depend on it, and without it
// (or on failure, an error wrapping ErrVectorUnavailable) CatalogIndex
// scores in process. Run it after Migrate and before the first use of a
// CatalogIndex, which detects the column once.
func EnableVectorSearch(ctx context.Context, d *sqlx.DB) error {
	var available bool
	if err := d.GetContext(ctx, &available, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`); err != nil {
		return fmt.Errorf("db: enable vector search: %w", err)
	}
	if !available {
		return fmt.Errorf("db: enable vector search: %w: the server has no vector extension", ErrVectorUnavailable)
	}
	var schema string
	err := d.GetContext(ctx, &schema, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := d.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
			return fmt.Errorf("db: enable vector search: %w: %w", ErrVectorUnavailable, err)
		}
		err = d.GetContext(ctx, &schema, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`)
	}
	if err != nil {
		return fmt.Errorf("db: enable vector search: %w", err)
	}
	return addVectorColumn(ctx, d, schema)
}

// addVectorColumn adds embedding_vec of type <schema>.vector and fills it.
func addVectorColumn(ctx context.Context, d *sqlx.DB, schema string) error {
	typ := pq.QuoteIdentifier(schema) + ".vector"
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: enable vector search: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmts := []string{
		`ALTER TABLE strata_session_index ADD COLUMN IF NOT EXISTS embedding_vec ` + typ + ` NULL`,
		`UPDATE strata_session_index SET embedding_vec = embedding::` + typ + ` WHERE embedding IS NOT NULL AND embedding_vec IS NULL`,
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("db: enable vector search: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: enable vector search: %w", err)
	}
	return nil
}

// CatalogOption configures a CatalogIndex.
type CatalogOption func(*CatalogIndex)

// WithoutVectorSearch makes the index score in process even when the
// vector column exists (the portable mode). The vector column is still
// kept up to date.
func WithoutVectorSearch() CatalogOption { return func(x *CatalogIndex) { x.noVector = true } }

// CatalogIndex is the PostgreSQL catalog.Index, over strata_session_index.
// It is also a catalog.Lister: one query lists a user's sessions with their
// titles. Every read joins the session's live row and filters by its
// owner. Every write is guarded by that row in the same statement (or, for
// a document built from messages alone, the same transaction), locked
// against a concurrent delete: a document is written only while its
// session is the writer's, alive, and the incarnation the document was
// built from — its epoch, or the live holder of the last message it read.
// So a refresh that read a session before it was deleted (or deleted and
// created again) writes nothing.
//
// Search has two modes. Where EnableVectorSearch has added the pgvector
// column, the server ranks: cosine distance (<=>) combined with recency,
// ordered and limited in SQL. Elsewhere the user's embeddings of the
// query's model are read (REAL[]) and scored in process (catalog.Query.Rank).
// Both give the same ranking. Neither uses an approximate index: documents
// of several models and dimensions share the column, and one user's
// sessions are few enough for an exact scan behind the (user_id,
// last_activity) index.
type CatalogIndex struct {
	d        *sqlx.DB
	noVector bool

	mu       sync.Mutex
	detected bool
	vecType  string // qualified vector type ("" = portable mode)
	vecOp    string // qualified <=> operator
}

var (
	_ catalog.Index  = (*CatalogIndex)(nil)
	_ catalog.Lister = (*CatalogIndex)(nil)
)

// NewCatalogIndex returns the catalogue's index over d, whose schema must
// have been migrated (Migrate). It never closes d.
func NewCatalogIndex(d *sqlx.DB, opts ...CatalogOption) *CatalogIndex {
	x := &CatalogIndex{d: d}
	for _, o := range opts {
		if o != nil {
			o(x)
		}
	}
	return x
}

// VectorSearch reports whether Search runs in pgvector mode.
func (x *CatalogIndex) VectorSearch(ctx context.Context) (bool, error) {
	if err := x.detect(ctx); err != nil {
		return false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.vecType != "" && !x.noVector, nil
}

// vectorColumnSQL finds the embedding_vec column's type and its schema.
const vectorColumnSQL = `
SELECT n.nspname
  FROM pg_attribute a
  JOIN pg_type t ON t.oid = a.atttypid
  JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE a.attrelid = to_regclass('strata_session_index')
   AND a.attname = 'embedding_vec' AND NOT a.attisdropped AND t.typname = 'vector'`

// detect finds out, once, whether the vector column exists.
func (x *CatalogIndex) detect(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.detected {
		return nil
	}
	var schema string
	err := x.d.GetContext(ctx, &schema, vectorColumnSQL)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("db: catalog index: detect vector column: %w", classify(ctx, err))
	default:
		x.setVector(schema)
	}
	x.detected = true
	return nil
}

// setVector switches to the vector column of type <schema>.vector.
func (x *CatalogIndex) setVector(schema string) {
	x.vecType = pq.QuoteIdentifier(schema) + ".vector"
	x.vecOp = "OPERATOR(" + pq.QuoteIdentifier(schema) + ".<=>)"
}

// mode returns the vector column's type ("" when there is none) and, in
// vector mode, the <=> operator to rank with ("" in portable mode).
func (x *CatalogIndex) mode(ctx context.Context) (colType, rankOp string, err error) {
	if err := x.detect(ctx); err != nil {
		return "", "", err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.vecType == "" || x.noVector {
		return x.vecType, "", nil
	}
	return x.vecType, x.vecOp, nil
}

// upsertSQL writes a document only while its session is the document's
// user's live session (%[1]s: the incarnation guard) and no erasure
// happened since the document was read ($13: the session's erasures the
// document was built at, -1 when unknown; $14: the summary version it was
// built from, 0 for none — a ForgetFact saves a new one; a summary kept
// in another store than this database's is not checked), never over a document
// that supersedes it, and never over a pinned title. The session row is
// locked FOR KEY SHARE, so a delete (which locks it FOR UPDATE) waits for
// the write or the write re-checks the guard on the row the delete left.
// %[2]s, %[3]s and %[4]s: the column, value and update of embedding_vec.
const upsertSQL = `
INSERT INTO strata_session_index AS x
       (session_id, title, fingerprint, source, source_seq, message_count, text, model, dims, embedding, updated_at%[2]s)
SELECT s.session_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, now()%[3]s
  FROM strata_sessions s
 WHERE s.session_id = $1 AND s.user_id = $2 AND s.deleted_at IS NULL AND %[1]s
   AND ($13::bigint < 0 OR s.erasures = $13::bigint)
   AND ($14::bigint = 0 OR $14::bigint = COALESCE((SELECT v.version FROM strata_summaries v WHERE v.session_id = $1), $14::bigint))
   FOR KEY SHARE OF s
ON CONFLICT (session_id) DO UPDATE
   SET title = CASE WHEN x.pinned THEN x.title ELSE EXCLUDED.title END,
       fingerprint = CASE WHEN x.pinned THEN x.fingerprint ELSE EXCLUDED.fingerprint END,
       source = EXCLUDED.source, source_seq = EXCLUDED.source_seq, message_count = EXCLUDED.message_count,
       text = EXCLUDED.text, model = EXCLUDED.model, dims = EXCLUDED.dims,
       embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at%[4]s
 WHERE (EXCLUDED.source = x.source AND EXCLUDED.source_seq >= x.source_seq)
    OR (EXCLUDED.source = 'summary' AND x.source = 'turns')`

// Incarnation guards of upsertSQL. $12 is the document's epoch or the
// sequence number of the last message it was built from.
const (
	epochGuard = `s.epoch = $12`
	// seqGuard runs in a transaction that locked the session row first
	// (lockLiveSQL), so its snapshot is newer than any delete of the
	// session: sequence numbers are never reused, so only the incarnation
	// the document was built from holds message $12.
	seqGuard = `($12::bigint = 0 OR EXISTS (SELECT 1 FROM strata_messages m WHERE m.session_id = $1 AND m.seq = $12::bigint))`
)

// lockLiveSQL locks userID's live session row until the transaction ends.
const lockLiveSQL = `
SELECT 1 FROM strata_sessions WHERE session_id = $1 AND user_id = $2 AND deleted_at IS NULL FOR KEY SHARE`

// Upsert implements catalog.Index. A document with an epoch is written in
// one statement guarded by the session's epoch; one built from messages
// alone (Epoch 0) in a transaction that locks the session row and then
// checks that the live session still holds the last message read
// (SourceSeq).
func (x *CatalogIndex) Upsert(ctx context.Context, d catalog.Doc) error {
	if !text.Storable(d.SessionID) || !text.Storable(d.UserID) {
		return nil // no such session can exist
	}
	if d.Source != catalog.SourceSummary && d.Source != catalog.SourceTurns {
		return fmt.Errorf("db: catalog upsert %q: unknown source %q", d.SessionID, d.Source)
	}
	var emb any // NULL
	body, model, dims := "", "", 0
	if len(d.Embedding) > 0 {
		for _, v := range d.Embedding {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("db: catalog upsert %q: embedding holds NaN or Inf", d.SessionID)
			}
		}
		if strings.TrimSpace(d.Text) == "" || d.Model == "" {
			return fmt.Errorf("db: catalog upsert %q: an embedding needs its text and model", d.SessionID)
		}
		emb, body, model, dims = pq.Float32Array(d.Embedding), text.Clean(d.Text), text.Clean(d.Model), len(d.Embedding)
	}
	colType, _, err := x.mode(ctx)
	if err != nil {
		return err
	}
	var col, val, set string
	if colType != "" { // keep the vector column in step, whatever the mode
		col, val, set = ", embedding_vec", ", $11::real[]::"+colType, ", embedding_vec = EXCLUDED.embedding_vec"
	}
	guard, mark := epochGuard, d.Epoch
	if d.Epoch == 0 {
		guard, mark = seqGuard, d.SourceSeq
	}
	args := []any{d.SessionID, d.UserID, text.Clean(d.Title), text.Clean(d.Fingerprint),
		d.Source, d.SourceSeq, d.MessageCount, body, model, dims, emb, mark, d.Erasures, d.SummaryVersion}
	q := fmt.Sprintf(upsertSQL, guard, col, val, set)
	if d.Epoch != 0 {
		_, err = x.d.ExecContext(ctx, q, args...)
	} else {
		err = x.inTx(ctx, func(tx *sqlx.Tx) error {
			var one int
			if err := tx.GetContext(ctx, &one, lockLiveSQL, d.SessionID, d.UserID); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		})
	}
	var pqErr *pq.Error
	switch {
	case errors.Is(err, sql.ErrNoRows): // not the user's live session
	case errors.As(err, &pqErr) && pqErr.Code == "23503": // foreign key: deleted meanwhile
	case err != nil:
		return fmt.Errorf("db: catalog upsert %q: %w", d.SessionID, classify(ctx, err))
	}
	return nil
}

// Erasures implements the catalogue's erasure check: the number of
// Forgets of the session so far (0 for an unknown session). The catalogue
// reads it before it reads the session, and Upsert writes the document
// only while it is still the session's count, so no replica's refresh
// that read the session before an erasure writes what it read.
func (x *CatalogIndex) Erasures(ctx context.Context, sessionID string) (int64, error) {
	var n int64
	err := x.d.GetContext(ctx, &n, `SELECT erasures FROM strata_sessions WHERE session_id = $1`, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("db: catalog erasures of %q: %w", sessionID, classify(ctx, err))
	}
	return n, nil
}

// inTx runs fn in a transaction, committed when fn succeeds.
func (x *CatalogIndex) inTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	tx, err := x.d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// pinSQL and unpinSQL set or clear a pinned title while the session is
// userID's live session, in one statement that also reads the owner (to
// tell a missing session from another user's).
const (
	pinSQL = `
WITH s AS (SELECT session_id, user_id FROM strata_sessions
            WHERE session_id = $1 AND deleted_at IS NULL FOR KEY SHARE),
     w AS (INSERT INTO strata_session_index AS x (session_id, title, pinned, source, updated_at)
           SELECT session_id, $3, true, 'turns', now() FROM s WHERE user_id = $2
           ON CONFLICT (session_id) DO UPDATE SET title = EXCLUDED.title, pinned = true, updated_at = EXCLUDED.updated_at
           RETURNING 1)
SELECT (SELECT user_id FROM s) AS owner, (SELECT count(*) FROM w) AS written`
	unpinSQL = `
WITH s AS (SELECT session_id, user_id FROM strata_sessions
            WHERE session_id = $1 AND deleted_at IS NULL FOR KEY SHARE),
     w AS (UPDATE strata_session_index x SET title = '', fingerprint = '', pinned = false, updated_at = now()
             FROM s WHERE x.session_id = s.session_id AND s.user_id = $2 AND x.pinned
           RETURNING 1)
SELECT (SELECT user_id FROM s) AS owner, (SELECT count(*) FROM w) AS written`
)

// SetTitle implements catalog.Index: one statement, guarded by the
// session's live row; store.ErrNotFound for a missing or deleted session,
// memory.ErrNotOwner for another user's.
func (x *CatalogIndex) SetTitle(ctx context.Context, sessionID, userID, title string) error {
	if !text.Storable(sessionID) {
		return fmt.Errorf("db: catalog set title %q: %w", sessionID, store.ErrNotFound)
	}
	q, args := pinSQL, []any{sessionID, text.Clean(userID), text.Clean(title)}
	if title == "" {
		q, args = unpinSQL, args[:2]
	}
	var r struct {
		Owner   sql.NullString `db:"owner"`
		Written int64          `db:"written"`
	}
	if err := x.d.GetContext(ctx, &r, q, args...); err != nil {
		return fmt.Errorf("db: catalog set title %q: %w", sessionID, classify(ctx, err))
	}
	switch {
	case !r.Owner.Valid:
		return fmt.Errorf("db: catalog set title %q: %w", sessionID, store.ErrNotFound)
	case r.Owner.String != userID:
		return fmt.Errorf("db: catalog set title %q as %q: %w", sessionID, userID, memory.ErrNotOwner)
	}
	return nil
}

// docColumns are the columns of a document row (i: strata_session_index,
// s: strata_sessions).
const docColumns = `i.session_id, s.user_id, s.epoch, i.title, i.pinned, i.fingerprint, i.source, i.source_seq,
       i.message_count, i.text, i.model, s.last_activity, i.updated_at`

type docRow struct {
	SessionID    string          `db:"session_id"`
	UserID       string          `db:"user_id"`
	Epoch        int64           `db:"epoch"`
	Title        string          `db:"title"`
	Pinned       bool            `db:"pinned"`
	Fingerprint  string          `db:"fingerprint"`
	Source       string          `db:"source"`
	SourceSeq    int64           `db:"source_seq"`
	MessageCount int64           `db:"message_count"`
	Text         string          `db:"text"`
	Model        string          `db:"model"`
	Embedding    pq.Float32Array `db:"embedding"`
	LastActivity time.Time       `db:"last_activity"`
	UpdatedAt    time.Time       `db:"updated_at"`
}

func (r docRow) doc() catalog.Doc {
	return catalog.Doc{
		SessionID: r.SessionID, UserID: r.UserID, Epoch: r.Epoch, Title: r.Title, Pinned: r.Pinned,
		Fingerprint: r.Fingerprint, Source: r.Source, SourceSeq: r.SourceSeq, MessageCount: int(r.MessageCount),
		Text: r.Text, Embedding: []float32(r.Embedding), Model: r.Model,
		LastActivity: r.LastActivity, UpdatedAt: r.UpdatedAt,
	}
}

func (r docRow) match() catalog.Match {
	return catalog.Match{SessionID: r.SessionID, Title: r.Title, Text: r.Text, LastActivity: r.LastActivity}
}

// Get implements catalog.Index: userID's document of the session, with the
// live session's epoch.
func (x *CatalogIndex) Get(ctx context.Context, sessionID, userID string) (*catalog.Doc, error) {
	if !text.Storable(sessionID) || !text.Storable(userID) {
		return nil, nil
	}
	var r docRow
	err := x.d.GetContext(ctx, &r, `SELECT `+docColumns+`, i.embedding
  FROM strata_session_index i JOIN strata_sessions s USING (session_id)
 WHERE i.session_id = $1 AND s.user_id = $2`, sessionID, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("db: catalog get %q: %w", sessionID, classify(ctx, err))
	}
	d := r.doc()
	return &d, nil
}

// Delete implements catalog.Index and does nothing: MessageStore.Delete
// removes the document in its own transaction, and the database refuses a
// document for a deleted session. Deleting here could only remove the
// document of a session created again since.
func (x *CatalogIndex) Delete(context.Context, string) error { return nil }

// portableSearchSQL reads the user's embeddings of one model and dimension.
const portableSearchSQL = `
SELECT ` + docColumns + `, i.embedding
  FROM strata_sessions s JOIN strata_session_index i USING (session_id)
 WHERE s.user_id = $1 AND i.model = $2 AND i.dims = $3 AND i.embedding IS NOT NULL
   AND ($4::text = '' OR s.participants @> ARRAY[$4::text])`

// vectorSearchSQL ranks in the server (%[1]s: the <=> operator, %[2]s: the
// vector type). Recency is 0.5^(age/half-life), the exponent capped so
// that power() cannot underflow.
const vectorSearchSQL = `
SELECT * FROM (
    SELECT ` + docColumns + `,
           (1 - (i.embedding_vec %[1]s $4::real[]::%[2]s))::float8 AS similarity,
           CASE WHEN $6::float8 > 0
                THEN power(0.5::float8, LEAST(GREATEST(EXTRACT(EPOCH FROM ($7::timestamptz - s.last_activity))::float8, 0) / $6::float8, 1000))
                ELSE 0::float8 END AS recency
      FROM strata_sessions s JOIN strata_session_index i USING (session_id)
     WHERE s.user_id = $1 AND i.model = $2 AND i.dims = $3 AND i.embedding_vec IS NOT NULL
       AND ($10::text = '' OR s.participants @> ARRAY[$10::text])
) r
 WHERE r.similarity >= $5 AND r.similarity <> 'NaN'::float8
 ORDER BY $8::float8 * r.similarity + (1 - $8::float8) * r.recency DESC, r.similarity DESC, r.session_id
 LIMIT $9`

// Search implements catalog.Index.
func (x *CatalogIndex) Search(ctx context.Context, q catalog.Query) ([]catalog.Match, error) {
	if len(q.Vector) == 0 || !text.Storable(q.UserID) || !text.Storable(q.Model) || !text.Storable(q.Participant) {
		return nil, nil
	}
	vecType, vecOp, err := x.mode(ctx)
	if err != nil {
		return nil, err
	}
	if vecOp == "" {
		return x.searchPortable(ctx, q)
	}
	var lim sql.NullInt64
	if q.Limit > 0 {
		lim = sql.NullInt64{Int64: int64(q.Limit), Valid: true}
	}
	var rows []struct {
		docRow
		Similarity float64 `db:"similarity"`
		Recency    float64 `db:"recency"`
	}
	err = x.d.SelectContext(ctx, &rows, fmt.Sprintf(vectorSearchSQL, vecOp, vecType),
		q.UserID, q.Model, len(q.Vector), pq.Float32Array(q.Vector), q.MinSimilarity,
		q.HalfLife.Seconds(), q.Now, q.Weight, lim, q.Participant)
	if err != nil {
		return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, classify(ctx, err))
	}
	out := make([]catalog.Match, 0, len(rows))
	for _, r := range rows {
		m := r.match()
		m.Similarity, m.Recency = r.Similarity, r.Recency
		m.Score = q.Weight*r.Similarity + (1-q.Weight)*r.Recency
		out = append(out, m)
	}
	return out, nil
}

// searchPortable scores the user's embeddings in process.
func (x *CatalogIndex) searchPortable(ctx context.Context, q catalog.Query) ([]catalog.Match, error) {
	var rows []docRow
	if err := x.d.SelectContext(ctx, &rows, portableSearchSQL, q.UserID, q.Model, len(q.Vector), q.Participant); err != nil {
		return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, classify(ctx, err))
	}
	docs := make([]catalog.Doc, len(rows))
	for i, r := range rows {
		docs[i] = r.doc()
	}
	return q.Rank(docs), nil
}

// listSelect is what a listing reads of each session: its row and its
// document (without text and embedding), total counting them all.
const listSelect = `
SELECT s.session_id, s.user_id, s.epoch, s.message_count, s.first_user_message,
       s.created_at, s.last_activity, count(*) OVER () AS total,
       i.session_id IS NOT NULL AS indexed, COALESCE(i.title, '') AS title, COALESCE(i.pinned, false) AS pinned,
       COALESCE(i.fingerprint, '') AS fingerprint, COALESCE(i.source, '') AS source,
       COALESCE(i.source_seq, 0) AS source_seq, COALESCE(i.message_count, 0) AS doc_messages,
       COALESCE(i.model, '') AS model, COALESCE(i.updated_at, s.created_at) AS updated_at
  FROM strata_sessions s LEFT JOIN strata_session_index i USING (session_id)`

// listSQL lists a user's sessions with their documents, newest activity
// first: the user's sessions, found by strata_sessions_user_idx, sorted by
// last_activity.
const listSQL = listSelect + `
 WHERE s.user_id = $1 AND s.deleted_at IS NULL
 ORDER BY s.last_activity DESC, s.session_id
 LIMIT $2 OFFSET $3`

// listParticipantSQL is listSQL for the sessions of $1 that $4 wrote in.
const listParticipantSQL = listSelect + `
 WHERE s.user_id = $1 AND s.participants @> ARRAY[$4::text] AND s.deleted_at IS NULL
 ORDER BY s.last_activity DESC, s.session_id
 LIMIT $2 OFFSET $3`

// ListSessions implements catalog.Lister: one query, titles included.
func (x *CatalogIndex) ListSessions(ctx context.Context, userID string, limit, offset int) ([]catalog.Session, int, error) {
	return x.list(ctx, listSQL, userID, "", limit, offset)
}

// ListParticipantSessions implements catalog.Lister: the sessions of
// ownerID that participant wrote in (MessageStore.ParticipantSessions),
// titles included, in one query.
func (x *CatalogIndex) ListParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) ([]catalog.Session, int, error) {
	if participant == "" || participant == ownerID {
		return nil, 0, nil
	}
	return x.list(ctx, listParticipantSQL, ownerID, participant, limit, offset)
}

func (x *CatalogIndex) list(ctx context.Context, query, userID, participant string, limit, offset int) ([]catalog.Session, int, error) {
	rows, total, err := listSessions[catalogRow](ctx, x.d, query, userID, participant, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: catalog list for %q: %w", userID, classify(ctx, err))
	}
	out := make([]catalog.Session, 0, len(rows))
	for _, r := range rows {
		s := catalog.Session{Info: r.info()}
		if r.Indexed {
			s.Doc = &catalog.Doc{
				SessionID: r.SessionID, UserID: r.UserID, Epoch: r.Epoch, Title: r.Title, Pinned: r.Pinned, Fingerprint: r.Fingerprint,
				Source: r.Source, SourceSeq: r.SourceSeq, MessageCount: int(r.DocMessages),
				Model: r.Model, LastActivity: r.LastActivity, UpdatedAt: r.UpdatedAt,
			}
		}
		out = append(out, s)
	}
	return out, total, nil
}

// catalogRow is a session listing row with its search document's columns.
type catalogRow struct {
	sessionRow
	Indexed     bool      `db:"indexed"`
	Epoch       int64     `db:"epoch"`
	Title       string    `db:"title"`
	Pinned      bool      `db:"pinned"`
	Fingerprint string    `db:"fingerprint"`
	Source      string    `db:"source"`
	SourceSeq   int64     `db:"source_seq"`
	DocMessages int64     `db:"doc_messages"`
	Model       string    `db:"model"`
	UpdatedAt   time.Time `db:"updated_at"`
}
