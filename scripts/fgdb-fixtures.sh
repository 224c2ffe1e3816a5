#!/usr/bin/env bash
# fgdb-fixtures.sh — File Geodatabases written by ArcGIS for the filegdb
# corpus test (TestFileGDBCorpus): the test/ folder of the npm package
# fgdb 1.0.0 (MIT, (c) 2013 Calvin Metcalf), fetched with `npm pack` into
# .fixtures/fgdb at the repo root (ignored by git), its tarball checked
# against a pinned SHA-256, and unpacked once. Prints the folder of
# geodatabases (BikeInventory.gdb, GRP.gdb, aul.gdb, aul.zip, …) on
# stdout, so callers can write
#   export INGESTD_FILEGDB_CORPUS=$(scripts/fgdb-fixtures.sh)
# Progress goes to stderr. npm comes from Debian (nodejs, npm) as
# scripts/koop.sh installs it.
set -euo pipefail

VERSION=1.0.0
SHA256=a3516414732dd67d261effb513a46e2818dc0c8c3013ca37846d5af409b6fda6
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=$ROOT/.fixtures/fgdb
TGZ=$DIR/fgdb-$VERSION.tgz
OUT=$DIR/$VERSION

log() { printf 'fgdb-fixtures.sh: %s\n' "$*" >&2; }

if [[ -f $OUT/.complete ]]; then
	echo "$OUT/package/test"
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	if [[ $(id -u) -ne 0 ]]; then
		log "npm is missing and we are not root: apt-get install nodejs npm"
		exit 1
	fi
	log "installing nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi
mkdir -p "$DIR"
if [[ ! -f $TGZ ]]; then
	log "npm pack fgdb@$VERSION"
	(cd "$DIR" && npm pack --silent "fgdb@$VERSION" >&2)
fi
if ! echo "$SHA256  $TGZ" | sha256sum --check --status; then
	log "$TGZ does not have the pinned SHA-256 $SHA256: removed; run again"
	rm -f "$TGZ"
	exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
tar --warning=no-unknown-keyword -xzf "$TGZ" -C "$OUT" package/test package/LICENSE
touch "$OUT/.complete"
echo "$OUT/package/test"
