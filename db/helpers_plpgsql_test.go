package db_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lib/pq"
)

// TestHelpersPLpgSQLSameResults: migration 20 rewrote the helpers
// strata_journal_sum and strata_merge_participants in PL/pgSQL around
// the same query. On random arguments — totals with keys on one side,
// both or neither, NULL and empty objects, counters up to 2^40 and
// negative; participant lists in several scripts, with repeats, full,
// empty, and limits below, at and above their length — each returns
// what its SQL version of migrations 16 and 15 (created here under
// another name from the down migration) returns.
func TestHelpersPLpgSQLSameResults(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	down, err := os.ReadFile("migrations/000020_helpers_plpgsql.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	old := strings.NewReplacer("strata_journal_sum(", "old_journal_sum(", "strata_merge_participants(", "old_merge_participants(").Replace(string(down))
	if _, err := f.d.ExecContext(ctx, old); err != nil {
		t.Fatalf("creating the SQL versions: %v", err)
	}
	var langs []string
	if err := f.d.SelectContext(ctx, &langs, `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.proname IN ('strata_journal_sum', 'strata_merge_participants') AND p.pronamespace = current_schema()::regnamespace ORDER BY p.proname`); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(langs, []string{"plpgsql", "plpgsql"}) {
		t.Fatalf("helpers' languages after migrating up: %v, want plpgsql for both", langs)
	}

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	keys := []string{"calls", "folds", "records", "fallbacks", "failed_folds", "input_tokens", "output_tokens", "estimated_input_tokens", "ключ", "キー"}
	totals := func() any {
		switch rng.IntN(8) {
		case 0:
			return nil // SQL NULL
		case 1:
			return "{}"
		}
		m := map[string]int64{}
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				v := rng.Int64N(1 << 40)
				if rng.IntN(6) == 0 {
					v = -v
				}
				m[k] = v
			}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for i := range 300 {
		a, b := totals(), totals()
		var got, want string
		if err := f.d.GetContext(ctx, &got, `SELECT strata_journal_sum($1::jsonb, $2::jsonb)::text`, a, b); err != nil {
			t.Fatalf("case %d: strata_journal_sum(%v, %v): %v", i, a, b, err)
		}
		if err := f.d.GetContext(ctx, &want, `SELECT old_journal_sum($1::jsonb, $2::jsonb)::text`, a, b); err != nil {
			t.Fatalf("case %d: old_journal_sum(%v, %v): %v", i, a, b, err)
		}
		if got != want {
			t.Fatalf("case %d: strata_journal_sum(%v, %v) = %s, the SQL version %s", i, a, b, got, want)
		}
	}

	names := []string{"u1", "u2", "agent", "김민준", "佐藤", "Zoë", "", "u1 ", "a\tb"}
	list := func() []string {
		n := rng.IntN(6)
		out := make([]string, 0, n)
		for range n {
			out = append(out, names[rng.IntN(len(names))])
		}
		return out
	}
	for i := range 300 {
		cur, next, limit := list(), list(), rng.IntN(8)
		var got, want pq.StringArray
		if err := f.d.GetContext(ctx, &got, `SELECT strata_merge_participants($1::text[], $2::text[], $3)`, pq.StringArray(cur), pq.StringArray(next), limit); err != nil {
			t.Fatalf("case %d: strata_merge_participants(%q, %q, %d): %v", i, cur, next, limit, err)
		}
		if err := f.d.GetContext(ctx, &want, `SELECT old_merge_participants($1::text[], $2::text[], $3)`, pq.StringArray(cur), pq.StringArray(next), limit); err != nil {
			t.Fatalf("case %d: old_merge_participants: %v", i, err)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("case %d: strata_merge_participants(%q, %q, %d) = %q, the SQL version %q", i, cur, next, limit, got, want)
		}
	}
}
