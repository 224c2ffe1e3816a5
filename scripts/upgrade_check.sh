#!/usr/bin/env bash
# upgrade_check.sh [REV] — an upgrade of a loaded database, with real parts.
#
# Builds ingestd at REV (default 25a3c99: the last main before one copy of
# each layer, migration 43, whose binary keeps features in partitions) in
# a temporary git worktree, and at the working tree. Loads feeds of every kind into a
# fresh database with REV's binary — MapServer's nc layer (scripts/mapserver.sh) by WFS as GML
# 3.2 paged, GML 3.1.1 and GeoJSON, and by OGC API – Features; the fixture
# server's raleigh layers by WFS and as a downloaded file, boulder's roads
# as a GeoJSON document; Koop's nc_counties by ArcGIS REST when Koop
# answers (scripts/koop.sh) — then migrates with the new binary and polls
# each feed once more, the sources unchanged. Fails unless
#   - features gives the same rows after the migration, and again after
#     the polls, as before it (feature_id, properties to the byte, geometry,
#     first_seen_at, changed_at, poll_id, the content hash's first 16
#     bytes), compared whole;
#   - every poll of the new binary logs 0 added, 0 modified, 0 removed;
#   - the stored GML values are JSON numbers, each layer holds its feed's
#     features, nothing of ingestd's is left in public, goose's table holds
#     every version, and no change or poll was lost.
#
# Ports come from INGESTD_PG_PORT, INGESTD_MAPSERVER_PORT (or DATABASE_URL,
# INGESTD_MAPSERVER_URL, INGESTD_OGCAPI_URL, INGESTD_KOOP_URL), as for
# scripts/test.sh; the fixture server listens on UPGRADE_CHECK_PORT
# (default 18391) and the next port.
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
rev=${1:-25a3c99}

log() { printf 'upgrade_check.sh: %s\n' "$*" >&2; }

work=$(mktemp -d)
fs_pid=
cleanup() {
	[[ -z $fs_pid ]] || kill "$fs_pid" 2>/dev/null || true
	[[ -z ${name:-} ]] || psql "$base" -X -q -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true
	git worktree remove --force "$work/old" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

log "building ingestd at $rev and at the working tree"
git worktree add --quiet --detach "$work/old" "$rev"
(cd "$work/old" && go build -o "$work/ingestd-old" ./cmd/ingestd)
go build -o "$work/ingestd-new" ./cmd/ingestd
go build -o "$work/feedserver" ./internal/tools/feedserver

base=${DATABASE_URL:-$(scripts/postgis.sh start)}
ms=${INGESTD_MAPSERVER_URL:-$(scripts/mapserver.sh start)}
ogc=${INGESTD_OGCAPI_URL:-${ms%/wfs}/cgi-bin/mapserv/nc/ogcapi}
koop=${INGESTD_KOOP_URL:-}
port=${UPGRADE_CHECK_PORT:-18391}
"$work/feedserver" -serve "127.0.0.1:$port=testdata/feeds/raleigh" \
	-serve "127.0.0.1:$((port + 1))=testdata/feeds/boulder" >"$work/feedserver.log" 2>&1 &
fs_pid=$!
for _ in $(seq 100); do
	curl -fsS -o /dev/null "http://127.0.0.1:$((port + 1))/geojson/roads.geojson" 2>/dev/null && break
	sleep 0.1
done

db=${base%%\?*}
query=${base#"$db"}
# A name of this run's own: others may run the check on the same cluster.
name=ingestd_upgrade_check_$$
db="${db%/*}/$name$query"
psql "$base" -X -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
psql "$db" -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION postgis"

arcgis=
if [[ -n $koop ]] && curl -fsS -o /dev/null "$koop/nc_counties/FeatureServer/0?f=json" 2>/dev/null; then
	arcgis="      - {id: arcgis, kind: arcgis, url: \"$koop/nc_counties/FeatureServer/0\", id_property: FIPS}"
else
	log "no Koop answers (INGESTD_KOOP_URL): the ArcGIS REST feed is left out"
fi
cat >"$work/up.yaml" <<YAML
jurisdictions:
  - id: nc
    feeds:
      - {id: gml32, kind: wfs, url: "$ms?srsName=EPSG:4326", type_name: nc, version: "2.0.0", output_format: "application/gml+xml; version=3.2", page_size: 17, id_property: FIPS, sort_by: FIPS}
      - {id: gml311, kind: wfs, url: "$ms", type_name: nc, version: "1.1.0", output_format: "text/xml; subtype=gml/3.1.1", id_property: FIPS, sort_by: FIPS}
      - {id: geojson, kind: wfs, url: "$ms?srsName=EPSG:4326", type_name: nc, version: "2.0.0", output_format: auto, page_size: 17, id_property: FIPS, sort_by: FIPS}
      - {id: ogcapi, kind: ogcapi, url: "$ogc", collection: nc, page_size: 1000, id_property: FIPS}
$arcgis
  - id: raleigh
    feeds:
      - {id: zoning, kind: wfs, url: "http://127.0.0.1:$port/geoserver/wfs", type_name: zoning, page_size: 10, id_property: zone_id, sort_by: zone_id}
      - {id: addresses, kind: wfs, url: "http://127.0.0.1:$port/geoserver/wfs", type_name: addresses, version: 1.1.0, page_size: 50, sort_by: address_id}
      - {id: zoning_file, kind: file, format: geojson, url: "http://127.0.0.1:$port/geojson/zoning.geojson", id_property: zone_id}
  - id: boulder
    feeds:
      - {id: roads, kind: geojson, url: "http://127.0.0.1:$((port + 1))/geojson/roads.geojson", id_property: segment_id}
YAML

feeds=(nc/gml32 nc/gml311 nc/geojson nc/ogcapi raleigh/zoning raleigh/addresses raleigh/zoning_file boulder/roads)
[[ -z $arcgis ]] || feeds+=(nc/arcgis)
for f in "${feeds[@]}"; do
	"$work/ingestd-old" poll -config "$work/up.yaml" -database-url "$db" "$f" >"$work/old-${f/\//_}.log" 2>&1 ||
		{ log "poll of $f at $rev failed:"; tail -5 "$work/old-${f/\//_}.log" >&2; exit 1; }
done
log "loaded by $rev: $(psql "$db" -X -tAc "SELECT string_agg(jurisdiction || '/' || feed || ' ' || count, ', ') FROM (SELECT jurisdiction, feed, count(*) FROM features GROUP BY 1, 2 ORDER BY 1, 2) c")"

# Every current feature, as consumers read it; the content hash cut to the
# 16 bytes both layouts keep (a row hashed before geometries were has none).
rows_sql="SELECT jurisdiction, feed, feature_id, md5(coalesce(properties::text, '-')),
	md5(coalesce(encode(ST_AsEWKB(geom), 'hex'), '-')), first_seen_at, changed_at, poll_id,
	encode(substring(content_hash FOR 16), 'hex')
	FROM features ORDER BY jurisdiction, feed, feature_id"
snapshot() { psql "$db" -X -q -tA -c "SET TimeZone = 'UTC'" -c "$rows_sql" >"$work/$1.rows"; }
kept_sql="SELECT (SELECT count(*) FROM features) || ' features, ' || (SELECT count(*) FROM feature_changes) || ' changes, '
	|| (SELECT count(*) FROM polls) || ' polls'"
snapshot before
before=$(psql "$db" -X -tAc "$kept_sql")

fail=0
compare() {
	if cmp -s "$work/before.rows" "$work/$1.rows"; then
		echo "features $2: the same $(wc -l <"$work/before.rows") rows"
	else
		echo "features $2 differs from before the upgrade ($(diff "$work/before.rows" "$work/$1.rows" | grep -c '^[<>]') lines):"
		diff "$work/before.rows" "$work/$1.rows" | head -10
		fail=1
	fi
}
"$work/ingestd-new" migrate -database-url "$db" >"$work/migrate.log" 2>&1 ||
	{ log "migrating with the working tree's ingestd failed:"; tail -5 "$work/migrate.log" >&2; exit 1; }
snapshot migrated
compare migrated "after the migration"

for f in "${feeds[@]}"; do
	"$work/ingestd-new" poll -config "$work/up.yaml" -database-url "$db" "$f" >"$work/new-${f/\//_}.log" 2>&1 ||
		{ log "poll of $f after the upgrade failed:"; tail -5 "$work/new-${f/\//_}.log" >&2; exit 1; }
	line=$(grep -o '"msg":"poll succeeded".*"removed":[0-9]*' "$work/new-${f/\//_}.log" || true)
	counts=$(grep -o '"added":[0-9]*,"modified":[0-9]*,"removed":[0-9]*' <<<"$line" || true)
	echo "$f after the upgrade: ${counts:-no poll succeeded}"
	[[ $counts == '"added":0,"modified":0,"removed":0' ]] || fail=1
done
snapshot polled
compare polled "after a poll of each feed"

typed=$(psql "$db" -X -tAc "SELECT count(*) FROM features WHERE jurisdiction = 'nc' AND feed LIKE 'gml%' AND jsonb_typeof(properties->'AREA') = 'number'")
echo "GML features whose AREA is a JSON number: $typed of 200"
[[ $typed == 200 ]] || fail=1
# Each feed's layer holds its features.
for f in "${feeds[@]}"; do
	want=$(psql "$db" -X -tAc "SELECT count(*) FROM features WHERE jurisdiction = '${f%/*}' AND feed = '${f#*/}'")
	n=$(psql "$db" -X -tAc "SELECT count(*) FROM $(psql "$db" -X -tAc "SELECT ingestd_feed_view('${f%/*}', '${f#*/}')")" 2>&1 || true)
	echo "layer of $f: $n rows"
	[[ $n == "$want" && $n -gt 0 ]] || fail=1
done
# Nothing of ingestd's left in public (the old layer_… views included),
# goose's version table neither: it is in schema ingestd with every
# version.
in_public=$(psql "$db" -X -tAc "SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
	AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
	AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')")
echo "relations of ingestd left in public: $in_public"
[[ $in_public == 0 ]] || fail=1
versions=$(psql "$db" -X -tAc "SELECT count(DISTINCT version_id) || ' versions, ' || max(version_id) || ' the latest' FROM ingestd.goose_db_version WHERE version_id > 0" 2>&1 || true)
echo "ingestd.goose_db_version: $versions"
[[ $versions == "$(ls migrations/[0-9]*.sql | wc -l) versions, "* ]] || fail=1
after=$(psql "$db" -X -tAc "$kept_sql")
echo "before the upgrade: $before; after it and one more poll each: $after"
[[ ${before%%,*} == "${after%%,*}" ]] || fail=1
[[ $(cut -d, -f2 <<<"$before") == $(cut -d, -f2 <<<"$after") ]] || fail=1
if ((fail)); then
	log "FAILED: the upgrade or the first poll after it changed features, lost rows, or a layer is not where it should be"
	exit 1
fi
log "ok: the upgrade kept every feature as it was, and the polls after it modified none"
