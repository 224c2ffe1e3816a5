#!/usr/bin/env bash
# bench.sh — benchmarks that print figures (never part of `go test ./...`).
#
#   scripts/bench.sh poll     fetch → decode → load of a generated parcel layer at
#                             200k and 400k features, each in its own process with
#                             the feed server in another: features/s, peak heap,
#                             peak RSS. Peak memory must stay flat as the layer doubles.
#   scripts/bench.sh storm    a flapping county under a naive poller (4 retries, no
#                             breaker) and under ingestd: requests the county received.
#   scripts/bench.sh micro    the packages' micro-benchmarks (decoders, staging).
#   scripts/bench.sh all      all of them (default).
#
# Environment: DATABASE_URL (default: the project's PostGIS, started on demand),
# BENCH_SIZES (default "200000 400000"), BENCH_COUNT runs per size (default 3).
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
what=${1:-all}
sizes=${BENCH_SIZES:-200000 400000}
count=${BENCH_COUNT:-3}

if [[ -z ${DATABASE_URL:-} ]]; then
	DATABASE_URL=$(scripts/postgis.sh start)
fi
export DATABASE_URL

bench_poll() {
	mkdir -p bin
	go build -o bin/feedserver ./cmd/feedserver
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

bench_micro() {
	echo "== micro-benchmarks"
	go test -run '^$' -bench . -benchtime 2x ./wfs/... ./feeds/postgis/...
}

case $what in
poll) bench_poll ;;
storm) bench_storm ;;
micro) bench_micro ;;
all)
	bench_poll
	bench_storm
	bench_micro
	;;
*)
	echo "bench.sh: unknown benchmark $what (want poll, storm, micro or all)" >&2
	exit 2
	;;
esac
