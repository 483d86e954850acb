package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
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
	env.Index = portable
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	mgr, cat := catalogtest.Open(t, env, cfg)
	for i, topic := range []string{"blender refund", "Tokyo trip", "garden tomatoes", "tax return", "piano lessons"} {
		for j := range 4 {
			if err := mgr.SaveTurn(ctx, "s"+string(rune('a'+i)), "alice", "Let us talk about the "+topic+" again, part "+string(rune('0'+j))+".", "Sure, the "+topic+"."); err != nil {
				t.Fatal(err)
			}
		}
	}
	catalogtest.Flush(t, ctx, mgr, cat)
	var missing, rows int
	if err := d.GetContext(ctx, &missing, `SELECT count(*) FROM strata_session_index WHERE (embedding IS NULL) <> (embedding_vec IS NULL)`); err != nil || missing != 0 {
		t.Fatalf("%d rows with only one of the two embedding columns (%v)", missing, err)
	}
	if err := d.GetContext(ctx, &rows, `SELECT count(*) FROM strata_session_index WHERE embedding_vec IS NOT NULL`); err != nil || rows != 5 {
		t.Fatalf("%d rows with a vector, want 5 (%v)", rows, err)
	}
	lex := catalog.NewLexicalEmbedder(0)
	for _, query := range []string{"refund", "trip to Tokyo", "tomatoes in the garden", "piano", "taxes"} {
		v, _ := lex.EmbedQuery(ctx, query)
		q := catalog.Query{UserID: "alice", Vector: v, Model: "strata-lexical-v1-1024", Limit: 3,
			Weight: 0.8, HalfLife: time.Hour, Now: time.Now()}
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
			if a[i].SessionID != b[i].SessionID || abs(a[i].Score-b[i].Score) > 1e-4 || abs(a[i].Similarity-b[i].Similarity) > 1e-4 ||
				a[i].Title != b[i].Title || a[i].Text != b[i].Text {
				t.Errorf("%q #%d: portable %s %.5f/%.5f, vector %s %.5f/%.5f", query, i,
					a[i].SessionID, a[i].Score, a[i].Similarity, b[i].SessionID, b[i].Score, b[i].Similarity)
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

// newGuardFixture returns an index over a fresh schema with one session of
// alice's holding two messages, and their append result.
func newGuardFixture(t *testing.T) (context.Context, *sqlx.DB, memory.MessageStore, *db.CatalogIndex, store.AppendResult) {
	t.Helper()
	ctx := context.Background()
	d := dbtest.New(t)
	ms, idx := db.NewMessageStore(d), db.NewCatalogIndex(d)
	ensureSession(t, ctx, ms, "s", "alice")
	r, err := ms.Append(ctx, "s", "alice",
		store.Message{Role: store.RoleUser, Content: "My blender is broken."},
		store.Message{Role: store.RoleAssistant, Content: "Sorry."})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, d, ms, idx, r
}

// Writes are guarded by the session's live row: its owner, and the
// incarnation the document was built from (its epoch, or the last message
// it read). The schema refuses an embedding without its text, and a pinned
// title that is empty; documents go with their session.
func TestCatalogWriteGuards(t *testing.T) {
	t.Parallel()
	ctx, d, ms, idx, r := newGuardFixture(t)
	doc := catalog.Doc{SessionID: "s", UserID: "alice", Epoch: r.Epoch, Title: "T", Source: catalog.SourceSummary,
		SourceSeq: r.LastSeq, Text: "T blender", Embedding: []float32{1, 0}, Model: "m"}
	if err := idx.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s", "alice"); got == nil || got.Title != "T" || got.Epoch != r.Epoch {
		t.Fatalf("after the upsert: %+v", got)
	}
	// Another user's document, another epoch's, or one built from a
	// message the session does not hold, is not written.
	newer := doc
	newer.SourceSeq++
	for name, bad := range map[string]func(catalog.Doc) catalog.Doc{
		"another user":  func(x catalog.Doc) catalog.Doc { x.UserID, x.Title = "mallory", "pwned"; return x },
		"another epoch": func(x catalog.Doc) catalog.Doc { x.Epoch, x.Title = r.Epoch+1000, "stale"; return x },
		"unknown message": func(x catalog.Doc) catalog.Doc {
			x.Epoch, x.Source, x.Title, x.SourceSeq = 0, catalog.SourceSummary, "stale", r.LastSeq+1000
			return x
		},
	} {
		if err := idx.Upsert(ctx, bad(newer)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if got, _ := idx.Get(ctx, "s", "alice"); got == nil || got.Title != "T" {
			t.Errorf("%s: the document became %+v", name, got)
		}
	}
	// Built from the last message read, with no epoch: written while the
	// session holds that message.
	fromTurns := doc
	fromTurns.Epoch, fromTurns.Title = 0, "From turns"
	if err := idx.Upsert(ctx, fromTurns); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s", "alice"); got == nil || got.Title != "From turns" {
		t.Errorf("a document guarded by its last message was not written: %+v", got)
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
	if _, err := d.ExecContext(ctx, `UPDATE strata_session_index SET pinned = true, title = '' WHERE session_id = 's'`); err == nil {
		t.Error("the schema accepts an empty pinned title")
	}

	// SetTitle tells a missing session from another user's.
	if err := idx.SetTitle(ctx, "s", "mallory", "Mine"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("SetTitle by another user = %v", err)
	}
	if err := idx.SetTitle(ctx, "nope", "alice", "Mine"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of a missing session = %v", err)
	}
	if err := idx.SetTitle(ctx, "s", "alice", "Pinned"); err != nil {
		t.Fatal(err)
	}

	// Deleted: the document and its pinned title go, and no write for the
	// deleted incarnation lands, whatever its guard.
	if err := ms.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	for _, x := range []catalog.Doc{doc, fromTurns} {
		if err := idx.Upsert(ctx, x); err != nil {
			t.Errorf("upsert after delete: %v", err)
		}
	}
	if err := idx.SetTitle(ctx, "s", "alice", "Pinned"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of a deleted session = %v", err)
	}
	var n int
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM strata_session_index`); err != nil || n != 0 {
		t.Errorf("%d rows left after the delete (%v)", n, err)
	}
	// Created again by its owner: the old incarnation's writes still miss.
	ensureSession(t, ctx, ms, "s", "alice")
	r2, err := ms.Append(ctx, "s", "alice", store.Message{Role: store.RoleUser, Content: "Tomatoes on a balcony?"})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Epoch == r.Epoch {
		t.Fatalf("epoch %d reused", r2.Epoch)
	}
	for _, x := range []catalog.Doc{doc, fromTurns} {
		if err := idx.Upsert(ctx, x); err != nil {
			t.Errorf("upsert of the old incarnation: %v", err)
		}
	}
	if got, _ := idx.Get(ctx, "s", "alice"); got != nil {
		t.Errorf("a document of the deleted incarnation was written for the new one: %+v", got)
	}
	if err := idx.Delete(ctx, "s"); err != nil { // does nothing: the store's delete did it
		t.Fatal(err)
	}
	pg, total, err := idx.ListSessions(ctx, "alice", 0, 0)
	if err != nil || total != 1 || len(pg) != 1 || pg[0].Doc != nil || pg[0].Info.MessageCount != 1 {
		t.Errorf("listing of the new incarnation: %+v, %d, %v", pg, total, err)
	}
}

// Writes race a delete and a re-creation on other connections: whatever
// the interleaving, they return no error (no deadlock between the
// write's locks and the delete's), and a document of the first incarnation
// never lands on the second.
func TestCatalogUpsertRacesDelete(t *testing.T) {
	t.Parallel()
	ctx, _, ms, idx, _ := newGuardFixture(t)
	for round := range 30 {
		sid := "race" + string(rune('a'+round%26)) + string(rune('0'+round/26))
		ensureSession(t, ctx, ms, sid, "alice")
		r, err := ms.Append(ctx, sid, "alice", store.Message{Role: store.RoleUser, Content: "blender"})
		if err != nil {
			t.Fatal(err)
		}
		withEpoch := catalog.Doc{SessionID: sid, UserID: "alice", Epoch: r.Epoch, Title: "old", Source: catalog.SourceSummary,
			SourceSeq: r.LastSeq, Text: "blender", Embedding: []float32{1}, Model: "m"}
		fromTurns := withEpoch
		fromTurns.Epoch, fromTurns.Source = 0, catalog.SourceTurns
		var wg sync.WaitGroup
		wg.Add(3)
		for _, doc := range []catalog.Doc{withEpoch, fromTurns} {
			go func() {
				defer wg.Done()
				if err := idx.Upsert(ctx, doc); err != nil { // a deadlock would show here
					t.Error(err)
				}
			}()
		}
		go func() {
			defer wg.Done()
			if err := ms.Delete(ctx, sid, "alice"); err != nil {
				t.Error(err)
				return
			}
			if err := ms.Create(ctx, sid, "alice"); err != nil {
				t.Error(err)
				return
			}
			if _, err := ms.Append(ctx, sid, "alice", store.Message{Role: store.RoleUser, Content: "tomatoes"}); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if got, err := idx.Get(ctx, sid, "alice"); err != nil || got != nil {
			t.Fatalf("round %d: a document of the deleted incarnation survived: %+v, %v", round, got, err)
		}
	}
}

// The guards hold against a delete and a re-creation that commit while the
// write is under way: a transaction deletes the session and creates it
// again (as MessageStore.Delete and Append do) but has not committed when
// the writes start; they wait for its row lock, then find the new
// incarnation and write nothing.
func TestCatalogUpsertWaitsForDelete(t *testing.T) {
	t.Parallel()
	ctx, d, _, idx, r := newGuardFixture(t)
	withEpoch := catalog.Doc{SessionID: "s", UserID: "alice", Epoch: r.Epoch, Title: "old", Source: catalog.SourceSummary,
		SourceSeq: r.LastSeq, Text: "blender", Embedding: []float32{1}, Model: "m"}
	fromTurns := withEpoch
	fromTurns.Epoch, fromTurns.Source = 0, catalog.SourceTurns

	for _, name := range []string{"epoch", "last message"} {
		doc := withEpoch
		if name == "last message" {
			doc = fromTurns
		}
		if got, _ := idx.Get(ctx, "s", "alice"); got != nil {
			t.Fatalf("%s: a document before the round: %+v", name, got)
		}
		tx, err := d.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`SELECT 1 FROM strata_sessions WHERE session_id = 's' FOR UPDATE`,
			`DELETE FROM strata_messages WHERE session_id = 's'`,
			`DELETE FROM strata_session_index WHERE session_id = 's'`,
			`UPDATE strata_sessions SET user_id = NULL, deleted_at = clock_timestamp(), message_count = 0, first_user_message = NULL WHERE session_id = 's'`,
			`UPDATE strata_sessions SET user_id = 'alice', deleted_at = NULL, epoch = nextval('strata_session_epoch_seq') WHERE session_id = 's'`,
			`INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ('s', 'user', 'tomatoes', 'alice')`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				_ = tx.Rollback()
				t.Fatalf("%s: %v", q, err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- idx.Upsert(ctx, doc) }()
		// Wait until the write is blocked on the transaction's lock.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var waiting int
			if err := d.GetContext(ctx, &waiting, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE '%strata_sessions%' AND pid <> pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
			if waiting > 0 {
				break
			}
			if time.Now().After(deadline) {
				_ = tx.Rollback()
				t.Fatalf("%s: the write did not wait for the session's row lock", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if got, err := idx.Get(ctx, "s", "alice"); err != nil || got != nil {
			t.Errorf("%s: a document of the deleted incarnation landed on the new one: %+v, %v", name, got, err)
		}
		// The next round starts from the new incarnation.
		var last int64
		if err := d.GetContext(ctx, &last, `SELECT max(seq) FROM strata_messages WHERE session_id = 's'`); err != nil {
			t.Fatal(err)
		}
		var epoch int64
		if err := d.GetContext(ctx, &epoch, `SELECT epoch FROM strata_sessions WHERE session_id = 's'`); err != nil {
			t.Fatal(err)
		}
		withEpoch.Epoch, withEpoch.SourceSeq, fromTurns.SourceSeq = epoch, last, last
	}
}
