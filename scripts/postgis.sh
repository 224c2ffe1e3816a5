#!/usr/bin/env bash
# postgis.sh — a throwaway PostGIS cluster for development, tests and CI.
#
# Usage: scripts/postgis.sh [start|stop|url|status]
#
#   start   (default) install PostgreSQL 15 + PostGIS 3 when missing (root only),
#           run a cluster in .pgdata/ at the repo root, create database "ingestd"
#           with the postgis extension, and print its URL.
#   stop    stop the cluster (its data stays in .pgdata/).
#   url     print the URL without starting anything.
#   status  exit 0 when the cluster is running, 3 when it is not.
#
# Only the URL goes to stdout, so callers can write
#   export DATABASE_URL=$(scripts/postgis.sh)
# Progress goes to stderr.
#
# Environment: INGESTD_PG_PORT (default 55432).
set -euo pipefail

PG_VERSION=15
PG_BIN=/usr/lib/postgresql/${PG_VERSION}/bin
PORT=${INGESTD_PG_PORT:-55432}
DB=ingestd

# Resolve the repo root from the script's own location so the script works
# from any cwd (CI, editors, other packages' test helpers).
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
PGDATA_ROOT=$ROOT/.pgdata
DATA=$PGDATA_ROOT/data
SOCK=$PGDATA_ROOT/run
LOG=$PGDATA_ROOT/postgres.log

URL="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"

log() { printf 'postgis.sh: %s\n' "$*" >&2; }

# as_pg runs a command as the postgres user when we are root (PostgreSQL
# refuses to run as root), and directly otherwise (a developer's own account
# owns .pgdata/ then).
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		if command -v runuser >/dev/null 2>&1; then
			runuser -u postgres -- "$@"
		else
			# su needs one command string; quote every argument.
			su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
		fi
	else
		"$@"
	fi
}

is_running() {
	[[ -f $DATA/PG_VERSION ]] && as_pg "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

install_packages() {
	if [[ -x $PG_BIN/initdb && -f /usr/share/postgresql/${PG_VERSION}/extension/postgis.control ]]; then
		return
	fi
	if [[ $(id -u) -ne 0 ]]; then
		log "PostgreSQL ${PG_VERSION} with PostGIS 3 is missing and we are not root: install postgresql-${PG_VERSION} postgresql-${PG_VERSION}-postgis-3"
		exit 1
	fi
	log "installing postgresql-${PG_VERSION} postgresql-${PG_VERSION}-postgis-3"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends \
		"postgresql-${PG_VERSION}" "postgresql-${PG_VERSION}-postgis-3" >&2
}

init_cluster() {
	mkdir -p "$PGDATA_ROOT"
	if [[ $(id -u) -eq 0 ]]; then
		chown postgres: "$PGDATA_ROOT"
		# The postgres user must be able to reach .pgdata/ through every
		# parent directory (the repo may live under a 0700 home).
		local d=$ROOT
		while [[ $d != / ]]; do
			chmod o+x "$d" 2>/dev/null || true
			d=$(dirname -- "$d")
		done
	fi
	as_pg mkdir -p "$SOCK"
	if [[ -f $DATA/PG_VERSION ]]; then
		return
	fi
	log "initdb in $DATA"
	# Trust auth is acceptable only because the cluster listens on loopback
	# and a private unix socket, and holds nothing but test data.
	as_pg "$PG_BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=reject >/dev/null
	# Replace the generated pg_hba.conf: trust on the socket and loopback only.
	as_pg sh -c "cat > '$DATA/pg_hba.conf'" <<-'EOF'
		# scripts/postgis.sh: throwaway cluster, loopback and socket only.
		local all all              trust
		host  all all 127.0.0.1/32 trust
		host  all all ::1/128      trust
	EOF
	as_pg sh -c "cat >> '$DATA/postgresql.conf'" <<-EOF

		# scripts/postgis.sh
		listen_addresses = '127.0.0.1'
		port = ${PORT}
		unix_socket_directories = '${SOCK}'
		# Durability is worthless for a throwaway test cluster and fsync
		# dominates the test suite's time on slow CI disks.
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		# Tests create a database per test; keep enough connections for
		# several test binaries running in parallel.
		max_connections = 200
		# features has a partition per feed: the scale benchmark's 5,000
		# feeds need room for a query that touches all of them.
		max_locks_per_transaction = 256
	EOF
}

start_cluster() {
	if is_running; then
		return
	fi
	log "starting PostgreSQL on 127.0.0.1:${PORT} (log: $LOG)"
	as_pg touch "$LOG"
	# -o -p keeps the port in step with INGESTD_PG_PORT even for an
	# existing cluster that was initialised with another one.
	as_pg "$PG_BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
		-o "-p ${PORT} -k ${SOCK}" start >/dev/null || {
		log "pg_ctl start failed; last lines of $LOG:"
		tail -n 20 "$LOG" >&2 || true
		exit 1
	}
}

create_db() {
	local psql=("$PG_BIN/psql" -h "$SOCK" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=terse)
	if [[ $(as_pg "${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '${DB}'") != 1 ]]; then
		log "creating database ${DB}"
		as_pg "${psql[@]}" -d postgres -c "CREATE DATABASE ${DB}" >&2
	fi
	as_pg "${psql[@]}" -d "$DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgis" >&2
}

cmd=${1:-start}
case $cmd in
start)
	install_packages
	init_cluster
	start_cluster
	create_db
	echo "$URL"
	;;
stop)
	if is_running; then
		log "stopping"
		as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
	else
		log "not running"
	fi
	;;
url)
	echo "$URL"
	;;
status)
	if is_running; then
		log "running: $URL"
	else
		log "not running"
		exit 3
	fi
	;;
*)
	log "unknown command: $cmd (want start, stop, url or status)"
	exit 2
	;;
esac
