#!/usr/bin/env bash
# Runs the project's tests, the PostgreSQL ones for real (the database is
# found or started by scripts/with-postgres.sh: DATABASE_URL, else a server
# on 127.0.0.1:5432, else a throwaway initdb cluster), and, on a full run,
# db's Citus tests on a throwaway Citus cluster (scripts/with-citus.sh)
# when Citus is installed.
#
# A full run (no arguments) first runs scripts/lint.sh (staticcheck, import
# grouping, go mod tidy), then the short suite five times in a row without
# a database (go test -count=5 -short ./..., the suite of a clean
# checkout, where the PostgreSQL tests skip: a test that fails one run in
# five fails here), then everything once with the race detector and the
# database.
#
#   scripts/test.sh                    # lint, five short runs, go test -race -count=1 ./...
#   scripts/test.sh -run Tail -v       # extra flags are passed to go test
#   scripts/test.sh ./db/... -bench .  # a first argument that is not a flag
#                                      # replaces ./... (packages + flags)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

full=0
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	args=("$@")
else
	args=(./... "$@")
	[ $# -eq 0 ] && full=1
fi

if [ "$full" = 1 ]; then
	status=0
	scripts/lint.sh || status=$?
	# CI=false: without a database the PostgreSQL tests skip instead of
	# failing as they do under CI=true; the race run below runs them.
	echo "test.sh: go test -count=5 -short ./... (no database)" >&2
	began=$SECONDS
	env -u DATABASE_URL -u STRATA_TEST_DATABASE_URL -u STRATA_PGBOUNCER_URL CI=false \
		go test -count=5 -short ./... || status=$?
	echo "test.sh: the five short runs took $((SECONDS - began)) s (load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))" >&2
	[ "$status" = 0 ] || exit "$status"
fi

# The server-restart fault test needs the server to itself: it runs alone,
# after everything else, on a private server only, and only for a full run.
exec scripts/with-postgres.sh bash -c '
	full=$1
	shift
	echo "test.sh: go test -race -count=1 $*" >&2
	status=0
	go test -race -count=1 "$@" || status=$?
	# bench/peers (the section-13 peer harness) is a module of its own,
	# outside ./...: vet and test it too on a full run.
	if [ "$full" = 1 ]; then
		echo "test.sh: bench/peers: go vet ./... && go test -race -count=1 ./..." >&2
		(cd bench/peers && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...) || status=$?
	fi
	# The Citus tests (TestCitus* of db and server, and bench section 16 in
	# quick mode) on a throwaway three-node Citus cluster that
	# scripts/with-citus.sh starts when Citus is installed (one line says
	# they are skipped otherwise).
	if [ "$full" = 1 ]; then
		echo "test.sh: Citus: go test -race -count=1 -run ^TestCitus|^TestSection16Quick$ ./db/ ./server/ ./bench/internal/runner/" >&2
		scripts/with-citus.sh go test -race -count=1 -run "^TestCitus|^TestSection16Quick$" ./db/ ./server/ ./bench/internal/runner/ || status=$?
	fi
	if [ "$full" = 1 ] && [ -n "${STRATA_PG_RESTART_CMD:-}" ]; then
		echo "test.sh: server restart test (restarts the private server)" >&2
		STRATA_TEST_PG_RESTART="$STRATA_PG_RESTART_CMD" go test -race -count=1 -run "^TestServerRestartUnderLoad$" -v ./db/ || status=$?
	fi
	exit "$status"
' test.sh "$full" "${args[@]}"
