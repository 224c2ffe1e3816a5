#!/usr/bin/env bash
# test.sh — the test command: starts the project's PostGIS (installing
# PostgreSQL 15 + PostGIS 3 when missing), then runs vet and every test
# against it. Extra arguments go to `go test` (e.g. -run Breaker -v).
#
# DATABASE_URL, when set, is used instead of the project's own cluster;
# INGESTD_MAPSERVER_URL likewise for the MapServer WFS that the interop
# tests (wfs/interop) poll, which scripts/mapserver.sh starts otherwise;
# INGESTD_KOOP_URL for Koop (arcgis/interop), which scripts/koop.sh starts.
# INGESTD_OGCAPI_URL for its OGC API – Features landing page (ogcapi/interop).
# INGESTD_FILEGDB_CORPUS for filegdb's corpus, which scripts/fgdb-fixtures.sh fetches.
# INGESTD_FTP_URL for the FTP server of the ftp:// tests, which scripts/ftp.sh starts.
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

if [[ -z ${DATABASE_URL:-} ]]; then
	DATABASE_URL=$(scripts/postgis.sh start)
fi
export DATABASE_URL
if [[ -z ${INGESTD_MAPSERVER_URL:-} ]]; then
	INGESTD_MAPSERVER_URL=$(scripts/mapserver.sh start)
fi
export INGESTD_MAPSERVER_URL
# Koop (npm) for the arcgis interop tests (arcgis/interop), likewise.
if [[ -z ${INGESTD_KOOP_URL:-} ]]; then
	INGESTD_KOOP_URL=$(scripts/koop.sh start)
fi
export INGESTD_KOOP_URL
# The same MapServer's OGC API – Features, for ogcapi/interop.
if [[ -z ${INGESTD_OGCAPI_URL:-} ]]; then
	INGESTD_OGCAPI_URL=$(scripts/mapserver.sh ogcapi-url)
fi
export INGESTD_OGCAPI_URL
# Geodatabases written by ArcGIS (the npm package fgdb's test folder) that
# filegdb's TestFileGDBCorpus compares with GDAL's reading of them.
if [[ -z ${INGESTD_FILEGDB_CORPUS:-} ]]; then
	INGESTD_FILEGDB_CORPUS=$(scripts/fgdb-fixtures.sh)
fi
export INGESTD_FILEGDB_CORPUS
# vsftpd for the file kind's ftp:// tests (file, file/interop).
if [[ -z ${INGESTD_FTP_URL:-} ]]; then
	INGESTD_FTP_URL=$(scripts/ftp.sh start)
fi
export INGESTD_FTP_URL

echo "test.sh: go vet ./..." >&2
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "test.sh: not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# TestStatusPageDemo (cmd/ingestd) renders the status page in headless
# Chromium through scripts/screenshot.sh: install it first, not mid-test.
scripts/screenshot.sh --install
# TestQGISOpensEveryLayer (cmd/ingestd) opens every layer with QGIS's own
# PostgreSQL provider: PyQGIS from Debian (python3-qgis, for the system
# Python), installed as scripts/mapserver.sh installs lighttpd and gdal-bin.
if ! /usr/bin/python3 -c 'import qgis.core' 2>/dev/null; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "test.sh: python3-qgis is missing and we are not root: apt-get install python3-qgis" >&2
	else
		echo "test.sh: installing python3-qgis (PyQGIS)" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends python3-qgis >&2
	fi
fi
echo "test.sh: promtool check/test of the alert rules (deploy/prometheus)" >&2
scripts/promtool.sh
# The tests share the server's connections (migrations/pgtest reserves them
# through the server: docs/decisions/0183-test-connection-budget.md); the
# largest test needs about 30, a stock server's 100 lets several run at once.
if command -v psql >/dev/null 2>&1; then
	conns=$(psql "$DATABASE_URL" -XAtqc "SELECT current_setting('max_connections') || ' (' ||
		current_setting('superuser_reserved_connections') || ' reserved)'" 2>/dev/null || true)
	[[ -n $conns ]] && echo "test.sh: the server's max_connections: $conns; the tests share them, less 5 kept free (or INGESTD_TEST_DB_CONNS)" >&2
fi
echo "test.sh: go test ./... against $DATABASE_URL" >&2
go test -count=1 -timeout 20m "$@" ./...
