package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/bench/internal/runner"
)

// databaseURL returns the test database or skips.
func databaseURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Skip("no PostgreSQL: DATABASE_URL is unset (scripts/test.sh sets it)")
	}
	return u
}

// tempSchema creates a schema for one test and drops it afterwards.
func tempSchema(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	name := "peers_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE; CREATE SCHEMA "`+name+`"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`) })
	return name
}

// The seeded rows are the rows langchaingo's own AddUserMessage and
// AddAIMessage write: section 15 times loads of what the library would
// have stored.
func TestLangchaingoSeedWritesWhatTheLibraryWrites(t *testing.T) {
	url := databaseURL(t)
	ctx := context.Background()
	schema := tempSchema(t, url)
	for _, indexed := range []bool{false, true} {
		table := "plain"
		if indexed {
			table = "indexed"
		}
		tbl, err := langchaingoHistory().Open(ctx, url, schema, table, indexed)
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Close()
		const filler, n = "lorem ipsum «ünïcode» 'quoted' \"and\" \\ back", 7
		if err := tbl.Seed(ctx, "seeded", n, filler); err != nil {
			t.Fatal(err)
		}
		byAPI, err := tbl.Open(ctx, "by-api")
		if err != nil {
			t.Fatal(err)
		}
		for g := 1; g <= n; g++ {
			text := "message " + itoa(g) + ": " + filler
			if g%2 == 1 {
				err = byAPI.AddUserMessage(ctx, text)
			} else {
				err = byAPI.AddAIMessage(ctx, text)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		seeded, err := tbl.Open(ctx, "seeded")
		if err != nil {
			t.Fatal(err)
		}
		got, err := seeded.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := byAPI.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n || len(want) != n {
			t.Fatalf("indexed=%v: seeded %d messages, by the API %d, want %d", indexed, len(got), len(want), n)
		}
		for i := range got {
			if got[i].GetType() != want[i].GetType() || got[i].GetContent() != want[i].GetContent() {
				t.Fatalf("indexed=%v: message %d: seeded %s %q, by the API %s %q", indexed, i, got[i].GetType(), got[i].GetContent(), want[i].GetType(), want[i].GetContent())
			}
		}
		if got[0].GetType() != llms.ChatMessageTypeHuman {
			t.Fatalf("first seeded message is %s, want human", got[0].GetType())
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// Section 15 runs end to end on a real PostgreSQL: Strata hands the model
// a valid input at every τ-bench turn, and langchaingo's history cannot
// load a session once a tool result is in it.
func TestSection15Quick(t *testing.T) {
	if testing.Short() {
		t.Skip("section 15 smoke run: not in -short")
	}
	url := databaseURL(t)
	dataDir := filepath.Join("..", "..", "..", "shared", "data") // beside the repository, read in place
	for _, f := range []string{data.LoCoMoFile, data.TauBenchFile} {
		if _, err := os.Stat(filepath.Join(dataDir, f)); err != nil {
			t.Skipf("benchmark data not available (%v): read in place from ../shared/data", err)
		}
	}
	rep, err := runner.RunPGHistory(context.Background(), runner.PGHistoryOptions{DatabaseURL: url, DataDir: dataDir, Quick: true}, langchaingoHistory())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Load latency against session length", "### Durable appends", "### Tool rounds", "### Catch-up", "unsupported message type: tool"} {
		if !strings.Contains(rep.Body, want) {
			t.Errorf("section 15 lacks %q", want)
		}
	}
	var strataRow string
	for _, l := range strings.Split(rep.Body, "\n") {
		if strings.HasPrefix(l, "| Strata (chunked, memory on) | ") && strings.Count(l, "|") == 6 {
			strataRow = l
		}
	}
	f := strings.Split(strataRow, " | ")
	if len(f) != 5 || f[1] != f[2] || f[3] != "0" || strings.TrimSuffix(f[4], " |") != "0" {
		t.Errorf("Strata's tool-round row: %q, want every turn valid", strataRow)
	}
	if len(rep.Files["load-vs-langchaingo.svg"]) == 0 {
		t.Error("no load plot")
	}
	if len(rep.Headlines) != 4 {
		t.Errorf("%d headlines, want 4: %q", len(rep.Headlines), rep.Headlines)
	}
}
