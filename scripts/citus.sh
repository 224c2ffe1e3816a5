#!/usr/bin/env bash
# citus.sh — a throwaway Citus cluster (a coordinator and two workers on
# loopback) for trying ingestd on schema-based sharding, as a new user would.
# Not run by CI or the tests: building Citus takes minutes.
#
# Usage: scripts/citus.sh [build|start|shard-check|demo|bench|reset|stop|url|status]
#
#   build        build Citus 13.2 from its source tree (CITUS_SRC, default
#                .citus/src: a checkout of tag v13.2.2, cloned when missing)
#                against Debian's PostgreSQL 15, applying
#                scripts/citus/pg15-have-createdb-privilege.patch, and install
#                it into PostgreSQL 15's extension directories (root only).
#   start        (default) build when citus is not installed, then run three
#                clusters under .citus/ (coordinator on CITUS_PORT, workers on
#                CITUS_PORT+1 and +2), create database "ingestd" with postgis
#                and citus on each, register the nodes with the coordinator,
#                turn schema-based sharding on, and print the coordinator's URL.
#   shard-check  CREATE SCHEMA wake and raleigh with one table each and print
#                citus_schemas and citus_shards: each schema is one colocation
#                group placed on one worker.
#   demo         the demo (scripts/demo.sh's jurisdictions.yaml) against the
#                coordinator: the fixture feed server on CITUS_DEMO_PORT..+2
#                (default 18481, so it runs beside a demo.sh), the ArcGIS feed
#                at an already running Koop (INGESTD_KOOP_URL, left out when
#                none answers), and durham/parcels, a tracked ArcGIS layer
#                (arcgisserver on CITUS_DEMO_PORT+3). Act 1: `ingestd run`
#                (status page on CITUS_DEMO_PORT+4) until every feed is fresh
#                or 120 s pass; prints feed_freshness, dead letters, fetches
#                the status page. Act 2: edits the fixture files and runs
#                `ingestd poll` of a full refresh, a conformed one and two
#                incremental ones, each with citus.log_remote_commands on,
#                counting what the coordinator sends to the workers
#                (.citus/demo/remote.txt). Act 3: the reads (features,
#                history, as-of, change feeds) and where Citus put each
#                table. Logs: .citus/demo/. `ingestd run` migrates the
#                database itself, with schema-based sharding on in
#                postgresql.conf: the migration runner turns it off for its
#                own session, so ingestd and common stay plain schemas on the
#                coordinator and the jurisdictions' schemas are distributed.
#   bench        one GeoJSON layer of CITUS_BENCH_FEATURES parcels (default
#                50000): its first load and a refresh changing 1 % of it, on
#                Citus (database reset first; the layer on its schema's
#                worker) and on a single PostGIS (CITUS_SINGLE_URL, the URL
#                of its database "postgres", default the dev cluster of
#                scripts/postgis.sh; a database ingestd_citus_bench made
#                there and dropped after), each CITUS_BENCH_ROUNDS times (2),
#                alternating.
#                Prints one line per measurement (seconds, wall clock).
#   reset        drop and recreate database "ingestd" on all three nodes.
#   stop         stop the three clusters (their data stays in .citus/).
#   url          print the coordinator's URL without starting anything.
#   status       exit 0 when all three run, 3 otherwise.
#
# start prints only the URL on stdout (export DATABASE_URL=$(scripts/citus.sh));
# progress goes to stderr.
#
# Environment: CITUS_PORT (default 55440), CITUS_SRC, CITUS_TAG (v13.2.2),
# CITUS_MAKE_JOBS (2), CITUS_DEMO_PORT (18481),
# INGESTD_KOOP_URL, CITUS_BENCH_FEATURES, CITUS_BENCH_ROUNDS, CITUS_SINGLE_URL.
set -euo pipefail

PG_VERSION=15
PG_BIN=/usr/lib/postgresql/${PG_VERSION}/bin
PORT=${CITUS_PORT:-55440}
DB=ingestd
TAG=${CITUS_TAG:-v13.2.2}
JOBS=${CITUS_MAKE_JOBS:-2}

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BASE=$ROOT/.citus
SRC=${CITUS_SRC:-$BASE/src}
PATCH=$ROOT/scripts/citus/pg15-have-createdb-privilege.patch
NODES=(coord w1 w2)

URL="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"

log() { printf 'citus.sh: %s\n' "$*" >&2; }

# Background processes (feed servers, ingestd) end with the script, however
# it ends: a server left behind would keep its port and serve stale files to
# the next run.
BG_PIDS=()
cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${BENCH_SINGLE_URL:-} ]]; then
		psql "$BENCH_SINGLE_URL" -X -q -c "DROP DATABASE IF EXISTS ingestd_citus_bench WITH (FORCE)" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# as_pg runs a command as the postgres user when we are root (PostgreSQL
# refuses to run as root), and directly otherwise.
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

node_port() { # coord → PORT, w1 → PORT+1, w2 → PORT+2
	case $1 in
	coord) echo "$PORT" ;;
	w1) echo $((PORT + 1)) ;;
	w2) echo $((PORT + 2)) ;;
	esac
}

psql_node() { # psql_node NODE [psql args…]
	local n=$1
	shift
	as_pg "$PG_BIN/psql" -h "$BASE/run" -p "$(node_port "$n")" -U postgres -X -q \
		-v ON_ERROR_STOP=1 -v VERBOSITY=terse "$@"
}

installed() {
	[[ -f /usr/share/postgresql/${PG_VERSION}/extension/citus.control &&
		-f /usr/lib/postgresql/${PG_VERSION}/lib/citus.so ]]
}

build() {
	if [[ $(id -u) -ne 0 ]]; then
		log "building and installing Citus needs root (it installs into PostgreSQL ${PG_VERSION}'s directories)"
		exit 1
	fi
	if [[ ! -x $PG_BIN/initdb || ! -f /usr/share/postgresql/${PG_VERSION}/extension/postgis.control ]]; then
		log "installing postgresql-${PG_VERSION} postgresql-${PG_VERSION}-postgis-3"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"postgresql-${PG_VERSION}" "postgresql-${PG_VERSION}-postgis-3" >&2
	fi
	# Citus's build needs the server headers and the compression and TLS
	# libraries it links; libcurl only serves its usage statistics, left out.
	log "installing the build dependencies"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"postgresql-server-dev-${PG_VERSION}" build-essential liblz4-dev libzstd-dev \
		libkrb5-dev libselinux1-dev libxslt1-dev libssl-dev libicu-dev >&2
	if [[ ! -f $SRC/configure ]]; then
		log "cloning Citus ${TAG} into $SRC"
		git clone -q --depth 1 --branch "$TAG" https://github.com/citusdata/citus.git "$SRC" >&2
	fi
	# Debian's PostgreSQL 15 exports have_createdb_privilege() (a minor
	# release after Citus 13.2 was cut), and Citus's compatibility header
	# defines a static one of the same name: the build stops at "static
	# declaration follows non-static declaration". The patch renames
	# Citus's copy; it is applied once.
	if patch -d "$SRC" -p1 -R --dry-run -s -f <"$PATCH" >/dev/null 2>&1; then
		log "compatibility patch already applied"
	else
		log "applying $(basename "$PATCH")"
		patch -d "$SRC" -p1 -s <"$PATCH" >&2
	fi
	# with_llvm=no: Debian's PostgreSQL is built for JIT, so PGXS would
	# compile every file a second time to LLVM bitcode, doubling the build
	# for a JIT that ingestd's short queries do not use.
	log "configure and make -j${JOBS} (log: $BASE/build.log)"
	mkdir -p "$BASE"
	(cd "$SRC" && { [[ -f Makefile.global ]] || ./configure --without-libcurl; } &&
		make -j"$JOBS" with_llvm=no && make install with_llvm=no) >"$BASE/build.log" 2>&1 || {
		log "build failed; last lines of $BASE/build.log:"
		grep -E 'error|Error' "$BASE/build.log" | tail -n 10 >&2 || true
		exit 1
	}
	log "installed $(grep -m1 default_version /usr/share/postgresql/${PG_VERSION}/extension/citus.control)"
}

is_running() { # is_running NODE
	[[ -f $BASE/$1/PG_VERSION ]] && as_pg "$PG_BIN/pg_ctl" -D "$BASE/$1" status >/dev/null 2>&1
}

init_node() { # init_node NODE
	local n=$1 data=$BASE/$1
	[[ -f $data/PG_VERSION ]] && return
	log "initdb in $data"
	as_pg "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=reject >/dev/null
	# Trust on loopback only: a throwaway cluster holding test data.
	as_pg sh -c "cat > '$data/pg_hba.conf'" <<-'EOF'
		# scripts/citus.sh: throwaway cluster, loopback and socket only.
		local all all              trust
		host  all all 127.0.0.1/32 trust
		host  all all ::1/128      trust
	EOF
	as_pg sh -c "cat >> '$data/postgresql.conf'" <<-EOF

		# scripts/citus.sh
		shared_preload_libraries = 'citus'
		listen_addresses = '127.0.0.1'
		port = $(node_port "$n")
		unix_socket_directories = '$BASE/run'
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		shared_buffers = 64MB
		max_connections = 200
		max_locks_per_transaction = 256
		# Each jurisdiction's schema a distributed schema: its tables are
		# one colocation group, placed whole on one worker.
		citus.enable_schema_based_sharding = on
	EOF
}

start_node() { # start_node NODE
	local n=$1
	is_running "$n" && return
	log "starting $n on 127.0.0.1:$(node_port "$n")"
	as_pg "$PG_BIN/pg_ctl" -D "$BASE/$n" -l "$BASE/$n.log" -w -t 60 start >/dev/null || {
		log "pg_ctl start of $n failed; last lines of $BASE/$n.log:"
		tail -n 20 "$BASE/$n.log" >&2 || true
		exit 1
	}
}

create_db() { # create_db NODE
	local n=$1
	if [[ $(psql_node "$n" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '${DB}'") != 1 ]]; then
		psql_node "$n" -d postgres -c "CREATE DATABASE ${DB}" >&2
	fi
	# citus first: it must be the first preloaded extension in the database.
	# Only when missing: once a worker is in the coordinator's metadata it
	# refuses DDL of its own, even a CREATE EXTENSION IF NOT EXISTS.
	local ext
	for ext in citus postgis; do
		if [[ $(psql_node "$n" -d "$DB" -tAc "SELECT 1 FROM pg_extension WHERE extname = '$ext'") != 1 ]]; then
			psql_node "$n" -d "$DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION $ext" >&2
		fi
	done
}

register_nodes() {
	psql_node coord -d "$DB" -c "SET client_min_messages = warning" \
		-c "SELECT citus_set_coordinator_host('127.0.0.1', ${PORT})" >/dev/null
	local w
	for w in w1 w2; do
		psql_node coord -d "$DB" -c "SET client_min_messages = warning" \
			-c "SELECT citus_add_node('127.0.0.1', $(node_port "$w"))" >/dev/null
	done
	log "workers: $(psql_node coord -d "$DB" -tAc "SELECT string_agg(nodename || ':' || nodeport, ', ' ORDER BY nodeport) FROM pg_dist_node WHERE groupid <> 0")"
}

shard_check() {
	# One table in each, named so as not to meet a feed's layer; both go
	# again at the end (the schemas too when nothing else is in them), so
	# the demo starts from an empty database.
	psql_node coord -d "$DB" -c "SET client_min_messages = warning" \
		-c "CREATE SCHEMA IF NOT EXISTS wake" -c "CREATE SCHEMA IF NOT EXISTS raleigh" \
		-c "CREATE TABLE wake.citus_check (id bigint PRIMARY KEY, geom geometry(MultiPolygon, 4326))" \
		-c "CREATE TABLE raleigh.citus_check (id bigint PRIMARY KEY, geom geometry(MultiPolygon, 4326))" >&2
	psql_node coord -d "$DB" \
		-c "SELECT schema_name, colocation_id, schema_size, schema_owner FROM citus_schemas ORDER BY 1" \
		-c "SELECT table_name, shardid, colocation_id, nodename, nodeport FROM citus_shards WHERE table_name::text ~ '^(wake|raleigh)\.' ORDER BY 1"
	local placed
	placed=$(psql_node coord -d "$DB" -tAc "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name::text IN ('wake.citus_check', 'raleigh.citus_check')")
	psql_node coord -d "$DB" -c "DROP TABLE wake.citus_check, raleigh.citus_check" >&2
	local sch
	for sch in wake raleigh; do
		psql_node coord -d "$DB" -c "SET client_min_messages = warning" -c "DROP SCHEMA $sch" >/dev/null 2>&1 || true
	done
	if [[ $placed == 2 ]]; then
		log "wake and raleigh are on different workers"
	else
		log "wake and raleigh are on the same worker (Citus places a new schema by its colocation id modulo the workers; citus_rebalance_start() moves schemas)"
		return 1
	fi
}

demo() {
	local dir=$BASE/demo dport=${CITUS_DEMO_PORT:-18481}
	local koop=${INGESTD_KOOP_URL:-http://127.0.0.1:18182/file-geojson/rest/services}
	local status_addr=127.0.0.1:$((dport + 4))
	mkdir -p "$dir" "$ROOT/bin"
	log "building ingestd and the fixture servers"
	(cd "$ROOT" && go build -o bin/ingestd ./cmd/ingestd && go build -o bin/feedserver ./internal/tools/feedserver &&
		go build -o bin/arcgisserver ./internal/tools/arcgisserver)
	# The fixture files are copied: the second act edits them.
	rm -rf "$dir/feeds" && mkdir -p "$dir/feeds"
	cp -r "$ROOT/testdata/feeds/raleigh" "$ROOT/testdata/feeds/boulder" "$dir/feeds/"
	# The demo's file with the fixture ports moved; the ArcGIS feed kept only
	# when Koop answers (this script does not run one); and durham/parcels,
	# an ArcGIS layer with change tracking, for the incremental refresh.
	sed -e "s#127.0.0.1:18081/#127.0.0.1:${dport}/#" \
		-e "s#127.0.0.1:18082/#127.0.0.1:$((dport + 1))/#" \
		-e "s#127.0.0.1:18083/#127.0.0.1:$((dport + 2))/#" \
		-e "s#http://127.0.0.1:18182/file-geojson/rest/services#${koop}#" \
		"$ROOT/jurisdictions.yaml" >"$dir/jurisdictions.yaml"
	if ! curl -fsS -o /dev/null "${koop}/nc_counties/FeatureServer/0?f=json" 2>/dev/null; then
		log "no Koop at ${koop}: the nc/counties feed is left out"
		python3 - "$dir/jurisdictions.yaml" <<-'PY'
			import re, sys
			p = sys.argv[1]
			s = open(p).read()
			s = re.sub(r"\n  - id: nc\n.*?(?=\n# ---)", "\n", s, flags=re.S)
			open(p, "w").write(s)
		PY
	fi
	python3 - "$dir/jurisdictions.yaml" "http://127.0.0.1:$((dport + 3))/arcgis/rest/services/parcels/FeatureServer/0" <<-'PY'
		import sys
		p, url = sys.argv[1], sys.argv[2]
		s = open(p).read()
		durham = ("  - id: durham\n    name: Durham County, NC (ArcGIS, change tracking)\n"
		          "    timezone: America/New_York\n    feeds:\n      - id: parcels\n        kind: arcgis\n"
		          f"        url: {url}\n        schedule: \"0 * * * *\"\n\n")
		i = s.index("# --- Templates")
		open(p, "w").write(s[:i] + durham + s[i:])
	PY
	"$ROOT/bin/feedserver" \
		-serve "127.0.0.1:${dport}=$dir/feeds/raleigh" \
		-serve "127.0.0.1:$((dport + 1))=$dir/feeds/boulder" \
		-serve "127.0.0.1:$((dport + 2))=$dir/feeds/raleigh" \
		-flap "127.0.0.1:$((dport + 2))=8s" >"$dir/feedserver.log" 2>&1 &
	local fs_pid=$!
	BG_PIDS+=($fs_pid)
	# 2,000 parcels; every 15 s 10 edited, 2 deleted, 3 added (often
	# enough for the second act, rarely enough that a dump seldom meets an
	# edit, which fails it as incomplete until the next try).
	"$ROOT/bin/arcgisserver" -listen "127.0.0.1:$((dport + 3))" -generate parcels=2000 -tracked -churn 15s \
		-max-record-count 1000 >"$dir/arcgisserver.log" 2>&1 &
	BG_PIDS+=($!)
	log "act 1: ingestd run against the coordinator until every feed is fresh (log: $dir/ingestd.log)"
	local t0=$SECONDS
	DATABASE_URL=$URL "$ROOT/bin/ingestd" run -config "$dir/jurisdictions.yaml" \
		-metrics-addr "$status_addr" >"$dir/ingestd.log" 2>&1 &
	local ingestd_pid=$!
	BG_PIDS+=($ingestd_pid)
	local pending=x
	for _ in $(seq 1 120); do
		if ! kill -0 "$ingestd_pid" 2>/dev/null; then
			log "ingestd exited; last lines of $dir/ingestd.log:"
			tail -n 20 "$dir/ingestd.log" >&2
			return 1
		fi
		pending=$(psql_node coord -d "$DB" -tAc "SELECT CASE WHEN count(*) = 0 THEN -1
			ELSE count(*) FILTER (WHERE status <> 'fresh') END
			FROM ingestd.feed_freshness WHERE configured" 2>/dev/null || echo x)
		[[ $pending == 0 ]] && break
		sleep 1
	done
	log "$((SECONDS - t0)) s from start; feeds not fresh: ${pending}"
	psql_node coord -d "$DB" -c "SELECT jurisdiction, feed, status, feature_count,
			CASE WHEN status <> 'fresh' THEN left(last_error, 100) END AS last_error
		FROM ingestd.feed_freshness ORDER BY jurisdiction, feed" \
		-c "SELECT id, jurisdiction || '/' || feed AS feed, status, attempts, left(last_error, 80) AS last_error
		FROM ingestd.dead_letter ORDER BY id"
	# The status page, as an operator opens it: the overview and one
	# feed's page, each naming the feed.
	local page status_ok=1
	for page in "" "feed/raleigh/zoning" "feed/durham/parcels"; do
		if curl -fsS -o "$dir/page.html" "http://${status_addr}/status/${page}" 2>"$dir/curl.err" &&
			grep -q 'zoning\|parcels' "$dir/page.html"; then
			log "status page /status/${page}: ok"
		else
			log "status page /status/${page}: FAILED ($(cat "$dir/curl.err"))"
			status_ok=0
		fi
	done
	kill -TERM "$ingestd_pid" && wait "$ingestd_pid" || true

	# Act 2: every kind of refresh, one feed at a time, each under
	# citus.log_remote_commands so the coordinator's log shows what it
	# sends to the workers: boulder/roads (a full refresh: one feature
	# changed, one gone), raleigh/addresses (a full refresh conformed into
	# common.addresses, which keeps history) and durham/parcels (an
	# incremental one, by change tracking).
	log "act 2: refreshes with changes, by ingestd poll"
	python3 - "$dir/feeds" <<-'PY'
		import json, sys
		d = sys.argv[1]
		p = f"{d}/boulder/roads.geojson"
		doc = json.load(open(p))
		doc["features"][0]["properties"]["speed_limit"] += 10
		del doc["features"][1]
		json.dump(doc, open(p, "w"))
		p = f"{d}/raleigh/addresses.geojson"
		doc = json.load(open(p))
		doc["features"][0]["properties"]["street"] = "Fayetteville Street"
		json.dump(doc, open(p, "w"))
	PY
	# The feed server reads its files at start: a new one serves the edits.
	kill -TERM "$fs_pid" && wait "$fs_pid" || true
	"$ROOT/bin/feedserver" \
		-serve "127.0.0.1:${dport}=$dir/feeds/raleigh" \
		-serve "127.0.0.1:$((dport + 1))=$dir/feeds/boulder" \
		-serve "127.0.0.1:$((dport + 2))=$dir/feeds/raleigh" >>"$dir/feedserver.log" 2>&1 &
	BG_PIDS+=($!)
	for _ in $(seq 1 50); do
		curl -fsS -o /dev/null "http://127.0.0.1:$((dport + 1))/geojson/roads.geojson" 2>/dev/null && break
		sleep 0.1
	done
	: >"$dir/poll.log"
	local remote="${URL}&options=-c%20citus.log_remote_commands%3Don%20-c%20log_min_messages%3Dnotice"
	local f logline poll_id
	: >"$dir/remote.txt"
	for f in boulder/roads raleigh/addresses durham/parcels durham/parcels; do
		logline=$(wc -l <"$BASE/coord.log")
		"$ROOT/bin/ingestd" poll -quiet -config "$dir/jurisdictions.yaml" -database-url "$remote" "$f" >>"$dir/poll.log" 2>&1 || {
			log "poll $f failed: $(tail -n 3 "$dir/poll.log")"
			return 1
		}
		poll_id=$(psql_node coord -d "$DB" -tAc "SELECT max(id) FROM ingestd.polls WHERE jurisdiction || '/' || feed = '$f'")
		# Commands sent to a worker, by their first words.
		tail -n +"$((logline + 1))" "$BASE/coord.log" | grep -o 'issuing .*' |
			sed -E 's/^issuing //; s/[0-9]{3,}/N/g' | cut -c1-60 | sort | uniq -c | sort -rn |
			sed "s#^#${f} poll ${poll_id}: #" >>"$dir/remote.txt"
		log "poll $f: $(psql_node coord -d "$DB" -tAc "SELECT format('%s, %s added, %s modified, %s removed, %s ms', fetch_mode, added, modified, removed,
			round(extract(epoch FROM finished_at - started_at) * 1000)) FROM ingestd.polls WHERE id = ${poll_id}"); $(awk -v id=" poll ${poll_id}:" 'index($0, id) {sub(/^[^:]*: */, ""); n += $1; k++} END {printf "%d commands (%d kinds)", n, k}' "$dir/remote.txt") sent to workers"
		[[ $f == durham/parcels ]] && sleep 16 # a churn between the two incremental polls
	done
	log "what the coordinator sent to the workers (count, command), per poll: $dir/remote.txt"

	log "act 3: reads"
	psql_node coord -d "$DB" \
		-c "SELECT l.jurisdiction || '/' || l.feed AS feed, (SELECT count(*) FROM ingestd.features f WHERE f.jurisdiction = l.jurisdiction AND f.feed = l.feed) AS in_features,
			s.nodeport AS worker FROM ingestd.feed_layers l LEFT JOIN citus_shards s ON s.table_name = to_regclass(l.layer) ORDER BY 1" \
		-c "SELECT jurisdiction || '/' || feed AS feed, count(*) AS versions FROM ingestd.feature_history GROUP BY 1 ORDER BY 1" \
		-c "SELECT count(*) AS roads_history_rows FROM ingestd_feature_history('boulder', 'roads', 'BLD-7000')" \
		-c "SELECT h.feature_id, h.properties ->> 'speed_limit' AS superseded_speed_limit, r.speed_limit AS current_speed_limit,
			h.valid_from, h.valid_to, r.changed_at AS current_changed_at
		FROM ingestd.feature_history h JOIN boulder.roads r USING (feature_id) WHERE h.feed = 'roads'" \
		-c "SELECT count(*) AS roads_as_of_first_load FROM ingestd_layer_as_of('boulder', 'roads', (SELECT min(finished_at) FROM ingestd.polls WHERE feed = 'roads' AND status = 'succeeded'))" \
		-c "SELECT change, count(*) AS changes, count(old_properties) AS with_old, count(new_properties) AS with_new
			FROM ingestd_changes_since('durham', 'parcels', 0) GROUP BY 1 ORDER BY 1" \
		-c "SELECT change, count(*) FROM ingestd_common_changes_since('raleigh', 'addresses', 0) GROUP BY 1 ORDER BY 1" \
		-c "SELECT count(*) AS common_history_rows FROM ingestd.common_history" \
		-c "SELECT schema_name, colocation_id, schema_size FROM citus_schemas ORDER BY 1" \
		-c "SELECT n.nspname AS schema, count(*) AS tables,
			count(*) FILTER (WHERE p.partmethod = 'n') AS on_a_worker,
			count(*) FILTER (WHERE p.logicalrelid IS NULL) AS local_to_coordinator
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
		WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'citus', 'columnar', 'columnar_internal')
		GROUP BY 1 ORDER BY 1"
	"$ROOT/bin/ingestd" status -config "$dir/jurisdictions.yaml" -database-url "$URL" >&2 || status_ok=0
	grep -E '"level":"(ERROR|WARN)"' "$dir/ingestd.log" "$dir/poll.log" | cut -c1-300 | sort | uniq -c | sort -rn | head -n 15 >&2 || true
	[[ $pending == 0 && $status_ok == 1 ]]
}

# migrate runs ingestd's migrations on the coordinator, as `ingestd run`
# would at start.
migrate() { # migrate CONFIG LOG
	"$ROOT/bin/ingestd" migrate -config "$1" -database-url "$URL" >"$2" 2>&1 || {
		log "ingestd migrate failed: $(tail -n 3 "$2")"
		return 1
	}
}

# timed prints the wall-clock seconds a command took; its output goes to
# the bench log, and a failure stops the bench.
timed() { # timed LOG COMMAND…
	local logf=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"$@" >>"$logf" 2>&1 || {
		log "failed: $*; last lines of $logf:"
		tail -n 5 "$logf" >&2
		return 1
	}
	t1=$(date +%s.%N)
	echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'
}

bench() {
	local dir=$BASE/bench n=${CITUS_BENCH_FEATURES:-50000} rounds=${CITUS_BENCH_ROUNDS:-2}
	local dport=$((${CITUS_DEMO_PORT:-18481} + 3))
	local single=${CITUS_SINGLE_URL:-postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable}
	local single_db=${single%%/postgres\?*}/ingestd_citus_bench?sslmode=disable
	mkdir -p "$dir/v0" "$dir/v1" "$ROOT/bin"
	(cd "$ROOT" && go build -o bin/ingestd ./cmd/ingestd && go build -o bin/feedserver ./internal/tools/feedserver)
	# v0: n square parcels; v1: the same with every hundredth one's use
	# changed (a refresh that modifies 1 %).
	python3 - "$n" "$dir" <<-'PY'
		import json, sys
		n, d = int(sys.argv[1]), sys.argv[2]
		for v in (0, 1):
		    with open(f"{d}/v{v}/parcels.geojson", "w") as out:
		        out.write('{"type":"FeatureCollection","features":[')
		        for i in range(n):
		            x, y = -78.9 + (i % 500) * 0.001, 35.6 + (i // 500) * 0.001
		            use = "R-6" if v == 1 and i % 100 == 0 else ("R-4", "CX-5", "OX-4", "IX-3")[i % 4]
		            f = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[x, y], [x + 0.0008, y], [x + 0.0008, y + 0.0008], [x, y + 0.0008], [x, y]]]},
		                 "properties": {"parcel_id": i + 1, "pin": f"{1700000000 + i}", "owner": f"OWNER {i % 9973}", "land_use": use,
		                                "acres": round(0.1 + (i % 37) * 0.05, 2), "assessed": 100000 + (i % 1000) * 250, "deeded": f"20{10 + i % 14}-0{1 + i % 9}-15"}}
		            out.write((',' if i else '') + json.dumps(f))
		        out.write(']}')
	PY
	cat >"$dir/jurisdictions.yaml" <<-EOF
		jurisdictions:
		  - id: wake
		    timezone: America/New_York
		    feeds:
		      - id: parcels
		        kind: geojson
		        url: http://127.0.0.1:${dport}/geojson/parcels.geojson
		        id_property: parcel_id
		        schedule: "0 3 * * *"
	EOF
	local logf=$dir/bench.log fs
	: >"$logf"
	serve() { # serve v0|v1
		if [[ -n ${fs:-} ]]; then
			kill "$fs" 2>/dev/null || true
			wait "$fs" 2>/dev/null || true
		fi
		"$ROOT/bin/feedserver" -serve "127.0.0.1:${dport}=$dir/$1" >>"$dir/feedserver.log" 2>&1 &
		fs=$!
		BG_PIDS+=("$fs")
		local _
		for _ in $(seq 1 50); do
			# Ours, not another process on the port.
			kill -0 "$fs" 2>/dev/null || { log "feed server on ${dport} did not start: $(tail -n 1 "$dir/feedserver.log")"; return 1; }
			curl -fsS -o /dev/null "http://127.0.0.1:${dport}/geojson/parcels.geojson" 2>/dev/null && return
			sleep 0.1
		done
		log "feed server on ${dport} does not answer"
		return 1
	}
	BENCH_SINGLE_URL=$single
	local poll=("$ROOT/bin/ingestd" poll -quiet -config "$dir/jurisdictions.yaml")
	changes() { # the last poll's counts, so a refresh that changed nothing shows
		psql "$1" -X -tA -c "SELECT format('%s added, %s modified, %s removed', added, modified, removed) FROM ingestd.polls ORDER BY id DESC LIMIT 1"
	}
	local r t
	for r in $(seq 1 "$rounds"); do
		# Citus: a fresh database; the first load places the layer on its
		# schema's worker.
		reset 2>>"$logf"
		migrate "$dir/jurisdictions.yaml" "$dir/migrate.log"
		serve v0
		t=$(timed "$logf" "${poll[@]}" -database-url "$URL" wake/parcels)
		echo "round $r citus  first_load ${n} features (layer on worker $(psql_node coord -d "$DB" -tAc "SELECT nodeport FROM citus_shards WHERE table_name = 'wake.parcels'::regclass")): ${t} s"
		serve v1
		t=$(timed "$logf" "${poll[@]}" -database-url "$URL" wake/parcels)
		echo "round $r citus  refresh 1%: ${t} s ($(changes "$URL"))"
		# Single node: the same on a plain PostGIS.
		psql "$single" -X -q -c "DROP DATABASE IF EXISTS ingestd_citus_bench WITH (FORCE)" -c "CREATE DATABASE ingestd_citus_bench" >/dev/null
		psql "$single_db" -X -q -c "CREATE EXTENSION postgis" >/dev/null
		"$ROOT/bin/ingestd" migrate -config "$dir/jurisdictions.yaml" -database-url "$single_db" >"$dir/migrate-single.log" 2>&1
		serve v0
		t=$(timed "$logf" "${poll[@]}" -database-url "$single_db" wake/parcels)
		echo "round $r single first_load ${n} features: ${t} s"
		serve v1
		t=$(timed "$logf" "${poll[@]}" -database-url "$single_db" wake/parcels)
		echo "round $r single refresh 1%: ${t} s ($(changes "$single_db"))"
	done
}

reset() {
	local n
	for n in w1 w2 coord; do
		psql_node "$n" -d postgres -c "DROP DATABASE IF EXISTS ${DB} WITH (FORCE)" >&2
	done
	for n in "${NODES[@]}"; do create_db "$n"; done
	register_nodes
}

cmd=${1:-start}
case $cmd in
build)
	build
	;;
start)
	installed || build
	as_pg mkdir -p "$BASE/run" 2>/dev/null || { mkdir -p "$BASE/run" && chown postgres: "$BASE" "$BASE/run"; }
	for n in "${NODES[@]}"; do init_node "$n"; done
	for n in "${NODES[@]}"; do start_node "$n"; done
	for n in "${NODES[@]}"; do create_db "$n"; done
	register_nodes
	echo "$URL"
	;;
shard-check)
	shard_check
	;;
demo)
	demo
	;;
bench)
	bench
	;;
reset)
	reset
	;;
stop)
	for n in "${NODES[@]}"; do
		if is_running "$n"; then
			log "stopping $n"
			as_pg "$PG_BIN/pg_ctl" -D "$BASE/$n" -m fast -w stop >/dev/null
		fi
	done
	;;
url)
	echo "$URL"
	;;
status)
	for n in "${NODES[@]}"; do
		is_running "$n" || { log "$n not running"; exit 3; }
	done
	log "running: $URL"
	;;
*)
	log "unknown command: $cmd (want build, start, shard-check, demo, bench, reset, stop, url or status)"
	exit 2
	;;
esac
