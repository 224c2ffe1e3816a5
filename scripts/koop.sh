#!/usr/bin/env bash
# koop.sh — a real ArcGIS REST (GeoServices) server for the arcgis interop
# tests: Koop (@koopjs/koop-core, @koopjs/output-geoservices,
# @koopjs/provider-file-geojson, versions pinned in scripts/koop/package.json)
# on loopback, serving testdata/arcgis/*.geojson as FeatureServer layers:
#   <url>/nc_counties/FeatureServer/0    100 (multi)polygons, maxRecordCount 25
#   <url>/nc_points/FeatureServer/0      100 points, maxRecordCount 30
#   <url>/nc_boundaries/FeatureServer/0  100 (multi)lines, maxRecordCount 20
# (North Carolina counties from r-cran-sf's nc.gpkg; OBJECTID is CNTY_ID;
# the counties carry NAME, FIPS, BIR74, AREA (a double: planar area in
# square degrees, added for the typed view's Double column) and UPDATED.)
#
# Usage: scripts/koop.sh [start|stop|url|status]
#
#   start   (default) install nodejs and npm when missing (root only),
#           install the pinned Koop packages with npm into .koop/ at the repo
#           root (ignored by git) unless there already, start Koop, wait until
#           it answers, and print the services URL.
#   stop    stop Koop.
#   url     print the URL without starting anything.
#   status  exit 0 when Koop answers, 3 when it does not.
#
# Only the URL goes to stdout, so callers can write
#   export INGESTD_KOOP_URL=$(scripts/koop.sh)
# Progress goes to stderr.
#
# Environment: INGESTD_KOOP_PORT (default 18182), INGESTD_KOOP_DATA (the
# folder of .geojson files, default testdata/arcgis; relative to the repo).
set -euo pipefail

PORT=${INGESTD_KOOP_PORT:-18182}
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=$ROOT/.koop
RUN=$DIR/run
PIDFILE=$RUN/koop.$PORT.pid
LOG=$RUN/koop.$PORT.log
DATA=${INGESTD_KOOP_DATA:-testdata/arcgis}

URL="http://127.0.0.1:${PORT}/file-geojson/rest/services"
# The layer whose answer says Koop is up (INGESTD_KOOP_PROBE for another
# data folder).
PROBE="$URL/${INGESTD_KOOP_PROBE:-nc_points}/FeatureServer/0?f=json"

log() { printf 'koop.sh: %s\n' "$*" >&2; }

answers() { curl -fsS -m 5 -o /dev/null "$PROBE" 2>/dev/null; }

install_node() {
	if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then
		return
	fi
	if [[ $(id -u) -ne 0 ]]; then
		log "node, npm or curl is missing and we are not root: install nodejs, npm and curl with apt-get"
		exit 1
	fi
	log "installing nodejs npm curl"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends nodejs npm curl >&2
}

# install_koop puts the pinned packages in .koop/node_modules: the whole
# tree as scripts/koop/package-lock.json records it (npm ci), so that every
# machine serves the tests with the same Koop; a changed package.json or
# lock file installs again.
install_koop() {
	mkdir -p "$DIR" "$RUN"
	if [[ -d $DIR/node_modules/@koopjs/koop-core ]] && cmp -s "$ROOT/scripts/koop/package.json" "$DIR/package.json" &&
		cmp -s "$ROOT/scripts/koop/package-lock.json" "$DIR/package-lock.json"; then
		cp "$ROOT/scripts/koop/server.js" "$DIR/server.js"
		return
	fi
	cp "$ROOT/scripts/koop/package.json" "$ROOT/scripts/koop/package-lock.json" "$ROOT/scripts/koop/server.js" "$DIR/"
	log "installing Koop with npm into $DIR (a minute)"
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
}

start() {
	if answers; then
		echo "$URL"
		return
	fi
	install_node
	install_koop
	log "starting Koop on 127.0.0.1:$PORT (log: $LOG)"
	# The provider reads KOOP_DATA_DIR relative to the working directory.
	cd "$ROOT"
	KOOP_PORT=$PORT KOOP_DATA_DIR=$DATA nohup node "$DIR/server.js" >>"$LOG" 2>&1 &
	echo $! >"$PIDFILE"
	for _ in $(seq 1 100); do
		if answers; then
			echo "$URL"
			return
		fi
		if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
			log "Koop exited; its log:"
			tail -20 "$LOG" >&2
			exit 1
		fi
		sleep 0.2
	done
	log "Koop did not answer $PROBE within 20s; its log:"
	tail -20 "$LOG" >&2
	exit 1
}

stop() {
	if [[ -f $PIDFILE ]]; then
		local pid
		pid=$(cat "$PIDFILE")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			log "stopped Koop (pid $pid)"
		fi
		rm -f "$PIDFILE"
	fi
}

case ${1:-start} in
start) start ;;
stop) stop ;;
url) echo "$URL" ;;
status) answers || exit 3 ;;
*)
	log "usage: $0 [start|stop|url|status]"
	exit 2
	;;
esac
