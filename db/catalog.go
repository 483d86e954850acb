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
)

// The conversation catalogue's table (migration 000002):
//
// strata_session_index — one catalog.Doc per session:
//
//	session_id     TEXT PRIMARY KEY     → strata_sessions ON DELETE CASCADE
//	title          TEXT NOT NULL        the conversation's title
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
//
// and, on servers with pgvector after EnableVectorSearch,
//
//	embedding_vec  vector NULL          the same embedding, for <=>
//
// The owner and the last activity are read from strata_sessions.

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
// titles. Documents go with their session (ON DELETE CASCADE), and an
// upsert for a session that no longer exists writes nothing.
//
// Search has two modes. Where EnableVectorSearch has added the pgvector
// column, the server ranks: cosine distance (<=>) combined with recency,
// ordered and limited in SQL. Elsewhere the user's embeddings of the
// query's model are read (REAL[]) and scored in process. Both give the same
// ranking. Neither uses an approximate index: documents of several models
// and dimensions share the column, and one user's sessions are few enough
// for an exact scan behind the (user_id, last_activity) index.
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
		return fmt.Errorf("db: catalog index: detect vector column: %w", err)
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

// upsertSQL writes a document only while its session exists (and belongs
// to the document's user), and never over a document that supersedes it
// (catalog.Doc.Supersedes). %s: extra column and value for embedding_vec.
const upsertSQL = `
INSERT INTO strata_session_index AS x
       (session_id, title, fingerprint, source, source_seq, message_count, text, model, dims, embedding, updated_at%s)
SELECT s.session_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, now()%s
  FROM strata_sessions s
 WHERE s.session_id = $1 AND ($2 = '' OR s.user_id = $2)
ON CONFLICT (session_id) DO UPDATE
   SET title = EXCLUDED.title, fingerprint = EXCLUDED.fingerprint, source = EXCLUDED.source,
       source_seq = EXCLUDED.source_seq, message_count = EXCLUDED.message_count,
       text = EXCLUDED.text, model = EXCLUDED.model, dims = EXCLUDED.dims,
       embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at%s
 WHERE (EXCLUDED.source = x.source AND EXCLUDED.source_seq >= x.source_seq)
    OR (EXCLUDED.source = 'summary' AND x.source = 'turns')`

// Upsert implements catalog.Index.
func (x *CatalogIndex) Upsert(ctx context.Context, d catalog.Doc) error {
	if !validID(d.SessionID) {
		return nil // no such session can exist
	}
	if d.Source != catalog.SourceSummary && d.Source != catalog.SourceTurns {
		return fmt.Errorf("db: catalog upsert %q: unknown source %q", d.SessionID, d.Source)
	}
	var emb any // NULL
	text, model, dims := "", "", 0
	if len(d.Embedding) > 0 {
		for _, v := range d.Embedding {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("db: catalog upsert %q: embedding holds NaN or Inf", d.SessionID)
			}
		}
		if strings.TrimSpace(d.Text) == "" || d.Model == "" {
			return fmt.Errorf("db: catalog upsert %q: an embedding needs its text and model", d.SessionID)
		}
		emb, text, model, dims = pq.Float32Array(d.Embedding), cleanText(d.Text), cleanText(d.Model), len(d.Embedding)
	}
	colType, _, err := x.mode(ctx)
	if err != nil {
		return err
	}
	var col, val, set string
	if colType != "" { // keep the vector column in step, whatever the mode
		col, val, set = ", embedding_vec", ", $11::real[]::"+colType, ", embedding_vec = EXCLUDED.embedding_vec"
	}
	q := fmt.Sprintf(upsertSQL, col, val, set)
	_, err = x.d.ExecContext(ctx, q, d.SessionID, d.UserID, cleanText(d.Title), cleanText(d.Fingerprint),
		d.Source, d.SourceSeq, d.MessageCount, text, model, dims, emb)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23503" { // foreign_key_violation: deleted meanwhile
		return nil
	}
	if err != nil {
		return fmt.Errorf("db: catalog upsert %q: %w", d.SessionID, err)
	}
	return nil
}

// docColumns are the columns of a document row (d: strata_session_index,
// s: strata_sessions).
const docColumns = `i.session_id, s.user_id, i.title, i.fingerprint, i.source, i.source_seq,
       i.message_count, i.text, i.model, s.last_activity, i.updated_at`

type docRow struct {
	SessionID    string          `db:"session_id"`
	UserID       string          `db:"user_id"`
	Title        string          `db:"title"`
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
		SessionID: r.SessionID, UserID: r.UserID, Title: r.Title, Fingerprint: r.Fingerprint,
		Source: r.Source, SourceSeq: r.SourceSeq, MessageCount: int(r.MessageCount),
		Text: r.Text, Embedding: []float32(r.Embedding), Model: r.Model,
		LastActivity: r.LastActivity, UpdatedAt: r.UpdatedAt,
	}
}

// Get implements catalog.Index.
func (x *CatalogIndex) Get(ctx context.Context, sessionID string) (*catalog.Doc, error) {
	if !validID(sessionID) {
		return nil, nil
	}
	var r docRow
	err := x.d.GetContext(ctx, &r, `SELECT `+docColumns+`, i.embedding
  FROM strata_session_index i JOIN strata_sessions s USING (session_id)
 WHERE i.session_id = $1`, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("db: catalog get %q: %w", sessionID, err)
	}
	d := r.doc()
	return &d, nil
}

// Delete implements catalog.Index.
func (x *CatalogIndex) Delete(ctx context.Context, sessionID string) error {
	if !validID(sessionID) {
		return nil
	}
	if _, err := x.d.ExecContext(ctx, `DELETE FROM strata_session_index WHERE session_id = $1`, sessionID); err != nil {
		return fmt.Errorf("db: catalog delete %q: %w", sessionID, err)
	}
	return nil
}

// portableSearchSQL reads the user's embeddings of one model and dimension.
const portableSearchSQL = `
SELECT ` + docColumns + `, i.embedding
  FROM strata_sessions s JOIN strata_session_index i USING (session_id)
 WHERE s.user_id = $1 AND i.model = $2 AND i.dims = $3 AND i.embedding IS NOT NULL`

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
) r
 WHERE r.similarity >= $5 AND r.similarity <> 'NaN'::float8
 ORDER BY $8::float8 * r.similarity + (1 - $8::float8) * r.recency DESC, r.similarity DESC, r.session_id
 LIMIT $9`

// Search implements catalog.Index.
func (x *CatalogIndex) Search(ctx context.Context, q catalog.Query) ([]catalog.Scored, error) {
	if len(q.Vector) == 0 || !validID(q.UserID) || !validID(q.Model) {
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
		q.Ranking.HalfLife.Seconds(), q.Ranking.Now, q.Ranking.Weight, lim)
	if err != nil {
		return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, err)
	}
	out := make([]catalog.Scored, 0, len(rows))
	for _, r := range rows {
		out = append(out, catalog.Scored{
			Doc: r.doc(), Similarity: r.Similarity, Recency: r.Recency,
			Score: q.Ranking.Weight*r.Similarity + (1-q.Ranking.Weight)*r.Recency,
		})
	}
	return out, nil
}

// searchPortable scores the user's embeddings in process.
func (x *CatalogIndex) searchPortable(ctx context.Context, q catalog.Query) ([]catalog.Scored, error) {
	rows, err := x.d.QueryxContext(ctx, portableSearchSQL, q.UserID, q.Model, len(q.Vector))
	if err != nil {
		return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, err)
	}
	defer rows.Close()
	var out []catalog.Scored
	for rows.Next() {
		var r docRow
		if err := rows.StructScan(&r); err != nil {
			return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, err)
		}
		sim := catalog.Cosine(r.Embedding, q.Vector)
		if sim < q.MinSimilarity {
			continue
		}
		score, rec := q.Ranking.Score(sim, r.LastActivity)
		r.Embedding = nil
		out = append(out, catalog.Scored{Doc: r.doc(), Similarity: sim, Recency: rec, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: catalog search for %q: %w", q.UserID, err)
	}
	catalog.SortScored(out)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// listSQL lists a user's sessions with their documents (without text and
// embedding), newest activity first, from strata_sessions_user_activity_idx;
// total counts all of them.
const listSQL = `
SELECT s.session_id, s.user_id, s.message_count, s.first_user_message,
       s.created_at, s.last_activity, count(*) OVER () AS total,
       i.session_id IS NOT NULL AS indexed, COALESCE(i.title, '') AS title,
       COALESCE(i.fingerprint, '') AS fingerprint, COALESCE(i.source, '') AS source,
       COALESCE(i.source_seq, 0) AS source_seq, COALESCE(i.message_count, 0) AS doc_messages,
       COALESCE(i.model, '') AS model, COALESCE(i.updated_at, s.created_at) AS updated_at
  FROM strata_sessions s LEFT JOIN strata_session_index i USING (session_id)
 WHERE s.user_id = $1
 ORDER BY s.last_activity DESC, s.session_id
 LIMIT $2 OFFSET $3`

// ListSessions implements catalog.Lister: one query, titles included.
func (x *CatalogIndex) ListSessions(ctx context.Context, userID string, limit, offset int) ([]catalog.Session, int, error) {
	rows, total, err := listSessions[catalogRow](ctx, x.d, listSQL, userID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("db: catalog list for %q: %w", userID, err)
	}
	out := make([]catalog.Session, 0, len(rows))
	for _, r := range rows {
		s := catalog.Session{Info: r.info()}
		if r.Indexed {
			s.Doc = &catalog.Doc{
				SessionID: r.SessionID, UserID: r.UserID, Title: r.Title, Fingerprint: r.Fingerprint,
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
	Title       string    `db:"title"`
	Fingerprint string    `db:"fingerprint"`
	Source      string    `db:"source"`
	SourceSeq   int64     `db:"source_seq"`
	DocMessages int64     `db:"doc_messages"`
	Model       string    `db:"model"`
	UpdatedAt   time.Time `db:"updated_at"`
}
