#!/usr/bin/env bash
# bench.sh — benchmarks that print figures (never part of `go test ./...`).
#
#   scripts/bench.sh poll     fetch → decode → load of a generated parcel layer at
#                             200k and 400k features, each in its own process with
#                             the feed server in another: features/s, peak heap,
#                             peak RSS. Peak memory must stay flat as the layer doubles.
#   scripts/bench.sh storm    a flapping county under a naive poller (4 retries, no
#                             breaker) and under ingestd: requests the county received.
#   scripts/bench.sh scale    5,000 feeds over 1,000 origins on one instance: scheduling
#                             lag p50/p99, peak RSS and goroutines; then a database of
#                             5,000 feeds (INGESTD_READS_FEEDS) and every read an operator,
#                             `ingestd status` or the status page runs, and the history and
#                             change-feed functions: planning and execution time, buffers,
#                             relation locks, seven runs on one connection; relations per feed.
#   scripts/bench.sh gdal     the same paged WFS 2.0 layers (200k parcels, 1M points; GeoJSON
#                             and GML 3.2) loaded by ingestd poll (a fresh load, then an
#                             unchanged refresh), by GDAL's ogr2ogr (WFS driver, paging,
#                             PG_USE_COPY; a reload is all it can do) and by a raw COPY of the
#                             same rows prepared in advance into a bare table, then its primary
#                             key and GiST built (the floor): median wall time, features/s,
#                             peak RSS, and the ratios; then each layer's storage (table, indexes,
#                             TOAST) beside ogr2ogr's table (BENCH_PARCELS=250000 for the 250k layer).
#   scripts/bench.sh hostile  the hostile corpus (internal/hostile.Cases: every kind, ArcGIS REST and
#                             OGC API included; full-size bombs) served by
#                             feedserver -hostile in its own process, polled by ONE `ingestd run`
#                             (every feed caught up at once, max_in_flight 20, then 30 s of replays of
#                             the parked polls) in a database of its own: that process's peak RSS
#                             (VmHWM; target < 256 MB), then each case
#                             alone in `ingestd poll` (peak RSS per case: the ten largest); then the
#                             ArcGIS REST bombs (BenchmarkArcGISBombs) and OGC API document bombs
#                             (TestDocumentBombsPeakRSS), each case in a process of its own.
#   scripts/bench.sh arcgis   a 200,000-polygon ArcGIS REST layer (internal/tools/arcgisserver, the arcgistest
#                             fixture: Koop takes 4 s a request at this size, see docs/interop.md) loaded by
#                             ingestd poll (id list, objectIds batches of maxRecordCount 2000) and by
#                             GDAL's ogr2ogr (ESRIJSON, resultOffset paging ordered by OBJECTID) from
#                             the same service into the same database: wall, CPU, peak RSS, rows and
#                             distinct ids for both, per run.
#   scripts/bench.sh ogcapi   a 250,000-parcel OGC API – Features collection (feedserver
#                             -ogcapi, pages by next links) loaded into the same database by
#                             ingestd poll (kind ogcapi) and by GDAL's ogr2ogr (OAPIF driver,
#                             -oo PAGE_SIZE): wall, CPU (user+sys), peak RSS, rows and
#                             distinct ids, per run and the medians.
#   scripts/bench.sh incremental  issue 27: a tracked 100,000-parcel ArcGIS layer (arcgistest.Parcels,
#                             editFieldsInfo), BENCH_INCREMENTAL_ROUNDS (default 20) rounds of 0.5 %
#                             edits, 0.1 % deletes and 3 adds, polled after each by a feed read by edit
#                             date and by one dumped whole (incremental: off): every incremental snapshot
#                             identical to the full dump's (TestIncrementalMatchesFullDump asserts it and
#                             the bytes, <= 2 %), and the mean bytes and wall per refresh of each.
#   scripts/bench.sh micro    the packages' micro-benchmarks (decoders, staging).
#   scripts/bench.sh conform  the 250,000-parcel fixture's properties conformed to addresses by a
#                             realistic conform (internal/layertest.ParcelsConform: two regexps, a join,
#                             prefixed_number/postfixed_street, a field): rows/s per core of the conform
#                             alone (Go, on a property map and bound to a row; also per CPU second), then
#                             the first load of the same 250,000 parcels without a conform and conformed
#                             into common.addresses, alternating in one sitting: medians of BENCH_COUNT
#                             of the wall and the CPU (this process and its backends). Goal: <= 10 % more wall.
#   scripts/bench.sh statuspage  the status page of a 250,000-parcel feed (loaded by the real
#                             poller): ns per page (target < 300 ms) and the thumbnail's bytes
#                             (target < 200 KB).
#   scripts/bench.sh bigdoc   one GeoJSON document of 250k and of 1M parcels (BENCH_BIGDOC_SIZES)
#                             served by lighttpd, and an unpaged WFS layer of 250k (feed server):
#                             ingestd poll first load, refresh of the unchanged document (304),
#                             refresh after a touch (full fetch, same content), vs ogr2ogr reading
#                             the same file from disk into the same database: wall, CPU, peak RSS,
#                             and each layer's storage (table, indexes, TOAST) beside ogr2ogr's. Targets: peak RSS <= 64 MB at every size, first load <= 1/1.5 of
#                             ogr2ogr's wall at 250k. BENCH_BASE=<commit> also times that commit's
#                             ingestd (first load, refresh) in a database of its own.
#   scripts/bench.sh shpzip   a zipped Shapefile of 250,000 parcels (BENCH_SHPZIP_FEATURES; generated
#                             once: the feed server's parcels, through ogr2ogr to a Shapefile in NC
#                             State Plane, zipped) served by lighttpd: ingestd poll (kind file) first
#                             load vs ogr2ogr from the same zip (/vsizip/) into the same database, in
#                             one sitting: wall, CPU, peak RSS (target <= 64 MB for ingestd).
#   scripts/bench.sh filegdb  the same parcels as a zipped File Geodatabase (ogr2ogr -f OpenFileGDB;
#                             BENCH_FILEGDB_FEATURES), the same comparison with ogr2ogr /vsizip/.
#   scripts/bench.sh breaker  the breaker's and the dead-letter replayer's timings on the real clock
#                             (the tests assert only order and counts): how soon a trip or an
#                             override reaches another instance, probes per cooldown across two
#                             instances, time to close after the last cooldown, the stall when a
#                             prober dies (vs its lease), a 429's pause, rate-limit spacing, and
#                             dispatch lateness. Means over BENCH_BREAKER_ROUNDS rounds (default 5).
#   scripts/bench.sh cluster  TestCluster's scenario (BenchmarkCluster, cmd/ingestd): three `ingestd
#                             run` sharing one database and three origins, one flapping. The timings
#                             the test may not assert: successful polls per 1 s tick per feed (~1),
#                             the time to trip, requests to the open origin per cooldown (~1), the
#                             time to close it after the probe holder's kill -9 and the lease
#                             takeover after the dead lease expired, the time to stop traffic after
#                             `breaker open` and resume it after `close`, SIGHUP and SIGTERM handling;
#                             BENCH_COUNT runs. A slow machine gives slow figures, not a red build.
#   scripts/bench.sh pacing   the origin's pacing (issue 30, BenchmarkPacingPolicies in ./breaker): an OGC
#                             API collection in pygeoapi's mode (pages of 1000) with a per-page server delay
#                             of 50 ms, 500 ms and 5 s, read under the old fixed 5/s, unpaced and the
#                             adaptive targets 1 and 2: one poll's wall (50,000 parcels at 50 ms) and what
#                             pacing added; 8 polls of one origin at once: pages/s, mean and peak requests
#                             in flight. GDAL's ogr2ogr (OAPIF) on the same server when installed.
#                             BENCH_PACING_FEATURES (50000), BENCH_PACING_SLOW=0 leaves out the 5 s server.
#   scripts/bench.sh deadorigin  one hourly feed on a port that refuses connections, default
#                             policy, a real `ingestd run` (its poll, then its dead letter's replays):
#                             failed calls until the origin opens, seconds to open, connection
#                             attempts before and in BENCH_DEADORIGIN_AFTER (3) minutes after. ~8 min.
#   scripts/bench.sh fleet    a catalog's worth of feeds: BENCH_FEEDS (5000) feeds over BENCH_FLEET_ORIGINS (1000)
#                             loopback origins (ArcGIS 70 %, GeoJSON and file downloads the rest; sizes
#                             log-normal, BENCH_FLEET_BIG layers of BENCH_FLEET_BIG_FEATURES), served by
#                             feedserver -fleet and arcgisserver -fleet in child processes, BENCH_FLEET_FLAPPING
#                             of them down for a while; BENCH_FLEET_INSTANCES (4) `ingestd run` on one new
#                             database, the second SIGKILLed once BENCH_FLEET_KILL_AT of the feeds are loaded
#                             and started again BENCH_FLEET_RESTART_AFTER later (internal/tools/fleet): time
#                             until every feed is fresh and the share over time, polls per minute, lag p50/p99,
#                             peak RSS and goroutines per instance, connections and locks, PostgreSQL's CPU
#                             and I/O, relations, the tables by size and by blocks read, staging's size and
#                             the oldest transaction every 30 s, the statements running at the samples, when
#                             the killed instance's claims were released and taken again; checks (exit 1
#                             when one fails): no feed polled by two
#                             instances at once, no poll lost or applied twice, every dead letter replayed
#                             once, the killed instance's claims taken over within their leases. Heavy at full
#                             size; BENCH_FEEDS=300 BENCH_FLEET_ORIGINS=60 BENCH_FLEET_BIG_FEATURES=20000 is a
#                             run of a few minutes.
#   scripts/bench.sh all      all of them but fleet (default).
#
# Environment: DATABASE_URL (default: database ingestd_bench in the project's PostGIS,
# started on demand),
# BENCH_GDAL_PORT (first of the two ports bench.sh gdal serves on, default 18201),
# BENCH_ARCGIS_PORT (bench.sh arcgis's server, default 18312), BENCH_ARCGIS_FEATURES (200000),
# BENCH_INCREMENTAL_FEATURES (bench.sh incremental, default 100000), BENCH_INCREMENTAL_ROUNDS (20),
# BENCH_INCREMENTAL_SPREAD_MS (a round's edits stamped over this many ms before it; 1: one instant),
# BENCH_SIZES (default "200000 400000"), BENCH_COUNT runs per size (default 3);
# bench.sh ogcapi: BENCH_OGCAPI_PORT (default 18211), BENCH_OGCAPI_FEATURES (default 250000),
# BENCH_OGCAPI_PAGE_SIZE (limit of both tools, default 1000);
# bench.sh hostile: BENCH_HOSTILE_PORT (first of its ports, default 18300), BENCH_HOSTILE_SKIP
# (a regexp of cases to leave out), BENCH_HOSTILE_MAX_GENERATED (cut generated bodies, bytes),
# BENCH_HOSTILE_REPLAY (seconds of replays after the first pass, default 30),
# BENCH_HOSTILE_KILL_MB (kill the run past this RSS, default 4096: the machine is shared);
# bench.sh bigdoc: BENCH_BIGDOC_PORT (first of its three ports, default 18205),
# BENCH_BIGDOC_SIZES (default "250000 1000000"), BENCH_BIGDOC_SRID (the documents' CRS,
# default 2264, NC State Plane; delete bench-out/bigdoc to regenerate), BENCH_BASE (a commit
# to compare with);
# bench.sh shpzip: BENCH_SHPZIP_PORT (first of its two ports, default 18215),
# BENCH_SHPZIP_FEATURES (default 250000; delete bench-out/shpzip to regenerate).
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
what=${1:-all}
sizes=${BENCH_SIZES:-200000 400000}
count=${BENCH_COUNT:-3}

if [[ -z ${DATABASE_URL:-} ]]; then
	# A database of its own, so that benchmark feeds never show up in the
	# demo's feed_freshness.
	main_url=$(scripts/postgis.sh start)
	DATABASE_URL=${main_url/\/ingestd\?//ingestd_bench?}
	if [[ $(psql "$main_url" -X -tAc "SELECT 1 FROM pg_database WHERE datname = 'ingestd_bench'") != 1 ]]; then
		psql "$main_url" -X -q -c "CREATE DATABASE ingestd_bench"
	fi
	psql "$DATABASE_URL" -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgis"
fi
export DATABASE_URL

bench_poll() {
	mkdir -p bin
	go build -o bin/feedserver ./internal/tools/feedserver
	go test -c -o bin/feeds.test ./feeds
	local port=18091 max=0
	for n in $sizes; do max=$((n > max ? n : max)); done
	bin/feedserver -serve "127.0.0.1:${port}=" -generate "parcels=${max}" >/dev/null 2>&1 &
	local fs=$!
	trap 'kill $fs 2>/dev/null || true' RETURN
	sleep 1
	echo "== poll: fetch → decode → COPY → apply, WFS 2.0 GeoJSON pages of 5000, feed server in its own process"
	for n in $sizes; do
		# The server always serves $max features; a smaller layer is a
		# separate server so that the count matches.
		local url="http://127.0.0.1:${port}/wfs"
		if [[ $n != "$max" ]]; then
			bin/feedserver -serve "127.0.0.1:$((port + 1))=" -generate "parcels=${n}" >/dev/null 2>&1 &
			local fs2=$!
			sleep 1
			url="http://127.0.0.1:$((port + 1))/wfs"
		fi
		for _ in $(seq 1 "$count"); do
			INGESTD_BENCH_FEATURES=$n INGESTD_BENCH_URL=$url \
				bin/feeds.test -test.run '^$' -test.bench '^BenchmarkPollLayer$' -test.benchtime 1x |
				awk -v n="$n" '/^BenchmarkPollLayer/ { printf "features=%-8d %s\n", n, substr($0, index($0, $3)) }'
		done
		if [[ $n != "$max" ]]; then kill "$fs2" 2>/dev/null || true; fi
	done
}

bench_storm() {
	go test -run '^$' -bench '^BenchmarkRetryStorm$' -benchtime 1x ./feeds | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
}

bench_scale() {
	go test -run '^$' -bench '^BenchmarkSchedulerScale$' -benchtime 1x -timeout 15m ./feeds | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
	go test -run '^$' -bench '^BenchmarkReadsAtScale$' -benchtime 1x -timeout 40m ./feeds/postgis | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
}

# timed CMD...: runs CMD, appends "wall_seconds peak_rss_kb" to $timing.
timed() {
	/usr/bin/time -f '%e %M' -o "$out/time" "$@" >"$out/last.log" 2>&1 || {
		echo "bench.sh: failed: $*" >&2
		tail -n 20 "$out/last.log" >&2
		return 1
	}
	cat "$out/time" >>"$timing"
}

# median_of FILE: "median_wall median_rss_mb" of the runs in FILE.
median_of() {
	local n wall rss
	n=$(wc -l <"$1")
	wall=$(cut -d' ' -f1 "$1" | sort -g | sed -n "$(((n + 1) / 2))p")
	rss=$(cut -d' ' -f2 "$1" | sort -g | sed -n "$(((n + 1) / 2))p")
	echo "$wall $((rss / 1024))"
}

# layer_storage JURISDICTION FEED [OGR_TABLE]: the feed's storage — every
# table ingestd keeps its current features in (today's partition of features
# and its typed layer; one layer table once there is one copy) — beside
# ogr2ogr's table of the same layer: table (heap, FSM, VM), indexes, TOAST
# (with its index), in MB, and the feed's total over ogr2ogr's (the goal:
# <= 1.25). History and the change log are not a layer's storage.
layer_storage() {
	psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -v j="$1" -v f="$2" -v ogr="${3:-}" -P footer=off <<-'EOF'
		SELECT to_regprocedure('ingestd_feed_partition(text, text)') IS NOT NULL AS has_partition \gset
		\if :has_partition
		SELECT coalesce(to_regclass(format('ingestd.%I', ingestd_feed_partition(:'j', :'f')))::text, '') AS part \gset
		\else
		\set part ''
		\endif
		WITH rels(label, rel, ord) AS (
			SELECT :'f' || ' partition', nullif(:'part', '')::regclass, 1
			UNION ALL SELECT :'f' || ' layer', to_regclass(ingestd_feed_view(:'j', :'f')), 2
			UNION ALL SELECT 'ogr2ogr ' || :'ogr', to_regclass(nullif(:'ogr', '')), 3
		), sized AS (
			SELECT r.label, r.ord, pg_table_size(r.rel) - coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS tbl,
				pg_indexes_size(r.rel) AS idx, coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
				pg_total_relation_size(r.rel) AS total
			FROM rels r JOIN pg_class c ON c.oid = r.rel AND c.relkind = 'r'
		)
		(SELECT label AS storage, round(tbl / 1048576.0, 1) AS table_mb, round(idx / 1048576.0, 1) AS indexes_mb,
			round(toast / 1048576.0, 1) AS toast_mb, round(total / 1048576.0, 1) AS total_mb
		FROM sized ORDER BY ord)
		UNION ALL
		SELECT :'f' || ' total / ogr2ogr', NULL, NULL, NULL,
			round(sum(total) FILTER (WHERE ord < 3)::numeric / nullif(sum(total) FILTER (WHERE ord = 3), 0), 2)
		FROM sized HAVING count(*) FILTER (WHERE ord = 3) > 0;
	EOF
}

bench_gdal() {
	command -v ogr2ogr >/dev/null || {
		echo "bench.sh: installing gdal-bin for ogr2ogr" >&2
		apt-get install -y -qq gdal-bin >&2 || { apt-get update -qq && apt-get install -y -qq gdal-bin >&2; }
	}
	mkdir -p bin bench-out
	out=$ROOT/bench-out
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	# Ports of the two feed servers: a server left over on them would be
	# benchmarked instead (with its own layer sizes), so a taken port fails.
	local p1=${BENCH_GDAL_PORT:-18201}
	local p2=$((p1 + 1))
	local parcels=${BENCH_PARCELS:-200000} points=${BENCH_POINTS:-1000000} page=${BENCH_PAGE_SIZE:-5000}
	# Two servers of the same layers: GDAL's WFS driver applies the advertised
	# axis order to GeoJSON too, so its GeoJSON runs read a CRS84 server.
	bin/feedserver -serve 127.0.0.1:${p1}= -generate "parcels=$parcels" -generate "points=points:$points" >/dev/null 2>&1 &
	local fs1=$!
	bin/feedserver -crs84 -serve 127.0.0.1:${p2}= -generate "parcels=$parcels" -generate "points=points:$points" >/dev/null 2>&1 &
	local fs2=$!
	trap 'kill $fs1 $fs2 2>/dev/null || true' RETURN
	sleep 1
	if ! kill -0 "$fs1" 2>/dev/null || ! kill -0 "$fs2" 2>/dev/null; then
		echo "bench.sh: a feed server did not start: ports ${p1}/${p2} taken? (set BENCH_GDAL_PORT)" >&2
		return 1
	fi
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	local pg="PG:$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"host={p.hostname} port={p.port} dbname={p.path[1:]} user={p.username}")' "$DATABASE_URL")"
	cat >"$out/bench.yaml" <<-EOF
		max_in_flight: 20
		defaults:
		  page_size: $page
		  timeout: 1h
		  breaker: {rate_limit: 0}
		jurisdictions:
		  - id: bench
		    feeds:
		      - {id: parcels_json, kind: wfs, url: "http://127.0.0.1:${p1}/wfs", type_name: parcels, sort_by: pin, output_format: application/json}
		      - {id: parcels_gml, kind: wfs, url: "http://127.0.0.1:${p1}/wfs", type_name: parcels, sort_by: pin, output_format: "application/gml+xml; version=3.2"}
		      - {id: points_json, kind: wfs, url: "http://127.0.0.1:${p1}/wfs", type_name: points, sort_by: address_id, output_format: application/json}
		      - {id: points_gml, kind: wfs, url: "http://127.0.0.1:${p1}/wfs", type_name: points, sort_by: address_id, output_format: "application/gml+xml; version=3.2"}
	EOF
	bin/ingestd migrate >/dev/null
	# The floor: the same rows COPYed into a bare table, then its primary key
	# and GiST index built in bulk (as ingestd builds a first load's, with
	# the same maintenance_work_mem) — the fastest way to the same result.
	local floor_sql="SET maintenance_work_mem = '256MB';
		ALTER TABLE bench_copy ADD PRIMARY KEY (feature_id);
		CREATE INDEX bench_copy_geom ON bench_copy USING gist (geom)"

	printf '\n== loaders, medians of %s runs, pages of %s (a fresh load each run; ingestd with change detection)\n' "$count" "$page"
	printf '%-8s %-8s %-15s %9s %12s %9s\n' layer format tool wall_s features/s rss_MB
	local layer fmt n url ing ogr cp
	for layer in parcels points; do
		n=$parcels
		[[ $layer == points ]] && n=$points
		bin/feedserver -copy-rows "$layer=$([[ $layer == points ]] && echo points:)$n" >"$out/$layer.tsv"
		local tsv="$out/$layer.tsv"
		for fmt in json gml; do
			local feedtable="ingestd_feed_partition('bench', '${layer}_$fmt')"
			url="WFS:http://127.0.0.1:${p1}/wfs"
			local extra=()
			if [[ $fmt == json ]]; then
				url="WFS:http://127.0.0.1:${p2}/wfs?OUTPUTFORMAT=application/json"
				extra=(-forceNullable) # GDAL's schema has a NOT NULL gml_id the GeoJSON lacks
			fi
			: >"$out/copy.$layer.$fmt"
			: >"$out/ingestd.$layer.$fmt"
			: >"$out/refresh.$layer.$fmt"
			: >"$out/ogr.$layer.$fmt"
			# Run by run, each tool in turn: the VM's speed drifts over
			# minutes, and a ratio is only fair between neighbours.
			for _ in $(seq 1 "$count"); do
				# A fresh load, like ogr2ogr -overwrite: the feed's table
				# (its partition of features) and change log go. TRUNCATE,
				# not DELETE: a million deleted rows per run would leave the
				# append-only log full of holes no daemon's log has.
				vacuum_staging
				"${psql[@]}" -c "SET client_min_messages = warning" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', $feedtable); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ${feedtable/ingestd_feed_partition/ingestd_feed_view}); END \$\$" \
					-c "TRUNCATE feature_changes" \
					-c "VACUUM staged_pages, feature_changes" -c "CHECKPOINT"
				timing=$out/ingestd.$layer.$fmt
				timed bin/ingestd poll -config "$out/bench.yaml" -log-level warn "bench/${layer}_$fmt"
				# A refresh of the mirrored layer, unchanged: what every later
				# poll of a quiet layer costs (ogr2ogr has no other way than a
				# reload). Staging and the new table vacuumed, as autovacuum
				# would have between two polls of a daemon.
				vacuum_staging
				"${psql[@]}" -c "VACUUM staged_pages" \
					-c "VACUUM ANALYZE $("${psql[@]}" -tAc "SELECT coalesce(to_regclass(quote_ident($feedtable))::text, ${feedtable/ingestd_feed_partition/ingestd_feed_view})")" -c "CHECKPOINT"
				timing=$out/refresh.$layer.$fmt
				timed bin/ingestd poll -config "$out/bench.yaml" -log-level warn "bench/${layer}_$fmt"
				"${psql[@]}" -c "CHECKPOINT"
				timing=$out/ogr.$layer.$fmt
				timed ogr2ogr -f PostgreSQL "$pg" "$url" "ingestd:$layer" -nln "ogr_$layer" -overwrite "${extra[@]}" \
					--config OGR_WFS_PAGING_ALLOWED ON --config OGR_WFS_PAGE_SIZE "$page" --config PG_USE_COPY YES
				"${psql[@]}" -c "DROP TABLE IF EXISTS bench_copy" \
					-c "CREATE TABLE bench_copy (feature_id text, geom geometry(Geometry, 4326), properties jsonb)" -c "CHECKPOINT"
				timing=$out/copy.$layer.$fmt
				timed "${psql[@]}" -c "\\copy bench_copy FROM '$tsv'" -c "$floor_sql"
			done
			read -r iw ir < <(median_of "$out/ingestd.$layer.$fmt")
			read -r rw rr < <(median_of "$out/refresh.$layer.$fmt")
			read -r cw cr < <(median_of "$out/copy.$layer.$fmt")
			read -r ow or < <(median_of "$out/ogr.$layer.$fmt")
			awk -v l="$layer" -v f="$fmt" -v n="$n" -v iw="$iw" -v ir="$ir" -v rw="$rw" -v rr="$rr" -v ow="$ow" -v or="$or" -v cw="$cw" -v cr="$cr" 'BEGIN {
				printf "%-8s %-8s %-15s %9.2f %12.0f %9d\n", l, f, "ingestd load", iw, n / iw, ir
				printf "%-8s %-8s %-15s %9.2f %12.0f %9d\n", l, f, "ingestd refresh", rw, n / rw, rr
				printf "%-8s %-8s %-15s %9.2f %12.0f %9d\n", l, f, "ogr2ogr", ow, n / ow, or
				printf "%-8s %-8s %-15s %9.2f %12.0f %9d\n", l, f, "COPY", cw, n / cw, cr
				printf "%-8s %-8s load:    ingestd/ogr2ogr throughput %.2f (target >= 1.5), ingestd/COPY time %.2f (target <= 2)\n", l, f, ow / iw, iw / cw
				printf "%-8s %-8s refresh: ingestd/ogr2ogr throughput %.2f, ingestd/COPY time %.2f\n", l, f, ow / rw, rw / cw
			}'
			# The layer's storage after the last run (ogr2ogr's table is the
			# same run's), side by side.
			layer_storage bench "${layer}_$fmt" "ogr_$layer"
		done
	done
}

hostile_pids=
hostile_db=
hostile_cleanup() {
	if [[ -n $hostile_pids ]]; then
		# shellcheck disable=SC2086 # a list of pids
		kill $hostile_pids 2>/dev/null || true
		hostile_pids=
	fi
	if [[ -n $hostile_db ]]; then
		psql "$DATABASE_URL" -X -q -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $hostile_db WITH (FORCE)" || true
		hostile_db=
	fi
}

bench_hostile() {
	mkdir -p bin bench-out
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	local out=$ROOT/bench-out port=${BENCH_HOSTILE_PORT:-18300}
	local cfg=$out/hostile.yaml db=ingestd_hostile_bench
	# The socrata feeds' app_token, for every ingestd the corpus config is
	# given to (internal/hostile.AppTokenVar and AppToken).
	local -x INGESTD_HOSTILE_APP_TOKEN=hstAppT0ken7q2zW
	local url=${DATABASE_URL%%\?*}
	url="${url%/*}/$db"
	[[ $DATABASE_URL == *\?* ]] && url="$url?${DATABASE_URL#*\?}"
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	# A fresh database per pass: parked polls of one pass would make the
	# next pass's polls of the same feeds refuse at once.
	fresh_db() {
		"${psql[@]}" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
		psql "$url" -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgis"
		bin/ingestd migrate -database-url "$url" >/dev/null
	}
	fresh_db
	rm -f "$cfg"
	bin/feedserver -hostile "127.0.0.1:${port}=testdata/hostile" -hostile-config "$cfg" \
		-hostile-skip "${BENCH_HOSTILE_SKIP:-}" -hostile-max-generated "${BENCH_HOSTILE_MAX_GENERATED:-0}" >"$out/hostile-feedserver.log" 2>&1 &
	hostile_pids=$!
	hostile_db=$db
	# On RETURN and on EXIT (set -e leaves without RETURN): a feed server
	# left behind would hold the ports. Globals, since locals are gone by EXIT.
	trap hostile_cleanup RETURN EXIT
	for _ in $(seq 1 50); do [[ -s $cfg ]] && break; sleep 0.1; done
	if [[ ! -s $cfg ]] || ! kill -0 "$hostile_pids" 2>/dev/null; then
		echo "bench.sh: the hostile feed server did not start: ports from ${port} taken? (set BENCH_HOSTILE_PORT)" >&2
		cat "$out/hostile-feedserver.log" >&2
		return 1
	fi
	local feeds
	feeds=$(grep -c '^      - id:' "$cfg")
	echo "== hostile: $feeds cases, full size (gzip bombs of 2 GiB, endless streams, 200 MB strings), one ingestd run"
	bin/ingestd run -config "$cfg" -database-url "$url" -metrics-addr off -log-level warn >"$out/hostile-run.log" 2>&1 &
	local in=$!
	hostile_pids="$hostile_pids $in"
	local start=$SECONDS done=0 running=1 hwm=0 rss killed=
	local kill_kb=$((${BENCH_HOSTILE_KILL_MB:-4096} * 1024))
	# Every feed has been polled once (succeeded, failed or parked) and none is running.
	while ((SECONDS - start < ${BENCH_HOSTILE_WAIT:-300})); do
		sleep 1
		kill -0 "$in" 2>/dev/null || break
		hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$in/status" 2>/dev/null || echo "$hwm")
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$in/status" 2>/dev/null || echo 0)
		if ((rss > kill_kb)); then
			# A shared machine: past the bound the figure is known to be a failure.
			killed=" (killed at ${rss} kB RSS, over BENCH_HOSTILE_KILL_MB)"
			kill -9 "$in" 2>/dev/null || true
			break
		fi
		read -r done running < <(psql "$url" -X -tAF' ' -c "SELECT count(DISTINCT (jurisdiction, feed)) FILTER (WHERE status <> 'running'), count(*) FILTER (WHERE status = 'running') FROM polls")
		((done >= feeds && running == 0)) && break
	done
	# Then the replays of the parked polls (failed_backoff 2s, doubling).
	local first=$((SECONDS - start)) replay_end=$((SECONDS + ${BENCH_HOSTILE_REPLAY:-30}))
	while [[ -z $killed ]] && ((SECONDS < replay_end)) && kill -0 "$in" 2>/dev/null; do
		sleep 1
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$in/status" 2>/dev/null || echo 0)
		if ((rss > kill_kb)); then
			killed=" (killed at ${rss} kB RSS, over BENCH_HOSTILE_KILL_MB)"
			kill -9 "$in" 2>/dev/null || true
		fi
	done
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$in/status" 2>/dev/null || echo "$hwm")
	local replays
	replays=$(psql "$url" -X -tA -c "SELECT coalesce(sum(attempts), 0) FROM dead_letter")
	local alive=yes
	kill -0 "$in" 2>/dev/null || alive="NO (it exited: see $out/hostile-run.log)"
	kill -TERM "$in" 2>/dev/null || true
	wait "$in" 2>/dev/null || true
	local panics
	panics=$(grep -c -e 'panic:' -e '^goroutine ' "$out/hostile-run.log" || true)
	printf 'one ingestd run: %d of %d feeds polled in %ds, then %d replays of parked polls in %ds; %d polls running at the first pass'"'"'s end, alive at the end: %s, panics: %s\n' \
		"$done" "$feeds" "$first" "$replays" "$((SECONDS - start - first))" "$running" "$alive" "$panics"
	printf 'peak RSS (VmHWM) of the ingestd run process: %d MB (target < 256 MB)%s\n' "$((hwm / 1024))" "$killed"
	psql "$url" -X -tA -c "SELECT format('polls: %s', string_agg(format('%s %s', status, n), ', ')) FROM (SELECT status, count(*) n FROM polls GROUP BY 1 ORDER BY 1) s"

	echo "== hostile: each case alone in ingestd poll: the ten largest peak RSS"
	fresh_db
	: >"$out/hostile-cases"
	: >"$out/hostile-cases.log"
	local key
	for key in $(awk '/^  - id:/ { j = $3 } /^      - id:/ { print j "/" $3 }' "$cfg"); do
		/usr/bin/time -f "%M $key %e" -a -o "$out/hostile-cases" \
			prlimit --as=$((kill_kb * 1024 * 4)) bin/ingestd poll -config "$cfg" -database-url "$url" -migrate=false -log-level error "$key" >>"$out/hostile-cases.log" 2>&1 || true
	done
	sort -rn "$out/hostile-cases" | awk 'NR <= 10 { printf "  %6.1f MB  %-45s %6.1fs\n", $1 / 1024, $2, $3 }'

	# The ArcGIS REST and OGC API corpora (issue 31): their bombs are in the
	# documents around the features (layer descriptions, id lists, OpenAPI,
	# collections), each case polled in a process of its own.
	echo "== hostile: ArcGIS REST bombs, each a whole poll into PostGIS in its own process: peak RSS (target < 256 MB)"
	go test -count=1 -run '^$' -bench '^BenchmarkArcGISBombs$' -benchtime 1x ./arcgis/interop |
		awk '/: peak RSS/ { print "  " $0 }'
	echo "== hostile: OGC API document bombs, each read in its own process: peak RSS (target < 256 MB)"
	go test -count=1 -run '^TestDocumentBombsPeakRSS$' -v ./ogcapi |
		awk '/peak RSS/ { sub(/^[ \t]*/, ""); print "  " $0 }'
}

bench_arcgis() {
	command -v ogr2ogr >/dev/null || {
		echo "bench.sh: ogr2ogr missing (gdal-bin; scripts/mapserver.sh installs it)" >&2
		return 1
	}
	mkdir -p bin bench-out
	out=$ROOT/bench-out
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/arcgisserver ./internal/tools/arcgisserver
	local port=${BENCH_ARCGIS_PORT:-18312} n=${BENCH_ARCGIS_FEATURES:-200000}
	bin/arcgisserver -listen "127.0.0.1:$port" -generate "parcels=$n" -max-record-count 2000 >"$out/arcgis.url" 2>"$out/arcgis.log" &
	local as=$!
	trap 'kill $as 2>/dev/null || true' RETURN
	local url=""
	for _ in $(seq 1 50); do
		url=$(head -1 "$out/arcgis.url" 2>/dev/null || true)
		[[ -n $url ]] && curl -fsS -m 5 -o /dev/null "$url?f=json" 2>/dev/null && break
		url=""
		sleep 0.2
	done
	if [[ -z $url ]] || ! kill -0 "$as" 2>/dev/null; then
		echo "bench.sh: arcgisserver did not start on port $port (taken? set BENCH_ARCGIS_PORT)" >&2
		return 1
	fi
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	local pg="PG:$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"host={p.hostname} port={p.port} dbname={p.path[1:]} user={p.username}")' "$DATABASE_URL")"
	cat >"$out/arcgis.yaml" <<-EOF
		defaults:
		  timeout: 1h
		  breaker: {rate_limit: 0}
		jurisdictions:
		  - id: bench
		    feeds:
		      - {id: arcgis_parcels, kind: arcgis, url: "$url"}
	EOF
	bin/ingestd migrate >/dev/null
	local feedtable="ingestd_feed_partition('bench', 'arcgis_parcels')"
	printf '\n== arcgis: %s polygons (maxRecordCount 2000) from %s, %s runs\n' "$n" "$url" "$count"
	printf '%-8s %8s %8s %8s %9s %9s\n' tool wall_s cpu_s rss_MB rows distinct
	for _ in $(seq 1 "$count"); do
		"${psql[@]}" -c "SET client_min_messages = warning" \
			-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', $feedtable); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ${feedtable/ingestd_feed_partition/ingestd_feed_view}); END \$\$" \
			-c "UPDATE feed_status SET validators = NULL WHERE jurisdiction = 'bench' AND feed = 'arcgis_parcels'" \
			-c "DROP TABLE IF EXISTS ogr_arcgis" -c "CHECKPOINT"
		/usr/bin/time -f '%e %U %S %M' -o "$out/time" bin/ingestd poll -config "$out/arcgis.yaml" -log-level warn bench/arcgis_parcels >"$out/last.log" 2>&1 ||
			{ tail -20 "$out/last.log" >&2; return 1; }
		read -r w u s m <"$out/time"
		read -r rows distinct < <("${psql[@]}" -tA -F ' ' -c "SELECT count(*), count(DISTINCT feature_id) FROM features WHERE jurisdiction = 'bench' AND feed = 'arcgis_parcels'")
		awk -v w="$w" -v u="$u" -v s="$s" -v m="$m" -v r="$rows" -v d="$distinct" 'BEGIN { printf "%-8s %8.2f %8.2f %8d %9d %9d\n", "ingestd", w, u + s, m / 1024, r, d }'
		"${psql[@]}" -c "CHECKPOINT"
		/usr/bin/time -f '%e %U %S %M' -o "$out/time" ogr2ogr -f PostgreSQL "$pg" \
			"ESRIJSON:$url/query?where=1%3D1&outFields=*&orderByFields=OBJECTID+ASC&f=json" \
			-nln ogr_arcgis -nlt PROMOTE_TO_MULTI -overwrite --config PG_USE_COPY YES >"$out/last.log" 2>&1 ||
			{ tail -20 "$out/last.log" >&2; return 1; }
		read -r w u s m <"$out/time"
		read -r rows distinct < <("${psql[@]}" -tA -F ' ' -c "SELECT count(*), count(DISTINCT objectid) FROM ogr_arcgis")
		awk -v w="$w" -v u="$u" -v s="$s" -v m="$m" -v r="$rows" -v d="$distinct" 'BEGIN { printf "%-8s %8.2f %8.2f %8d %9d %9d\n", "ogr2ogr", w, u + s, m / 1024, r, d }'
	done
	echo "(cpu_s is the loader's own process; the server and PostgreSQL are not counted. The machine is shared: figures are noisy.)"
}

bench_ogcapi() {
	command -v ogr2ogr >/dev/null || {
		echo "bench.sh: installing gdal-bin for ogr2ogr" >&2
		apt-get install -y -qq gdal-bin >&2 || { apt-get update -qq && apt-get install -y -qq gdal-bin >&2; }
	}
	mkdir -p bin bench-out
	out=$ROOT/bench-out
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	local port=${BENCH_OGCAPI_PORT:-18211} n=${BENCH_OGCAPI_FEATURES:-250000} page=${BENCH_OGCAPI_PAGE_SIZE:-1000}
	bin/feedserver -ogcapi "127.0.0.1:${port}" -generate "parcels=$n" >/dev/null 2>&1 &
	local fs=$!
	trap 'kill $fs 2>/dev/null || true' RETURN
	sleep 1
	if ! kill -0 "$fs" 2>/dev/null; then
		echo "bench.sh: the OGC API server did not start: port ${port} taken? (set BENCH_OGCAPI_PORT)" >&2
		return 1
	fi
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	local pg="PG:$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"host={p.hostname} port={p.port} dbname={p.path[1:]} user={p.username}")' "$DATABASE_URL")"
	local coll="http://127.0.0.1:${port}/collections/parcels"
	cat >"$out/bench-ogcapi.yaml" <<-EOF
		defaults:
		  timeout: 1h
		  breaker: {rate_limit: 0}
		jurisdictions:
		  - id: bench
		    feeds:
		      - {id: ogcapi_parcels, kind: ogcapi, url: "$coll", page_size: $page}
	EOF
	bin/ingestd migrate >/dev/null
	local feedtable="ingestd_feed_partition('bench', 'ogcapi_parcels')"
	: >"$out/ogcapi.ingestd"
	: >"$out/ogcapi.ogr"
	printf '\n== ogcapi: %s parcels, limit %s (pages by next links), a fresh load each run\n' "$n" "$page"
	printf '%-8s %-4s %8s %8s %8s %9s %9s\n' tool run wall_s cpu_s rss_MB rows distinct
	local run f
	for run in $(seq 1 "$count"); do
		vacuum_staging
		"${psql[@]}" -c "SET client_min_messages = warning" \
			-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', $feedtable); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ${feedtable/ingestd_feed_partition/ingestd_feed_view}); END \$\$" \
			-c "TRUNCATE feature_changes" -c "VACUUM staged_pages" -c "CHECKPOINT"
		/usr/bin/time -f '%e %U %S %M' -o "$out/time" bin/ingestd poll -config "$out/bench-ogcapi.yaml" -log-level warn bench/ogcapi_parcels >"$out/last.log" 2>&1 ||
			{ echo "bench.sh: ingestd poll failed" >&2; tail -n 20 "$out/last.log" >&2; return 1; }
		f=$(awk '{ printf "%s %.2f %d", $1, $2 + $3, $4 / 1024 }' "$out/time")
		f="$f $("${psql[@]}" -tAF' ' -c "SELECT count(*), count(DISTINCT feature_id) FROM features WHERE jurisdiction = 'bench' AND feed = 'ogcapi_parcels'")"
		echo "$f" >>"$out/ogcapi.ingestd"
		printf '%-8s %-4s %8s %8s %8s %9s %9s\n' ingestd "$run" $f
		"${psql[@]}" -c "CHECKPOINT"
		/usr/bin/time -f '%e %U %S %M' -o "$out/time" ogr2ogr -f PostgreSQL "$pg" "OAPIF:$coll" -oo "PAGE_SIZE=$page" \
			-nln ogr_ogcapi_parcels -overwrite --config PG_USE_COPY YES >"$out/last.log" 2>&1 ||
			{ echo "bench.sh: ogr2ogr failed" >&2; tail -n 20 "$out/last.log" >&2; return 1; }
		f=$(awk '{ printf "%s %.2f %d", $1, $2 + $3, $4 / 1024 }' "$out/time")
		f="$f $("${psql[@]}" -tAF' ' -c "SELECT count(*), count(DISTINCT id) FROM ogr_ogcapi_parcels")"
		echo "$f" >>"$out/ogcapi.ogr"
		printf '%-8s %-4s %8s %8s %8s %9s %9s\n' ogr2ogr "$run" $f
	done
	local tool file
	for tool in ingestd ogr; do
		file=$out/ogcapi.$tool
		printf '%-8s %-4s %8s %8s %8s %9s %9s\n' "$([[ $tool == ogr ]] && echo ogr2ogr || echo ingestd)" median \
			"$(cut -d' ' -f1 "$file" | sort -g | sed -n "$(((count + 1) / 2))p")" \
			"$(cut -d' ' -f2 "$file" | sort -g | sed -n "$(((count + 1) / 2))p")" \
			"$(cut -d' ' -f3 "$file" | sort -g | sed -n "$(((count + 1) / 2))p")" \
			"$(cut -d' ' -f4 "$file" | sort -g | sed -n "$(((count + 1) / 2))p")" \
			"$(cut -d' ' -f5 "$file" | sort -g | sed -n "$(((count + 1) / 2))p")"
	done
}

# bigdoc_time runs a command under /usr/bin/time and prints "wall cpu rss_MB".
bigdoc_time() {
	local t
	t=$(mktemp)
	/usr/bin/time -f '%e %U %S %M' -o "$t" "$@" >"$out/bigdoc-last.log" 2>&1 || {
		echo "bench.sh: failed: $*" >&2
		tail -n 20 "$out/bigdoc-last.log" >&2
		rm -f "$t"
		return 1
	}
	awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 / 1024 }' "$t"
	rm -f "$t"
}

bigdoc_pids=
bench_bigdoc() {
	command -v ogr2ogr >/dev/null || { echo "bench.sh: bigdoc needs ogr2ogr (gdal-bin; scripts/mapserver.sh installs it)" >&2; return 1; }
	local lighttpd=/usr/sbin/lighttpd
	[[ -x $lighttpd ]] || { echo "bench.sh: bigdoc needs lighttpd (scripts/mapserver.sh installs it)" >&2; return 1; }
	mkdir -p bin bench-out/bigdoc
	out=$ROOT/bench-out
	local docs=$out/bigdoc p0=${BENCH_BIGDOC_PORT:-18205}
	local sizes=${BENCH_BIGDOC_SIZES:-250000 1000000} wfsn=250000
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	trap 'kill $bigdoc_pids 2>/dev/null || true' RETURN EXIT
	# The unpaged WFS layer, served by the feed server (one request, no paging).
	bin/feedserver -serve "127.0.0.1:${p0}=" -generate "parcels=$wfsn" >/dev/null 2>&1 &
	bigdoc_pids="$bigdoc_pids $!"
	# The documents: each size written once by a feed server of that size,
	# then, as a county would publish it, in a State Plane CRS with the
	# legacy crs member before the features (ogr2ogr writes it there).
	local n srid=${BENCH_BIGDOC_SRID:-2264}
	for n in $sizes; do
		[[ -s $docs/parcels_$n.geojson ]] && continue
		bin/feedserver -serve "127.0.0.1:$((p0 + 1))=" -generate "parcels=$n" >/dev/null 2>&1 &
		local fs=$!
		sleep 1
		curl -sf -o "$docs/parcels_$n.4326.json" \
			"http://127.0.0.1:$((p0 + 1))/wfs?service=WFS&version=2.0.0&request=GetFeature&typeNames=parcels&outputFormat=application/json"
		kill "$fs" 2>/dev/null || true
		wait "$fs" 2>/dev/null || true
		if [[ $srid == 4326 ]]; then
			mv "$docs/parcels_$n.4326.json" "$docs/parcels_$n.geojson"
		else
			ogr2ogr -f GeoJSON -t_srs "EPSG:$srid" -lco RFC7946=NO -lco COORDINATE_PRECISION=2 \
				"$docs/parcels_$n.geojson" "$docs/parcels_$n.4326.json"
			rm -f "$docs/parcels_$n.4326.json"
		fi
	done
	# lighttpd, as a county's static host: ETag and Last-Modified.
	local conf=$docs/lighttpd.conf
	{
		echo "server.document-root = \"$docs\""
		echo 'server.bind = "127.0.0.1"'
		echo "server.port = $((p0 + 2))"
		echo "server.errorlog = \"$docs/lighttpd-error.log\""
		echo 'mimetype.assign = (".geojson" => "application/geo+json")'
		# A touched file gets its new ETag at once, not after the stat cache's second.
		echo 'server.stat-cache-engine = "disable"'
		if ((EUID == 0)); then
			echo 'server.username = "nobody"'
			echo 'server.groupname = "nogroup"'
		fi
	} >"$conf"
	chmod -R a+rX "$docs"
	chmod a+w "$docs"
	"$lighttpd" -D -f "$conf" &
	bigdoc_pids="$bigdoc_pids $!"
	sleep 1
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	local pg="PG:$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"host={p.hostname} port={p.port} dbname={p.path[1:]} user={p.username}")' "$DATABASE_URL")"
	{
		echo "defaults: {timeout: 1h, breaker: {rate_limit: 0}, limits: {body_bytes: 4GiB, poll_bytes: 4GiB, poll_features: 10000000}}"
		echo "jurisdictions:"
		echo "  - id: bench"
		echo "    feeds:"
		for n in $sizes; do
			echo "      - {id: doc_$n, kind: geojson, url: \"http://127.0.0.1:$((p0 + 2))/parcels_$n.geojson\"}"
		done
		echo "      - {id: wfs_$wfsn, kind: wfs, url: \"http://127.0.0.1:${p0}/wfs\", type_name: parcels, output_format: application/json, page_size: 0}"
	} >"$out/bigdoc.yaml"
	bin/ingestd migrate >/dev/null
	fresh() {
		vacuum_staging
		"${psql[@]}" -c "SET client_min_messages = warning" \
			-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', ingestd_feed_partition('bench', '$1')); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ingestd_feed_view('bench', '$1')); END \$\$" \
			-c "UPDATE feed_status SET validators = NULL WHERE jurisdiction = 'bench' AND feed = '$1'" \
			-c "TRUNCATE feature_changes" -c "VACUUM staged_pages, feature_changes" -c "CHECKPOINT"
	}
	# The decoder alone on the first document (one core): it bounds the fetch.
	BENCH_GEOJSON_FILE=$docs/parcels_${sizes%% *}.geojson go test -run '^$' -bench '^BenchmarkGeoJSONDocument$' -benchtime 3x ./encoding/geojson |
		grep '^Benchmark' | sed 's/^/decode only: /'
	printf '\n== bigdoc: one document / one unpaged response; medians of %s runs; the machine is shared with other work, so wall times are noisy\n' "$count"
	printf '%-12s %-30s %8s %8s %8s\n' layer run wall_s cpu_s rss_MB
	local f kind file run runs i
	for f in $(for n in $sizes; do echo "doc_$n"; done) "wfs_$wfsn"; do
		n=${f#*_}
		file=$docs/parcels_$n.geojson
		runs=("ingestd load" "ingestd refresh" "ingestd touched" "ogr2ogr (file)")
		[[ $f == wfs_* ]] && runs=("ingestd load" "ingestd refresh")
		for i in "${!runs[@]}"; do : >"$out/bigdoc.runs.$i"; done
		# Interleaved: each round runs every kind once, so that a machine
		# that slows down for a while slows each kind alike.
		for _ in $(seq 1 "$count"); do
			for i in "${!runs[@]}"; do
				case ${runs[$i]} in
				"ingestd load")
					fresh "$f"
					bigdoc_time bin/ingestd poll -config "$out/bigdoc.yaml" -log-level warn "bench/$f" >>"$out/bigdoc.runs.$i" ;;
				"ingestd refresh")
					"${psql[@]}" -c "CHECKPOINT"
					bigdoc_time bin/ingestd poll -config "$out/bigdoc.yaml" -log-level warn "bench/$f" >>"$out/bigdoc.runs.$i" ;;
				"ingestd touched")
					# Same bytes, new Last-Modified and ETag: the whole document
					# is fetched, decoded, staged and found unchanged.
					touch "$file"
					"${psql[@]}" -c "CHECKPOINT"
					bigdoc_time bin/ingestd poll -config "$out/bigdoc.yaml" -log-level warn "bench/$f" >>"$out/bigdoc.runs.$i" ;;
				"ogr2ogr (file)")
					"${psql[@]}" -c "DROP TABLE IF EXISTS ogr_bigdoc" -c "CHECKPOINT"
					# In EPSG:4326, as ingestd stores it.
					bigdoc_time ogr2ogr -f PostgreSQL "$pg" "$file" -nln ogr_bigdoc -overwrite -t_srs EPSG:4326 \
						-lco GEOMETRY_NAME=geom --config PG_USE_COPY YES >>"$out/bigdoc.runs.$i" ;;
				esac
			done
		done
		for i in "${!runs[@]}"; do
			sort -g "$out/bigdoc.runs.$i" | sed -n "$(((count + 1) / 2))p" | awk -v l="$f" -v r="${runs[$i]}" '{ printf "%-12s %-30s %8.2f %8.2f %8d\n", l, r, $1, $2, $3 }' | tee -a "$out/bigdoc.table"
		done
		if [[ $f == doc_* ]]; then
			# The target's figure: first load over ogr2ogr's wall, per round
			# (the two ran back to back), median of the rounds.
			paste "$out/bigdoc.runs.0" "$out/bigdoc.runs.3" | awk '{ print $1 / $4 }' | sort -g | sed -n "$(((count + 1) / 2))p" |
				awk -v l="$f" '{ printf "%-12s %-30s %8.3f\n", l, "load / ogr2ogr (wall, rounds)", $1 }' | tee -a "$out/bigdoc.table"
			# Storage side by side: the last round's ogr2ogr table is this document's.
			layer_storage bench "$f" ogr_bigdoc | tee -a "$out/bigdoc.table"
		else
			layer_storage bench "$f" | tee -a "$out/bigdoc.table"
		fi
	done
	if [[ -n ${BENCH_BASE:-} ]]; then
		# The same first load and refresh with another commit's ingestd, in a
		# database of its own (its migrations are older).
		local base=$out/bigdoc-base db=ingestd_bench_base
		rm -rf "$base" && mkdir -p "$base"
		git archive "$BENCH_BASE" | tar -x -C "$base"
		(cd "$base" && go build -o "$ROOT/bin/ingestd-base" ./cmd/ingestd)
		local url=${DATABASE_URL%%\?*}
		url="${url%/*}/$db"
		[[ $DATABASE_URL == *\?* ]] && url="$url?${DATABASE_URL#*\?}"
		"${psql[@]}" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
		psql "$url" -X -q -c "CREATE EXTENSION IF NOT EXISTS postgis"
		bin/ingestd-base migrate -database-url "$url" >/dev/null
		n=${sizes%% *}
		: >"$out/bigdoc.load" && : >"$out/bigdoc.refresh"
		for _ in $(seq 1 "$count"); do
			psql "$url" -X -q -c "SET client_min_messages = warning" \
				-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', ingestd_feed_partition('bench', 'doc_$n')); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ingestd_feed_view('bench', 'doc_$n')); END \$\$" \
				-c "UPDATE feed_status SET validators = NULL WHERE jurisdiction = 'bench' AND feed = 'doc_$n'" -c "CHECKPOINT"
			bigdoc_time bin/ingestd-base poll -config "$out/bigdoc.yaml" -database-url "$url" -log-level warn "bench/doc_$n" >>"$out/bigdoc.load"
			psql "$url" -X -q -c "CHECKPOINT"
			bigdoc_time bin/ingestd-base poll -config "$out/bigdoc.yaml" -database-url "$url" -log-level warn "bench/doc_$n" >>"$out/bigdoc.refresh"
		done
		for run in load refresh; do
			sort -g "$out/bigdoc.$run" | sed -n "$(((count + 1) / 2))p" | awk -v l="doc_$n" -v r="${BENCH_BASE:0:12} $run" '{ printf "%-12s %-30s %8.2f %8.2f %8d\n", l, r, $1, $2, $3 }'
		done
		"${psql[@]}" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
	fi
}

# bench_zipped_file NAME ZIP DRIVER FOLDER OGR_SOURCE: kind file on a zip
# the script makes once from the feed server's parcels (ogr2ogr -f DRIVER in
# NC State Plane into FOLDER, zipped as ZIP), served by lighttpd, against
# ogr2ogr reading the same zip (/vsizip/ZIP/OGR_SOURCE) into the same
# database. Each run of either starts from an empty table (ingestd: the
# feed's partition dropped and its validators cleared, so the zip is
# downloaded). BENCH_<NAME>_PORT and BENCH_<NAME>_FEATURES size it.
zipped_file_pids=
bench_zipped_file() {
	local name=$1 zipname=$2 driver=$3 folder=$4 ogrsrc=$5
	command -v ogr2ogr >/dev/null || { echo "bench.sh: $name needs ogr2ogr (gdal-bin; scripts/mapserver.sh installs it)" >&2; return 1; }
	local lighttpd=/usr/sbin/lighttpd
	[[ -x $lighttpd ]] || { echo "bench.sh: $name needs lighttpd (scripts/mapserver.sh installs it)" >&2; return 1; }
	local upper=${name^^}
	local portvar=BENCH_${upper}_PORT featvar=BENCH_${upper}_FEATURES
	local out=$ROOT/bench-out
	local dir=$out/$name p0=${!portvar:-$6} n=${!featvar:-250000}
	local feed=${name}_$n zip=$dir/${zipname//\{n\}/$n}
	mkdir -p bin "$dir"
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	trap 'kill $zipped_file_pids 2>/dev/null || true' RETURN EXIT
	if [[ ! -s $zip ]]; then
		bin/feedserver -serve "127.0.0.1:${p0}=" -generate "parcels=$n" >/dev/null 2>&1 &
		local fs=$!
		sleep 1
		curl -sf -o "$dir/parcels_$n.json" \
			"http://127.0.0.1:${p0}/wfs?service=WFS&version=2.0.0&request=GetFeature&typeNames=parcels&outputFormat=application/json"
		kill "$fs" 2>/dev/null || true
		wait "$fs" 2>/dev/null || true
		rm -rf "${dir:?}/$folder"
		if [[ $driver == "ESRI Shapefile" ]]; then
			mkdir -p "$dir/$folder"
			ogr2ogr -f "$driver" -t_srs EPSG:2264 -nln parcels "$dir/$folder/parcels.shp" "$dir/parcels_$n.json"
		else
			ogr2ogr -f "$driver" -t_srs EPSG:2264 -nln parcels "$dir/$folder" "$dir/parcels_$n.json"
		fi
		python3 -c 'import sys, zipfile, os
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for f in sorted(os.listdir(sys.argv[2])):
        z.write(os.path.join(sys.argv[2], f), sys.argv[3] + "/" + f)' "$zip" "$dir/$folder" "$folder"
		rm -rf "${dir:?}/$folder" "$dir/parcels_$n.json"
	fi
	local conf=$dir/lighttpd.conf
	{
		echo "server.document-root = \"$dir\""
		echo 'server.bind = "127.0.0.1"'
		echo "server.port = $((p0 + 1))"
		echo "server.errorlog = \"$dir/lighttpd-error.log\""
		if ((EUID == 0)); then
			echo 'server.username = "nobody"'
			echo 'server.groupname = "nogroup"'
		fi
	} >"$conf"
	chmod -R a+rX "$dir"
	chmod a+w "$dir" # lighttpd's error log, as the user it drops to
	"$lighttpd" -D -f "$conf" &
	zipped_file_pids="$zipped_file_pids $!"
	sleep 1
	local psql=(psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
	local pg="PG:$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"host={p.hostname} port={p.port} dbname={p.path[1:]} user={p.username}")' "$DATABASE_URL")"
	{
		echo "defaults: {timeout: 1h, breaker: {rate_limit: 0}, limits: {body_bytes: 4GiB, poll_bytes: 4GiB, poll_features: 10000000}}"
		echo "jurisdictions:"
		echo "  - id: bench"
		echo "    feeds:"
		echo "      - {id: $feed, kind: file, url: \"http://127.0.0.1:$((p0 + 1))/$(basename "$zip")\"}"
	} >"$out/$name.yaml"
	bin/ingestd migrate >/dev/null
	printf '\n== %s: %s of %s parcels (%s MB zipped); first loads, medians of %s runs; the machine is shared, so wall times are noisy\n' \
		"$name" "$(basename "$zip")" "$n" "$(($(stat -c %s "$zip") / 1048576))" "$count"
	printf '%-16s %-28s %8s %8s %8s\n' layer run wall_s cpu_s rss_MB
	local run
	for run in "ingestd load (kind file)" "ogr2ogr /vsizip/"; do
		: >"$out/$name.runs"
		for _ in $(seq 1 "$count"); do
			case $run in
			ingestd*)
				vacuum_staging
				"${psql[@]}" -c "SET client_min_messages = warning" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', ingestd_feed_partition('bench', '$feed')); END \$\$" \
					-c "DO \$\$ BEGIN EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', ingestd_feed_view('bench', '$feed')); END \$\$" \
					-c "UPDATE feed_status SET validators = NULL WHERE jurisdiction = 'bench' AND feed = '$feed'" \
					-c "DELETE FROM dead_letter WHERE jurisdiction = 'bench' AND feed = '$feed'" \
					-c "TRUNCATE feature_changes" -c "VACUUM staged_pages, feature_changes" -c "CHECKPOINT"
				bigdoc_time bin/ingestd poll -config "$out/$name.yaml" -log-level warn "bench/$feed" >>"$out/$name.runs" ;;
			ogr2ogr*)
				"${psql[@]}" -c "DROP TABLE IF EXISTS ogr_$name" -c "CHECKPOINT"
				# In EPSG:4326, as ingestd stores it.
				# shellcheck disable=SC2086 # OGR_SOURCE may name a layer after the path
				bigdoc_time ogr2ogr -f PostgreSQL "$pg" /vsizip/$zip/$ogrsrc -nln "ogr_$name" -overwrite -t_srs EPSG:4326 \
					-nlt PROMOTE_TO_MULTI -lco GEOMETRY_NAME=geom --config PG_USE_COPY YES >>"$out/$name.runs" ;;
			esac
		done
		sort -g "$out/$name.runs" | sed -n "$(((count + 1) / 2))p" | awk -v l="$feed" -v r="$run" '{ printf "%-16s %-28s %8.2f %8.2f %8d\n", l, r, $1, $2, $3 }' | tee -a "$out/$name.table"
	done
	"${psql[@]}" -c "DROP TABLE IF EXISTS ogr_$name"
}

# bench_shpzip: a zipped Shapefile (bench_zipped_file).
bench_shpzip() { bench_zipped_file shpzip 'parcels_{n}.zip' "ESRI Shapefile" parcels parcels/parcels.shp 18215; }

# bench_filegdb: a zipped File Geodatabase (bench_zipped_file).
bench_filegdb() { bench_zipped_file filegdb 'Parcels_{n}.gdb.zip' OpenFileGDB Parcels.gdb "Parcels.gdb parcels" 18225; }

bench_cluster() {
	echo "== cluster: TestCluster's scenario, $count run(s); figures per run (ms unless named)"
	go test -run '^$' -bench '^BenchmarkCluster$' -benchtime 1x -count "$count" ./cmd/ingestd/
}

bench_micro() {
	echo "== micro-benchmarks"
	go test -run '^$' -bench . -benchtime 2x ./encoding/geojson ./encoding/gml ./encoding/esrijson ./wfs/... ./feeds/postgis/...
}

bench_conform() {
	echo "== conform: the 250,000-parcel fixture conformed to addresses (layertest.ParcelsConform), one goroutine"
	go test -run '^$' -bench '^BenchmarkConformParcels$' -benchtime "${count}x" ./conform |
		grep -E 'rows/s per core' | tac | awk '!seen[$2]++' | tac
	echo "== conform: first load of 250,000 parcels without and with the conform, alternating; medians of $count"
	go test -run '^$' -bench '^BenchmarkConformFirstLoad$' -benchtime "${count}x" -timeout 60m ./feeds/postgis |
		grep -E 'first load of' | tail -n 1
}

bench_breaker() {
	echo "== breaker and dead-letter timings on this machine (figures, not pass/fail)"
	go test -run '^$' -bench . -benchtime "${BENCH_BREAKER_ROUNDS:-5}x" ./breaker/... ./deadletter |
		grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\|?\)'
}

bench_deadorigin() {
	echo "== deadorigin: one hourly feed on a port that refuses connections, default policy, a real ingestd run: its poll and its dead letter's replays (30 s, 60 s, 120 s, 240 s apart) until the origin opens"
	mkdir -p bin
	go build -o bin/ingestd ./cmd/ingestd
	local db="ingestd_deadorigin_$$" dir port mport url pid
	url=$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$DATABASE_URL" "$db")
	psql "$DATABASE_URL" -X -q -c "CREATE DATABASE $db"
	psql "$url" -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgis"
	dir=$(mktemp -d)
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf 'jurisdictions:\n  - id: county\n    feeds:\n      - {id: roads, kind: geojson, url: "http://127.0.0.1:%s/roads.geojson", schedule: "0 * * * *"}\n' "$port" >"$dir/county.yaml"
	bin/ingestd run -config "$dir/county.yaml" -database-url "$url" -metrics-addr "127.0.0.1:$mport" >"$dir/daemon.log" 2>&1 &
	pid=$!
	trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; psql "$DATABASE_URL" -X -q -c "DROP DATABASE IF EXISTS $db"; rm -rf "$dir"' RETURN
	local start opened="" now m state attempts calls before=0 after_min=${BENCH_DEADORIGIN_AFTER:-3}
	start=$(date +%s)
	while sleep 1; do
		now=$(date +%s)
		m=$(curl -s "127.0.0.1:$mport/metrics" | grep -F "origin=\"http://127.0.0.1:$port\"" || true)
		state=$(awk '/^ingestd_breaker_state/ {print $2}' <<<"$m")
		attempts=$(awk '/^ingestd_breaker_requests_total/ {n += $2} END {print n + 0}' <<<"$m")
		calls=$(awk '/^ingestd_breaker_calls_total.*result="failure"/ {n += $2} END {print n + 0}' <<<"$m")
		if [[ -z $opened && $state == 2 ]]; then
			opened=$now before=$attempts
			echo "opened after $calls failed calls in a row, $((now - start)) s after the start (its first poll), $attempts connection attempts sent before"
		fi
		if [[ -n $opened && $((now - opened)) -ge $((after_min * 60)) ]]; then
			echo "in the $after_min min after the open: $((attempts - before)) connection attempts (a probe goes out with the first poll or replay after the cooldown)"
			break
		fi
		if [[ -z $opened && $((now - start)) -ge 900 ]]; then
			echo "not open after 15 min: $calls failed calls, $attempts attempts" >&2
			return 1
		fi
	done
	grep -F '"breaker state change"' "$dir/daemon.log" | head -3
}

bench_incremental() {
	echo "== incremental: edit-date refresh against full dumps of the same layer (figures; the test asserts identity and bytes)"
	INGESTD_INCREMENTAL_FEATURES=${BENCH_INCREMENTAL_FEATURES:-100000} INGESTD_INCREMENTAL_ROUNDS=${BENCH_INCREMENTAL_ROUNDS:-20} \
		INGESTD_INCREMENTAL_SPREAD_MS=${BENCH_INCREMENTAL_SPREAD_MS:-3600000} \
		go test -count=1 -timeout 60m -run '^TestIncrementalMatchesFullDump$' -v ./arcgis/interop/ |
		grep -E '^(    incremental_test.go:[0-9]+: incremental:|--- |ok|FAIL)' | sed 's/^ *incremental_test.go:[0-9]*: //'
}

bench_pacing() {
	local gdal=0
	command -v ogr2ogr >/dev/null && gdal=1
	BENCH_PACING=1 BENCH_PACING_GDAL=$gdal go test -run '^$' -bench '^BenchmarkPacingPolicies$' -benchtime 1x -timeout 30m ./breaker |
		grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
}

# vacuum_staging vacuums every jurisdiction's staging table (a poll stages
# into its jurisdiction's <schema>.ingestd_staged), so that a run starts
# with staging as a quiet daemon leaves it.
vacuum_staging() {
	psql "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 <<-'EOF'
		SELECT format('VACUUM %s', c.oid::regclass) FROM pg_class c WHERE c.relname = 'ingestd_staged' AND c.relkind = 'r' \gexec
	EOF
}

bench_fleet() {
	mkdir -p bin bench-out/fleet
	go build -o bin/ingestd ./cmd/ingestd
	go build -o bin/feedserver ./internal/tools/feedserver
	go build -o bin/arcgisserver ./internal/tools/arcgisserver
	go build -o bin/fleet ./internal/tools/fleet
	local db="ingestd_fleet_$$" url log rc=0
	url=$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$DATABASE_URL" "$db")
	psql "$DATABASE_URL" -X -q -c "CREATE DATABASE $db"
	psql "$url" -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgis"
	if [[ -z ${BENCH_FLEET_KEEP:-} ]]; then
		trap 'psql "$DATABASE_URL" -X -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' RETURN
	fi
	log=bench-out/fleet/run-$(date -u +%Y%m%dT%H%M%SZ).txt
	echo "== fleet: $(nproc) cores; figures also in $log"
	bin/fleet -database-url "$url" -bin bin -out "bench-out/fleet/$db" \
		-feeds "${BENCH_FEEDS:-5000}" -origins "${BENCH_FLEET_ORIGINS:-1000}" -instances "${BENCH_FLEET_INSTANCES:-4}" \
		-big "${BENCH_FLEET_BIG:-3}" -big-features "${BENCH_FLEET_BIG_FEATURES:-250000}" -median "${BENCH_FLEET_MEDIAN:-100}" \
		-flapping "${BENCH_FLEET_FLAPPING:-5}" -flap-for "${BENCH_FLEET_FLAP_FOR:-90s}" -interval "${BENCH_FLEET_INTERVAL:-10m}" \
		-steady "${BENCH_FLEET_STEADY:-2m}" -conns "${BENCH_FLEET_CONNS:-0}" -kill-at "${BENCH_FLEET_KILL_AT:-0.25}" \
		-restart-after "${BENCH_FLEET_RESTART_AFTER:-1m}" -port "${BENCH_FLEET_PORT:-18400}" -ceiling "${BENCH_FLEET_CEILING:-1h}" | tee "$log" || rc=$?
	return "$rc"
}

bench_statuspage() {
	echo "== status page of a 250,000-feature feed"
	go test -run '^$' -bench FeedPage250k -benchtime 20x ./statuspage
}

case $what in
poll) bench_poll ;;
statuspage) bench_statuspage ;;
storm) bench_storm ;;
scale) bench_scale ;;
gdal) bench_gdal ;;
hostile) bench_hostile ;;
bigdoc) bench_bigdoc ;;
shpzip) bench_shpzip ;;
filegdb) bench_filegdb ;;
micro) bench_micro ;;
conform) bench_conform ;;
cluster) bench_cluster ;;
arcgis) bench_arcgis ;;
ogcapi) bench_ogcapi ;;
breaker) bench_breaker ;;
deadorigin) bench_deadorigin ;;
incremental) bench_incremental ;;
pacing) bench_pacing ;;
fleet) bench_fleet ;;
all)
	bench_poll
	bench_storm
	bench_scale
	bench_gdal
	bench_hostile
	bench_arcgis
	bench_incremental
	bench_ogcapi
	bench_bigdoc
	bench_shpzip
	bench_filegdb
	bench_micro
	bench_conform
	bench_statuspage
	bench_breaker
	bench_pacing
	bench_cluster
	;;
*)
	echo "bench.sh: unknown benchmark $what (want poll, storm, scale, gdal, hostile, arcgis, incremental, ogcapi, bigdoc, shpzip, filegdb, micro, conform, statuspage, breaker, deadorigin, pacing, cluster, fleet or all)" >&2
	exit 2
	;;
esac
