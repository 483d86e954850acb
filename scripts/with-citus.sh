#!/usr/bin/env bash
# Runs a command with a throwaway three-node Citus cluster (a coordinator
# and two workers) whose coordinator's URL is in CITUS_URL, and stops and
# removes the cluster afterwards:
#
#   scripts/with-citus.sh go test -count=1 -run Citus ./db/
#
# The nodes are PostgreSQL clusters initdb'ed in a mktemp directory, each
# on a free port of 127.0.0.1 with its socket in that directory, with
# shared_preload_libraries = citus and wal_level = logical (shard moves
# replicate logically). When root, they run as the postgres OS user (or a
# system user strata-pg). Each has a database strata_test with the citus
# extension; the nodes reach each other with the password of the postgres
# role, kept in pg_dist_authinfo. citus.shard_count is 4 on a test cluster
# (tests make a distributed schema each); a durable one (benchmarks) keeps
# Citus's default of 32, as a deployment does.
#
# What a deployment of Strata on Citus needs of its nodes is what this
# script sets: shared_preload_libraries = citus on every node, wal_level =
# logical (shard moves, citus_move_shard_placement, replicate logically),
# the citus extension in Strata's database on every node, and the nodes
# reaching each other (pg_dist_authinfo here; .pgpass or certificates
# elsewhere). Citus's other defaults are kept (citus.node_conninfo
# sslmode=require between nodes, one cached connection per worker and
# coordinator backend), and bench section 16 measures Strata on them.
#
# Without Citus (no citus.so in the server's library directory) the
# command runs without CITUS_URL, and the Citus tests and bench section 16
# skip (one line says so). An existing CITUS_URL is used as is.
#
# A cluster runs with fsync, synchronous_commit and full_page_writes off
# unless STRATA_PG_DURABLE=1 (benchmarks: make bench), as
# scripts/with-postgres.sh.
#
# The command's exit status is the script's.
#
# Environment: CITUS_URL, STRATA_PG_DURABLE.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'with-citus.sh: %s\n' "$*" >&2; }

if [ $# -eq 0 ]; then
	log "usage: scripts/with-citus.sh COMMAND [ARGS...]"
	exit 2
fi

is_root() { [ "$(id -u)" = 0 ]; }

# pg_bindir prints the directory holding initdb and pg_ctl, or fails.
pg_bindir() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

run_plain() {
	local status=0
	"$@" || status=$?
	exit "$status"
}

if [ -n "${CITUS_URL:-}" ]; then
	log "using CITUS_URL from the environment"
	run_plain "$@"
fi

bindir="$(pg_bindir || true)"
if [ -z "$bindir" ]; then
	log "PostgreSQL is not installed: the Citus tests and bench section will be skipped"
	run_plain "$@"
fi
libdir="$("$bindir/pg_config" --pkglibdir 2>/dev/null || echo "$(dirname "$bindir")/lib")"
if [ ! -f "$libdir/citus.so" ]; then
	log "Citus is not installed ($libdir/citus.so missing): the Citus tests and bench section will be skipped"
	run_plain "$@"
fi

PG_OS_USER=""
as_pg() {
	if [ -n "$PG_OS_USER" ]; then
		runuser -u "$PG_OS_USER" -- "$@"
	else
		"$@"
	fi
}

random_hex() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

CLEANUP=()
cleanup() {
	local i
	for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUP[$i]}" || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tmp="$(mktemp -d "${TMPDIR:-/tmp}/strata-citus.XXXXXX")"
CLEANUP+=("rm -rf ${tmp@Q}")
if is_root; then
	if id postgres >/dev/null 2>&1; then
		PG_OS_USER=postgres
	else
		PG_OS_USER=strata-pg
		id "$PG_OS_USER" >/dev/null 2>&1 ||
			useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_OS_USER"
	fi
fi
pass="$(random_hex)$(random_hex)"
printf '%s\n' "$pass" >"$tmp/pwfile"
mkdir -p "$tmp/sock"
[ -n "$PG_OS_USER" ] && chown -R "$PG_OS_USER" "$tmp"
chmod 700 "$tmp"

durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
shards=4
if [ "${STRATA_PG_DURABLE:-}" = 1 ]; then
	durability=""
	shards=32
fi

psql_node() { # psql_node PORT SQL
	as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/sock" -p "$1" -U postgres -d strata_test -c "$2" </dev/null
}

# start_node NAME starts a node and sets NODE_PORT to the port it listens
# on. (Not run in a command substitution: its cleanup must be registered in
# this shell.)
NODE_PORT=""
start_node() {
	local name="$1" port try
	if ! as_pg "$bindir/initdb" -D "$tmp/$name" -U postgres --pwfile="$tmp/pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync \
		>"$tmp/$name-initdb.log" 2>&1 </dev/null; then
		cat "$tmp/$name-initdb.log" >&2
		return 1
	fi
	for try in $(seq 1 20); do
		port=$((20000 + RANDOM % 40000))
		port_in_use "$port" && continue
		if as_pg "$bindir/pg_ctl" -D "$tmp/$name" -l "$tmp/$name.log" -w -t 120 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $tmp/sock -c max_connections=300 \
				-c shared_preload_libraries=citus -c wal_level=logical -c citus.shard_count=$shards \
				-c shared_buffers=64MB $durability" \
			start >/dev/null </dev/null; then
			CLEANUP+=("as_pg ${bindir@Q}/pg_ctl -D ${tmp@Q}/$name -m immediate -w stop >/dev/null 2>&1 </dev/null")
			NODE_PORT="$port"
			return 0
		fi
		tail -n 5 "$tmp/$name.log" >&2 || true
	done
	return 1
}

log "starting a three-node Citus cluster ($bindir) in $tmp${durability:+ (non-durable: fsync off)}"
ports=()
for name in coordinator worker1 worker2; do
	start_node "$name" || {
		log "could not start the Citus node $name"
		exit 1
	}
	port="$NODE_PORT"
	ports+=("$port")
	as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/sock" -p "$port" -U postgres -d postgres \
		-c 'CREATE DATABASE strata_test' </dev/null
	psql_node "$port" 'CREATE EXTENSION citus'
	# Every node reaches every other with the postgres role's password.
	psql_node "$port" "INSERT INTO pg_dist_authinfo (nodeid, rolename, authinfo) VALUES (0, 'postgres', 'password=$pass')"
done
rm -f "$tmp/pwfile"
psql_node "${ports[0]}" "SELECT citus_set_coordinator_host('127.0.0.1', ${ports[0]})" >/dev/null
for port in "${ports[@]:1}"; do
	psql_node "${ports[0]}" "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null
done
export CITUS_URL="postgres://postgres:$pass@127.0.0.1:${ports[0]}/strata_test?sslmode=disable"
log "Citus coordinator on 127.0.0.1:${ports[0]}, workers on ${ports[*]:1}"

status=0
"$@" || status=$? # not exec: the EXIT trap must still clean up
exit "$status"
