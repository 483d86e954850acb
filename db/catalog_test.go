package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
)

// The catalogue's conformance suite on PostgreSQL, portable mode: the
// embeddings are REAL[] and scored in process.
func TestCatalogConformancePortable(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, func(t *testing.T) catalogtest.Env {
		d := dbtest.New(t)
		idx := db.NewCatalogIndex(d)
		if on, err := idx.VectorSearch(context.Background()); err != nil || on {
			t.Fatalf("fresh schema: vector search %v, %v", on, err)
		}
		return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: idx}
	})
}

// The same suite with the real pgvector extension, when the server has it.
func TestCatalogConformancePgvector(t *testing.T) {
	t.Parallel()
	base := dbtest.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var available bool
	if err := base.GetContext(ctx, &available, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`); err != nil {
		t.Fatal(err)
	}
	if !available {
		t.Skip("pgvector is not installed on the test server (Debian: postgresql-NN-pgvector): vector-mode tests skipped")
	}
	// In public, not in a test schema that is dropped at the end of a test.
	if _, err := base.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`); err != nil {
		t.Skipf("cannot create the vector extension on the test server: %v", err)
	}
	catalogtest.Run(t, func(t *testing.T) catalogtest.Env {
		d := dbtest.New(t)
		if err := db.EnableVectorSearch(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		idx := db.NewCatalogIndex(d)
		if on, err := idx.VectorSearch(context.Background()); err != nil || !on {
			t.Fatalf("after EnableVectorSearch: vector search %v, %v", on, err)
		}
		return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: idx}
	})
}

func TestCatalogEnableVectorSearchWithoutExtension(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := context.Background()
	var available bool
	if err := d.GetContext(ctx, &available, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`); err != nil {
		t.Fatal(err)
	}
	if available {
		t.Skip("the server has pgvector")
	}
	if err := db.EnableVectorSearch(ctx, d); !errors.Is(err, db.ErrVectorUnavailable) {
		t.Fatalf("EnableVectorSearch = %v, want ErrVectorUnavailable", err)
	}
	if on, err := db.NewCatalogIndex(d).VectorSearch(ctx); err != nil || on {
		t.Errorf("vector search %v, %v", on, err)
	}
}

var _ catalog.Index = (*db.CatalogIndex)(nil)

// shimSQL stands in for pgvector where the server lacks it: a vector type
// (a domain over real[]) and a cosine-distance operator <=>, both in the
// test's schema. It is not pgvector — only its casts and <=> — but it runs
// every vector-mode statement of CatalogIndex (the column, the casts, the
// operator qualified with the type's schema, ranking and limits in SQL).
const shimSQL = `
CREATE DOMAIN vector AS real[];
CREATE FUNCTION shim_cosine_distance(a real[], b real[]) RETURNS float8
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT 1 - sum(x::float8 * y) / (sqrt(sum(x::float8 * x)) * sqrt(sum(y::float8 * y)))
            FROM unnest(a, b) AS t(x, y) $$;
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = real[], FUNCTION = shim_cosine_distance);`

// newShimIndex returns a migrated schema with the stand-in vector column.
func newShimIndex(t *testing.T, opts ...db.CatalogOption) (catalogtest.Env, *db.CatalogIndex, *sqlx.DB) {
	t.Helper()
	s := dbtest.NewSchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, shimSQL); err != nil {
		t.Fatal(err)
	}
	if err := db.AddVectorColumn(ctx, d, s.Name); err != nil {
		t.Fatal(err)
	}
	idx := db.NewCatalogIndex(d, opts...)
	return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: idx}, idx, d
}

// The suite in vector mode, against the stand-in.
func TestCatalogConformanceVectorShim(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, func(t *testing.T) catalogtest.Env {
		env, idx, _ := newShimIndex(t)
		if on, err := idx.VectorSearch(context.Background()); err != nil || !on {
			t.Fatalf("vector search %v, %v", on, err)
		}
		return env
	})
}

// WithoutVectorSearch scores in process but keeps the vector column in
// step, so that switching modes needs no re-embedding; both modes rank
// alike.
func TestCatalogModesAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, vecIdx, d := newShimIndex(t)
	portable := db.NewCatalogIndex(d, db.WithoutVectorSearch())
	if on, err := portable.VectorSearch(ctx); err != nil || on {
		t.Fatalf("WithoutVectorSearch: vector search %v, %v", on, err)
	}
	cat := catalog.New(env.Store, env.Summaries, portable)
	defer cat.Close()
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	env.Index = portable
	mgr := catalogtest.NewManager(t, env, cat, cfg)
	for i, topic := range []string{"blender refund", "Tokyo trip", "garden tomatoes", "tax return", "piano lessons"} {
		for j := range 4 {
			if err := mgr.SaveTurn(ctx, "s"+string(rune('a'+i)), "alice", "Let us talk about the "+topic+" again, part "+string(rune('0'+j))+".", "Sure, the "+topic+"."); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var missing int
	if err := d.GetContext(ctx, &missing, `SELECT count(*) FROM strata_session_index WHERE (embedding IS NULL) <> (embedding_vec IS NULL)`); err != nil || missing != 0 {
		t.Fatalf("%d rows with only one of the two embedding columns (%v)", missing, err)
	}
	lex := catalog.NewLexicalEmbedder(0)
	for _, query := range []string{"refund", "trip to Tokyo", "tomatoes in the garden", "piano", "taxes"} {
		v, _ := lex.EmbedQuery(ctx, query)
		q := catalog.Query{UserID: "alice", Vector: v, Model: lex.Model(), Limit: 3,
			Ranking: catalog.Ranking{Weight: 0.8, HalfLife: time.Hour, Now: time.Now()}}
		a, err := portable.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		b, err := vecIdx.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%q: portable %d results, vector %d", query, len(a), len(b))
		}
		for i := range a {
			if a[i].Doc.SessionID != b[i].Doc.SessionID || abs(a[i].Score-b[i].Score) > 1e-4 || abs(a[i].Similarity-b[i].Similarity) > 1e-4 {
				t.Errorf("%q #%d: portable %s %.5f/%.5f, vector %s %.5f/%.5f", query, i,
					a[i].Doc.SessionID, a[i].Score, a[i].Similarity, b[i].Doc.SessionID, b[i].Score, b[i].Similarity)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Documents go with their session, and the schema refuses an embedding
// without its text.
func TestCatalogCascadeAndTextTwin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := dbtest.New(t)
	store, idx := db.NewMessageStore(d), db.NewCatalogIndex(d)
	if _, err := store.Append(ctx, "s", "alice", memory.Message{Role: memory.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	doc := catalog.Doc{SessionID: "s", UserID: "alice", Title: "T", Source: catalog.SourceTurns,
		Text: "T", Embedding: []float32{1, 0}, Model: "m"}
	if err := idx.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	// Another user's document for the session is not written.
	mallory := doc
	mallory.UserID, mallory.Title, mallory.SourceSeq = "mallory", "pwned", 5
	if err := idx.Upsert(ctx, mallory); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s"); got == nil || got.Title != "T" || got.UserID != "alice" {
		t.Errorf("after a foreign upsert: %+v", got)
	}
	bad := doc
	bad.Text = " "
	if err := idx.Upsert(ctx, bad); err == nil {
		t.Error("Upsert of an embedding without text succeeded")
	}
	if _, err := d.ExecContext(ctx, `UPDATE strata_session_index SET text = '' WHERE session_id = 's'`); err == nil {
		t.Error("the schema accepts an embedding without its text")
	}
	if _, err := d.ExecContext(ctx, `UPDATE strata_session_index SET dims = 3 WHERE session_id = 's'`); err == nil {
		t.Error("the schema accepts a wrong dimension")
	}
	if err := store.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if got, err := idx.Get(ctx, "s"); err != nil || got != nil {
		t.Errorf("document after its session was deleted: %+v, %v", got, err)
	}
	var n int
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM strata_session_index`); err != nil || n != 0 {
		t.Errorf("%d rows left (%v)", n, err)
	}
}
