#!/usr/bin/env bash
# demo.sh — the run command: sets up PostGIS (installing it when missing),
# starts the fixture feed server and Koop (an ArcGIS REST server, npm;
# scripts/koop.sh) on loopback, runs ingestd on the demo
# jurisdictions.yaml until every feed has landed, and prints feed_freshness.
#
#   scripts/demo.sh          run, print, stop
#   scripts/demo.sh --keep   keep ingestd running in the foreground (Ctrl-C stops it)
#
# Logs: .demo/ingestd.log and .demo/feedserver.log (JSON, one event a line).
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
keep=false
[[ ${1:-} == --keep ]] && keep=true

log() { printf 'demo.sh: %s\n' "$*" >&2; }

mkdir -p bin .demo
log "building ingestd and the fixture feed server"
go build -o bin/ingestd ./cmd/ingestd
go build -o bin/feedserver ./internal/tools/feedserver

if [[ -z ${DATABASE_URL:-} ]]; then
	DATABASE_URL=$(scripts/postgis.sh start)
fi
export DATABASE_URL
PSQL=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)

pids=()
koop_started=false
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if $koop_started; then INGESTD_KOOP_PORT=18182 scripts/koop.sh stop; fi
}
trap cleanup EXIT

# 18083 is the flapping "wake" county: 503 for its first 8 seconds.
bin/feedserver \
	-serve 127.0.0.1:18081=testdata/feeds/raleigh \
	-serve 127.0.0.1:18082=testdata/feeds/boulder \
	-serve 127.0.0.1:18083=testdata/feeds/raleigh -flap 127.0.0.1:18083=8s >.demo/feedserver.log 2>&1 &
pids+=($!)

# Koop serves the nc jurisdiction's ArcGIS layer on the port
# jurisdictions.yaml names.
log "starting Koop (ArcGIS REST) on 127.0.0.1:18182"
INGESTD_KOOP_PORT=18182 scripts/koop.sh start >/dev/null
koop_started=true

log "running ingestd on jurisdictions.yaml (log: .demo/ingestd.log)"
bin/ingestd run -config jurisdictions.yaml >.demo/ingestd.log 2>&1 &
ingestd_pid=$!
pids+=($ingestd_pid)

# Wait until every configured feed is fresh: on start, ingestd polls at once
# the feeds that never succeeded or are overdue.
for _ in $(seq 1 120); do
	if ! kill -0 "$ingestd_pid" 2>/dev/null; then
		log "ingestd exited; last lines of .demo/ingestd.log:"
		tail -n 20 .demo/ingestd.log >&2
		exit 1
	fi
	# No rows yet means the schema is there but the feeds are not registered:
	# still waiting, not "nothing pending".
	pending=$("${PSQL[@]}" -tAc "SELECT CASE WHEN count(*) = 0 THEN -1
		ELSE count(*) FILTER (WHERE status <> 'fresh') END
		FROM feed_freshness WHERE configured" 2>/dev/null || echo x)
	[[ $pending == 0 ]] && break
	sleep 1
done

"${PSQL[@]}" -c "SELECT jurisdiction, feed, status, feature_count, date_trunc('second', last_success_at) AS last_success_at,
		date_trunc('second', age) AS age, expected_interval,
		CASE WHEN status <> 'fresh' THEN last_error END AS last_error
	FROM feed_freshness ORDER BY jurisdiction, feed"
# Polls parked when the flapping server failed or its breaker was open, and
# their replays (README.md, "Dead letters").
"${PSQL[@]}" -c "SELECT id, jurisdiction || '/' || feed AS feed, status, reason, attempts,
		date_trunc('second', created_at) AS parked_at, date_trunc('second', finished_at) AS finished_at,
		next_page, left(last_error, 60) AS last_error
	FROM dead_letter ORDER BY id"
# Typed layers (README.md, "Typed layers"): each feed's columns and a few
# rows of one feed's typed view, the layer QGIS and ogrinfo open.
"${PSQL[@]}" -c "SELECT s.jurisdiction || '/' || s.feed AS feed, s.view_name, coalesce(s.geometry_type, '-') AS geometry,
		string_agg(c.view_column || ' ' || c.type, ', ' ORDER BY c.ordinal) AS columns
	FROM feed_schemas s JOIN feed_columns c USING (jurisdiction, feed)
	WHERE c.removed_at IS NULL GROUP BY 1, 2, 3 ORDER BY 1"
zoning_view=$("${PSQL[@]}" -tAc "SELECT ingestd_feed_view('raleigh', 'zoning')")
"${PSQL[@]}" -c "SELECT feature_id, zone_code, height_stories, adopted, GeometryType(geom) AS geom
	FROM $zoning_view ORDER BY feature_id LIMIT 3" 2>/dev/null || true
# Common layers (README.md, "Common layers"): the two address feeds,
# conformed into one layer across jurisdictions.
"${PSQL[@]}" -c "SELECT jurisdiction, count(*) AS addresses FROM common.addresses GROUP BY 1 ORDER BY 1" 2>/dev/null || true
"${PSQL[@]}" -c "SELECT jurisdiction, number, street, city FROM common.addresses LIMIT 5" 2>/dev/null || true
if [[ $pending != 0 ]]; then
	log "not every feed is fresh after 120 s; see .demo/ingestd.log"
	exit 1
fi

if $keep; then
	log "ingestd keeps running (Ctrl-C stops it); try: psql \"$DATABASE_URL\""
	wait "$ingestd_pid"
fi
