package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/db/dbtest"
)

// TestSection16Quick runs section 16 end to end on the Citus cluster of
// CITUS_URL beside the PostgreSQL of DATABASE_URL (scripts/with-postgres.sh
// scripts/with-citus.sh): the statements Strata sends for a load, an
// append and a fold are each planned on one shard (the section fails
// otherwise), and the load and append tables have a row for both
// databases. It asserts no timing.
func TestSection16Quick(t *testing.T) {
	if strings.TrimSpace(os.Getenv(dbtest.EnvCitusURL)) == "" {
		t.Skip("section 16 skipped: " + dbtest.CitusSkipMessage)
	}
	if strings.TrimSpace(os.Getenv("DATABASE_URL")) == "" {
		t.Skip("section 16 skipped: DATABASE_URL is unset (the ratios need plain PostgreSQL beside Citus)")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := Run(ctx, Options{
		OutDir:      out,
		DatabaseURL: os.Getenv("DATABASE_URL"),
		CitusURL:    os.Getenv(dbtest.EnvCitusURL),
		Sections:    []int{16},
		Quick:       true,
		Command:     "go test ./bench/...",
		Progress:    &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	b, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	if len(res.Failed) > 0 {
		t.Fatalf("section 16 failed:\n%s", report)
	}
	for _, want := range []string{"### Single-shard plans", "### Load latency", "### Durable appends", "the hop's floor: one prepared primary-key read", "floor: bare two-row insert", "The floor on Citus ÷ the floor on plain PostgreSQL:", "Function Scan on strata_append", "Function Scan on strata_tail", "Function Scan on strata_save_summary"} {
		if !strings.Contains(report, want) {
			t.Errorf("section 16 lacks %q", want)
		}
	}
	ops := map[string]int{}
	for _, l := range strings.Split(report, "\n") {
		f := strings.Split(l, " | ")
		if len(f) == 4 && strings.HasSuffix(f[3], "yes |") {
			ops[strings.TrimPrefix(f[0], "| ")]++
		}
	}
	for _, op := range []string{"append", "fold", "load"} {
		if ops[op] == 0 {
			t.Errorf("no %s statement checked single-shard: %v", op, ops)
		}
	}
	for _, db := range []string{"| plain PostgreSQL | steady", "| Citus | cold", "| 32 | Citus |", "| 1 | plain PostgreSQL |"} {
		if !strings.Contains(report, db) {
			t.Errorf("section 16 lacks a row %q", db)
		}
	}
	if len(res.Headlines) != 2 {
		t.Errorf("%d headlines, want 2: %q", len(res.Headlines), res.Headlines)
	}
}

// TestCitusSingleShardVerdict: the plan check refuses a plan of several
// tasks, a subplan gathered on the coordinator and a function call not
// delegated, and accepts a delegated call.
func TestCitusSingleShardVerdict(t *testing.T) {
	const call = "SELECT * FROM strata_append($1)"
	for _, c := range []struct {
		name, sql, plan string
		ok              bool
	}{
		{"delegated", call, "Custom Scan (Citus Adaptive)\n  Task Count: 1\n  ->  Task\n        ->  Function Scan on strata_append\n", true},
		{"router", "SELECT 1 FROM strata_sessions WHERE session_id = $1", "Custom Scan (Citus Adaptive)\n  Task Count: 1\n", true},
		{"four tasks", "SELECT 1 FROM strata_sessions", "Custom Scan (Citus Adaptive)\n  Task Count: 4\n", false},
		{"subplan", "WITH u AS (UPDATE x) SELECT 1", "Custom Scan (Citus Adaptive)\n  ->  Distributed Subplan 1_1\n  Task Count: 1\n", false},
		{"not delegated", call, "Function Scan on strata_append\n", false},
		{"delegated elsewhere", call, "Custom Scan (Citus Adaptive)\n  Task Count: 1\n  ->  Task\n        ->  Result\n", false},
	} {
		if got := citusSingleShard(c.sql, c.plan); (got == "") != c.ok {
			t.Errorf("%s: verdict %q, want ok=%v", c.name, got, c.ok)
		}
	}
}
