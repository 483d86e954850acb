package dbtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
)

// EnvCitusURL names the Citus coordinator the Citus tests use, as its
// postgres superuser's URL; scripts/with-citus.sh starts a three-node
// cluster and sets it.
const EnvCitusURL = "CITUS_URL"

// CitusSkipMessage is the reason the Citus tests give without a cluster.
const CitusSkipMessage = "Citus tests skipped: set " + EnvCitusURL +
	" to a Citus coordinator (scripts/with-citus.sh starts a three-node cluster)"

// NewCitusSchema creates a fresh schema on the Citus coordinator of
// CITUS_URL, migrates it and distributes it (db.Distribute), and drops it
// when the test ends. Without CITUS_URL the test is skipped.
func NewCitusSchema(t testing.TB) Schema {
	t.Helper()
	base := strings.TrimSpace(os.Getenv(EnvCitusURL))
	if base == "" {
		t.Skip(CitusSkipMessage)
	}
	admin := adminPool(t, base)
	name := schemaName(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(name)); err != nil {
		t.Fatalf("dbtest: create schema %s on Citus: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		_, _ = admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1 AND pid <> pg_backend_pid()`, name)
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pq.QuoteIdentifier(name)+" CASCADE"); err != nil {
			t.Errorf("dbtest: drop schema %s on Citus: %v", name, err)
		}
	})
	u, err := db.WithDSNParams(base, map[string]string{"search_path": name, "application_name": name})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	d, err := db.Open(ctx, u)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("dbtest: migrate schema %s on Citus: %v", name, err)
	}
	if err := db.Distribute(ctx, d); err != nil {
		t.Fatalf("dbtest: distribute schema %s: %v", name, err)
	}
	return Schema{Name: name, URL: u}
}
