package db_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/summary"
)

// Migration 21 stores a summary's facts with LZ4 where the server has it:
// a ledger large enough to be compressed is written with LZ4 and reads
// back unchanged (random facts in several scripts); migrating down gives
// the column its default again, and up LZ4 once more.
func TestFactsCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	if _, err := f.d.ExecContext(ctx, `CREATE TEMP TABLE lz4_probe (x text COMPRESSION lz4)`); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "0A000" {
			t.Skip("this PostgreSQL has no LZ4: migration 21 keeps pglz (its notice says so)")
		}
		t.Fatal(err)
	}
	compression := func() string {
		t.Helper()
		var c string
		if err := f.d.GetContext(ctx, &c, `SELECT attcompression::text FROM pg_attribute
			WHERE attrelid = 'strata_summaries'::regclass AND attname = 'facts_json'`); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := compression(); c != "l" {
		t.Fatalf("facts_json compression %q after migrating up, want l (LZ4)", c)
	}

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 21))
	words := []string{"Lisbon", "나의 언니 안나", "東京の病院", "order ORD-1234", "  two  spaces ", "tab\there", "émigré", "🙂"}
	res := mustAppend(t, ctx, f.messages, "s", "u", user("q"))
	var facts []summary.Fact
	for i := range 120 {
		v := ""
		for range 1 + rng.IntN(6) {
			v += words[rng.IntN(len(words))] + " "
		}
		facts = append(facts, summary.Fact{Key: fmt.Sprintf("fact_%d_%s", i, words[rng.IntN(len(words))]), Value: v, Category: summary.General})
	}
	want := summary.Summary{SessionID: "s", Epoch: res.Epoch, Narrative: "User: 안녕하세요.", Facts: facts, UpToSeq: res.LastSeq}
	if err := f.sums.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := f.d.GetContext(ctx, &stored, `SELECT COALESCE(pg_column_compression(facts_json), 'inline') FROM strata_summaries WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	if stored != "lz4" {
		t.Fatalf("the facts of a %d-fact ledger are stored %s, want lz4", len(facts), stored)
	}
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil {
		t.Fatal(got, err)
	}
	if len(got.Facts) != len(want.Facts) {
		t.Fatalf("%d facts read back, want %d", len(got.Facts), len(want.Facts))
	}
	for i := range want.Facts {
		g, w := got.Facts[i], want.Facts[i]
		if g.Key != w.Key || g.Value != w.Value || !reflect.DeepEqual(g.Category, w.Category) {
			t.Fatalf("fact %d read back as %+v, want %+v", i, g, w)
		}
	}

	if err := db.MigrateTo(ctx, f.d, 20); err != nil {
		t.Fatal(err)
	}
	if c := compression(); c != "" {
		t.Fatalf("facts_json compression %q after migrating down to 20, want the default", c)
	}
	if again, err := f.sums.Get(ctx, "s"); err != nil || again == nil || len(again.Facts) != len(facts) {
		t.Fatalf("the LZ4 ledger after migrating down: %v, %v", again, err)
	}
	if err := db.Migrate(ctx, f.d); err != nil {
		t.Fatal(err)
	}
	if c := compression(); c != "l" {
		t.Fatalf("facts_json compression %q after migrating up again, want l", c)
	}
}
