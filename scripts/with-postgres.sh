#!/usr/bin/env bash
# Runs a command with a PostgreSQL database in DATABASE_URL, found or
# started for it, and cleans up afterwards:
#
#   scripts/with-postgres.sh go test ./db/...
#   scripts/with-postgres.sh go run ./bench/cmd/strata-bench -out bench
#
# PostgreSQL is found or started, in this order:
#   1. DATABASE_URL is set: it is used as is.
#   2. A server answers on 127.0.0.1:5432 and we can administer it (PGUSER /
#      PGPASSWORD, or the postgres OS user through its socket when root): a
#      throwaway database (and, when root, a throwaway login role) is created
#      there and dropped on exit.
#   3. Otherwise a temporary cluster is initdb'ed in a mktemp directory on a
#      free port, listening on 127.0.0.1 only with its socket in that
#      directory, and stopped and removed on exit.
# With no PostgreSQL installed, CI=true installs Debian's postgresql package;
# elsewhere the database tests are skipped (one line says so).
#
# The command's exit status is the script's. With a private cluster,
# STRATA_PG_RESTART_CMD holds the command that restarts it (for the
# server-restart fault test).
#
# A private cluster runs with fsync, synchronous_commit and
# full_page_writes off (fast tests, nothing worth keeping); with
# STRATA_PG_DURABLE=1 it keeps PostgreSQL's durable defaults (make bench).
#
# PgBouncer: in front of a server found or started here (cases 2 and 3),
# a PgBouncer (Debian's pgbouncer package; CI=true installs it) is started
# on a free port of 127.0.0.1 in transaction mode, with
# ignore_startup_parameters = extra_float_digits and nothing more (what a
# strict production pooler allows), SCRAM authentication and, as the
# cluster, run by the postgres OS user when root. Its URL, for the same
# user, password and database as DATABASE_URL, is exported as
# STRATA_PGBOUNCER_URL; pooled tests connect to other databases of the
# server through it (its [databases] entry is "*"). When DATABASE_URL is
# given, STRATA_PGBOUNCER_URL may be given too; otherwise, or without
# pgbouncer installed, the pooled tests are skipped (one line says so).
#
# Environment: DATABASE_URL, STRATA_PGBOUNCER_URL, PGUSER/PGPASSWORD
# (case 2), CI, STRATA_PG_DURABLE.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'with-postgres.sh: %s\n' "$*" >&2; }

is_root() { [ "$(id -u)" = 0 ]; }

# Functions below run in `if`/`||` contexts, where `set -e` does not apply:
# every step that can fail is checked explicitly.

# pg_tool NAME BINDIR prints the path of a PostgreSQL client program,
# preferring the one beside the server binaries.
pg_tool() {
	if [ -x "$2/$1" ]; then
		echo "$2/$1"
	else
		command -v "$1"
	fi
}

# pg_bindir prints the directory holding initdb and pg_ctl, or fails.
pg_bindir() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		# Resolve symlinks (/usr/local/bin/initdb → /usr/lib/postgresql/15/bin)
		# so that psql and pg_isready of the same version sit beside it.
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

install_postgres() {
	log "PostgreSQL not found; installing Debian's postgresql package (CI=true)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null
	apt-get install -y -qq postgresql </dev/null >/dev/null
}

# Runs a command as the unprivileged cluster owner when we are root
# (initdb and postgres refuse to run as root).
PG_OS_USER=""
RESTART_CMD=""
as_pg() {
	if [ -n "$PG_OS_USER" ]; then
		runuser -u "$PG_OS_USER" -- "$@"
	else
		"$@"
	fi
}

# as_pg_cmd prints the prefix that as_pg would use, for commands run later
# by another program.
as_pg_cmd() {
	if [ -n "$PG_OS_USER" ]; then
		printf 'runuser -u %q --' "$PG_OS_USER"
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

# --- case 2: a server on 127.0.0.1:5432 ------------------------------------
try_existing_server() {
	local bindir="$1" isready psql
	isready="$(pg_tool pg_isready "$bindir")" || return 1
	psql="$(pg_tool psql "$bindir")" || return 1
	"$isready" -q -h 127.0.0.1 -p 5432 || return 1

	local dbname="strata_test_$(random_hex)"
	local -a admin
	if [ -n "${PGUSER:-}" ]; then
		admin=("$psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -d postgres)
	elif is_root && id postgres >/dev/null 2>&1; then
		admin=(runuser -u postgres -- "$psql" -X -q -v ON_ERROR_STOP=1 -p 5432 -d postgres)
	else
		admin=("$psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -d postgres)
	fi
	if ! "${admin[@]}" -c 'SELECT 1' >/dev/null 2>&1 </dev/null; then
		log "a server answers on 127.0.0.1:5432 but cannot be administered from here; starting a private one"
		return 1
	fi

	if [ -n "${PGUSER:-}" ]; then
		"${admin[@]}" -c "CREATE DATABASE \"$dbname\"" </dev/null || return 1
		CLEANUP+=("${admin[*]@Q} -c 'DROP DATABASE IF EXISTS \"$dbname\" WITH (FORCE)' </dev/null")
		local pw=""
		[ -n "${PGPASSWORD:-}" ] && pw=":$(urlencode "$PGPASSWORD")"
		DATABASE_URL="postgres://$(urlencode "$PGUSER")${pw}@127.0.0.1:5432/$dbname?sslmode=disable"
		PG_USER="$PGUSER" PG_PASS="${PGPASSWORD:-}"
	else
		local role="$dbname" pass
		pass="$(random_hex)$(random_hex)"
		# CREATEDB: pooled tests make a database of their own each.
		"${admin[@]}" -c "CREATE ROLE \"$role\" LOGIN CREATEDB PASSWORD '$pass'" </dev/null || return 1
		CLEANUP+=("${admin[*]@Q} -c 'DROP ROLE IF EXISTS \"$role\"' </dev/null")
		"${admin[@]}" -c "CREATE DATABASE \"$dbname\" OWNER \"$role\"" </dev/null || return 1
		CLEANUP+=("${admin[*]@Q} -c 'DROP DATABASE IF EXISTS \"$dbname\" WITH (FORCE)' </dev/null")
		DATABASE_URL="postgres://$role:$pass@127.0.0.1:5432/$dbname?sslmode=disable"
		PG_USER="$role" PG_PASS="$pass"
	fi
	PG_PORT=5432 PG_DB="$dbname"
	log "using the server on 127.0.0.1:5432, throwaway database $dbname"
	return 0
}

urlencode() {
	local s="$1" out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c="${s:i:1}"
		case "$c" in
		[a-zA-Z0-9._~-]) out+="$c" ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# --- case 3: a private temporary cluster -----------------------------------
start_private_cluster() {
	local bindir="$1" tmp port pass try psql
	psql="$(pg_tool psql "$bindir")" || return 1
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/strata-pg.XXXXXX")" || return 1
	CLEANUP+=("rm -rf ${tmp@Q}")
	if is_root; then
		if id postgres >/dev/null 2>&1; then
			PG_OS_USER=postgres
		else
			PG_OS_USER=strata-pg
			id "$PG_OS_USER" >/dev/null 2>&1 ||
				useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_OS_USER" || return 1
		fi
	fi
	pass="$(random_hex)$(random_hex)"
	printf '%s\n' "$pass" >"$tmp/pwfile" || return 1
	mkdir -p "$tmp/sock" || return 1
	if [ -n "$PG_OS_USER" ]; then
		chown -R "$PG_OS_USER" "$tmp" || return 1
	fi
	chmod 700 "$tmp" || return 1

	# Tests trade durability for speed; STRATA_PG_DURABLE=1 (make bench)
	# keeps PostgreSQL's defaults: fsync, synchronous_commit and
	# full_page_writes on.
	local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	if [ "${STRATA_PG_DURABLE:-}" = 1 ]; then
		durability=""
	fi
	log "starting a temporary PostgreSQL cluster ($bindir) in $tmp${durability:+ (non-durable: fsync off)}"
	if ! as_pg "$bindir/initdb" -D "$tmp/data" -U postgres --pwfile="$tmp/pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync \
		>"$tmp/initdb.log" 2>&1 </dev/null; then
		cat "$tmp/initdb.log" >&2
		return 1
	fi
	rm -f "$tmp/pwfile"

	for try in $(seq 1 20); do
		port=$((20000 + RANDOM % 40000))
		port_in_use "$port" && continue
		if as_pg "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $tmp/sock -c max_connections=300 $durability" \
			start >/dev/null </dev/null; then
			CLEANUP+=("as_pg ${bindir@Q}/pg_ctl -D ${tmp@Q}/data -m immediate -w stop >/dev/null 2>&1 </dev/null")
			as_pg "$psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/sock" -p "$port" -U postgres -d postgres \
				-c 'CREATE DATABASE strata_test' </dev/null || return 1
			DATABASE_URL="postgres://postgres:$pass@127.0.0.1:$port/strata_test?sslmode=disable"
			PG_USER=postgres PG_PASS="$pass" PG_PORT="$port" PG_DB=strata_test
			RESTART_CMD="$(as_pg_cmd) ${bindir@Q}/pg_ctl -D ${tmp@Q}/data -l ${tmp@Q}/server.log -m fast -w -t 60 restart"
			log "temporary server on 127.0.0.1:$port"
			return 0
		fi
		log "could not start on port $port (try $try), retrying"
		tail -n 5 "$tmp/server.log" >&2 || true
	done
	return 1
}

# --- PgBouncer in front of the server found or started ----------------------
PG_USER="" PG_PASS="" PG_PORT="" PG_DB=""

# start_pgbouncer starts PgBouncer in transaction mode in front of
# 127.0.0.1:$PG_PORT and sets PGBOUNCER_URL.
start_pgbouncer() {
	local bin tmp port try
	bin="$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null)" || return 1
	if [ -z "$PG_PASS" ]; then
		log "no password for $PG_USER: PgBouncer not started, pooled tests will be skipped"
		return 1
	fi
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/strata-pgbouncer.XXXXXX")" || return 1
	CLEANUP+=("rm -rf ${tmp@Q}")
	# A userlist entry with the password in clear lets PgBouncer check
	# clients with SCRAM and log in to the server with the same password.
	printf '"%s" "%s"\n' "$PG_USER" "$PG_PASS" >"$tmp/userlist.txt" || return 1
	for try in $(seq 1 20); do
		port=$((20000 + RANDOM % 40000))
		port_in_use "$port" && continue
		cat >"$tmp/pgbouncer.ini" <<-INI || return 1
			[databases]
			* = host=127.0.0.1 port=$PG_PORT
			[pgbouncer]
			listen_addr = 127.0.0.1
			listen_port = $port
			unix_socket_dir =
			auth_type = scram-sha-256
			auth_file = $tmp/userlist.txt
			pool_mode = transaction
			ignore_startup_parameters = extra_float_digits
			max_client_conn = 2000
			default_pool_size = 40
			logfile = $tmp/pgbouncer.log
			pidfile = $tmp/pgbouncer.pid
		INI
		if [ -n "$PG_OS_USER" ]; then
			chown -R "$PG_OS_USER" "$tmp" || return 1
		elif is_root && id postgres >/dev/null 2>&1; then
			# PgBouncer refuses to run as root.
			PG_OS_USER=postgres
			chown -R postgres "$tmp" || return 1
		fi
		chmod 700 "$tmp" || return 1
		if run_pgbouncer "$bin" "$tmp" && wait_listening "$port"; then
			CLEANUP+=("[ -f ${tmp@Q}/pgbouncer.pid ] && kill \$(cat ${tmp@Q}/pgbouncer.pid) 2>/dev/null; sleep 0.2")
			watch_pgbouncer "$bin" "$tmp" "$port" &
			PGB_WATCHER=$!
			CLEANUP+=("kill $PGB_WATCHER 2>/dev/null; wait $PGB_WATCHER 2>/dev/null; report_pgbouncer_restarts ${tmp@Q}")
			PGBOUNCER_URL="postgres://$(urlencode "$PG_USER"):$(urlencode "$PG_PASS")@127.0.0.1:$port/$PG_DB?sslmode=disable"
			log "PgBouncer (transaction mode) on 127.0.0.1:$port"
			return 0
		fi
		[ -f "$tmp/pgbouncer.pid" ] && kill "$(cat "$tmp/pgbouncer.pid")" 2>/dev/null
		tail -n 5 "$tmp/pgbouncer.log" >&2 2>/dev/null || true
	done
	return 1
}

# run_pgbouncer starts PgBouncer $1 as a daemon with the configuration in
# directory $2, its file descriptor limit raised to the hard limit (a soft
# limit of 1024 is below what max_client_conn asks for).
run_pgbouncer() {
	# Raised in the shell that becomes PgBouncer: runuser resets limits.
	as_pg sh -c 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" -d -q "$1"' \
		"$1" "$2/pgbouncer.ini" </dev/null >/dev/null 2>&1
}

# wait_listening waits up to 5 s for something to accept connections on
# 127.0.0.1:$1.
wait_listening() {
	local i
	for i in $(seq 1 50); do
		port_in_use "$1" && return 0
		sleep 0.1
	done
	return 1
}

# watch_pgbouncer restarts PgBouncer (binary $1, directory $2, port $3)
# when it exits during the run, at most 20 times, and records each exit in
# $2/restarts. Debian 12's PgBouncer 1.18 exits ("server_proto: server in
# bad state") when a server connection receives a message while a cancel
# request for it is still in flight, as when a test's database is dropped
# with FORCE just after a cancelled query; PgBouncer 1.21 fixed it. Without
# the restart, every pooled test after such an exit fails on "connection
# refused"; with it, the exit is reported at the end of the run (never
# silent) and the tests after it run. Killed by the cleanup.
watch_pgbouncer() {
	local bin="$1" tmp="$2" port="$3" pid n=0
	# Once a second, with shell builtins only (one sleep), so that the
	# watch adds nothing measurable to a benchmark run beside it.
	while sleep 1; do
		pid=""
		read -r pid <"$tmp/pgbouncer.pid" 2>/dev/null || true
		alive "$pid" && continue
		n=$((n + 1))
		{
			printf 'PgBouncer exit %d at %s; its last log lines:\n' "$n" "$(date -u +%T)"
			tail -n 4 "$tmp/pgbouncer.log" 2>/dev/null
		} >>"$tmp/restarts"
		if [ "$n" -gt 20 ]; then
			log "PgBouncer on port $port exited a 21st time: not restarting it again"
			return
		fi
		log "PgBouncer on port $port exited ($(grep -h -o 'FATAL.*' "$tmp/pgbouncer.log" 2>/dev/null | tail -n 1)); restarting it"
		rm -f "$tmp/pgbouncer.pid"
		run_pgbouncer "$bin" "$tmp" && wait_listening "$port" ||
			log "PgBouncer did not restart on port $port"
	done
}

# alive tells whether process $1 runs: it exists and is not a zombie (a
# daemon whose parent exited may stay one where nothing reaps orphans).
# The state is the third field of /proc/PID/stat, read without a fork.
alive() {
	local _pid _comm state
	[ -n "$1" ] && read -r _pid _comm state _ <"/proc/$1/stat" 2>/dev/null && [ "$state" != Z ]
}

# report_pgbouncer_restarts prints what watch_pgbouncer recorded in $1.
report_pgbouncer_restarts() {
	[ -s "$1/restarts" ] || return 0
	log "PgBouncer exited during the run and was restarted:"
	sed 's/^/    /' "$1/restarts" >&2
}

install_pgbouncer() {
	log "PgBouncer not found; installing Debian's pgbouncer package (CI=true)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null
	apt-get install -y -qq pgbouncer </dev/null >/dev/null
}

# --- find or start ---------------------------------------------------------
if [ -n "${DATABASE_URL:-}" ]; then
	log "using DATABASE_URL from the environment"
else
	bindir="$(pg_bindir || true)"
	if [ -z "$bindir" ] && [ "${CI:-}" = true ]; then
		install_postgres
		bindir="$(pg_bindir || true)"
	fi
	if [ -z "$bindir" ]; then
		if command -v pg_isready >/dev/null 2>&1 && try_existing_server /nonexistent; then
			:
		else
			log "PostgreSQL is not installed: database tests will be skipped (install postgresql, or set DATABASE_URL)"
		fi
	elif ! try_existing_server "$bindir"; then
		start_private_cluster "$bindir" || {
			log "could not start a temporary PostgreSQL"
			exit 1
		}
	fi
fi
[ -n "${DATABASE_URL:-}" ] && export DATABASE_URL

PGBOUNCER_URL="${STRATA_PGBOUNCER_URL:-}"
if [ -n "$PGBOUNCER_URL" ]; then
	log "using STRATA_PGBOUNCER_URL from the environment"
elif [ -n "$PG_PORT" ]; then
	if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ] && [ "${CI:-}" = true ] && is_root; then
		install_pgbouncer
	fi
	if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
		log "PgBouncer is not installed: pooled tests will be skipped (install pgbouncer)"
	elif ! start_pgbouncer; then
		log "could not start PgBouncer: pooled tests will be skipped"
		PGBOUNCER_URL=""
	fi
elif [ -n "${DATABASE_URL:-}" ]; then
	log "DATABASE_URL given without STRATA_PGBOUNCER_URL: pooled tests will be skipped"
fi
[ -n "$PGBOUNCER_URL" ] && export STRATA_PGBOUNCER_URL="$PGBOUNCER_URL"
[ -n "${RESTART_CMD:-}" ] && export STRATA_PG_RESTART_CMD="$RESTART_CMD"

if [ $# -eq 0 ]; then
	log "usage: scripts/with-postgres.sh COMMAND [ARGS...]"
	exit 2
fi
status=0
"$@" || status=$? # not exec: the EXIT trap must still clean up
exit "$status"
