package db_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWithPostgresRestartsPgBouncer runs scripts/with-postgres.sh on a
// cluster of its own and kills its PgBouncer twice in the middle of the
// command, as Debian 12's PgBouncer 1.18 exits on its own under a cancel
// race. Each time the pooler must accept queries again within seconds, and
// both exits must be reported at the end of the run rather than passed
// over. It needs PostgreSQL's server binaries and pgbouncer; the short
// suite skips it.
func TestWithPostgresRestartsPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own; not in the short suite")
	}
	if _, err := exec.LookPath("pgbouncer"); err != nil {
		if _, err := os.Stat("/usr/sbin/pgbouncer"); err != nil {
			t.Skip("pgbouncer is not installed")
		}
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
		if _, err := exec.LookPath("initdb"); err != nil {
			t.Skip("PostgreSQL's server binaries (initdb) are not installed")
		}
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed")
	}
	// Inside the script, twice (the watch must go on after a restart):
	// find the live PgBouncer listening on the pooler URL's port by its
	// configuration, kill it, then query through the pooler until it
	// answers (at most 10 s).
	const inner = `
set -u
port="${STRATA_PGBOUNCER_URL##*@}"; port="${port%%/*}"; port="${port##*:}"
psql "$STRATA_PGBOUNCER_URL" -Atqc 'SELECT 1' >/dev/null || { echo "pooler not answering before the kill"; exit 4; }
for round in 1 2; do
	victim=""
	for pid in $(pgrep -x pgbouncer); do
		ini="$(tr '\0' '\n' <"/proc/$pid/cmdline" | tail -n 1)"
		state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)"
		[ "$state" != Z ] && grep -q "listen_port = $port\$" "$ini" 2>/dev/null && victim="$pid"
	done
	[ -n "$victim" ] || { echo "no PgBouncer on port $port in round $round"; exit 3; }
	kill -KILL "$victim"
	back=""
	for i in $(seq 1 100); do
		if [ "$(psql "$STRATA_PGBOUNCER_URL" -Atqc 'SELECT 41 + 1' 2>/dev/null)" = 42 ]; then
			back=1
			echo "round $round: answered again after $i tries"
			break
		fi
		sleep 0.1
	done
	[ -n "$back" ] || { echo "round $round: the pooler never answered again"; exit 5; }
done
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../scripts/with-postgres.sh", "bash", "-c", inner)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "STRATA_TEST_DATABASE_URL", "STRATA_PGBOUNCER_URL", "STRATA_PG_DURABLE":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out, errOut := stdout.String(), stderr.String()
	if strings.Contains(errOut, "could not start a temporary PostgreSQL") || strings.Contains(errOut, "pooled tests will be skipped") {
		t.Skipf("with-postgres.sh could not start its own cluster and PgBouncer here: %s", errOut)
	}
	if err != nil || !strings.Contains(out, "round 2: answered again") {
		t.Fatalf("with-postgres.sh: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	for _, want := range []string{"exited", "restarting it", "PgBouncer exited during the run and was restarted:", "PgBouncer exit 1 at", "PgBouncer exit 2 at"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	t.Logf("%s", strings.TrimSpace(out))
}
