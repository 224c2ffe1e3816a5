#!/usr/bin/env bash
# upgrade_check.sh REV — the typed-layers upgrade, with real parts.
#
# Builds ingestd at REV (a commit from before typed layers, e.g. the merge
# base of the branch that added them) in a temporary git worktree, and at
# the working tree. Loads MapServer's nc layer (scripts/mapserver.sh) as
# three feeds — GML 3.2 paged, GML 3.1.1, GeoJSON — into a fresh database
# with REV's binary, then migrates and polls each once more with the new
# one, the source unchanged. Fails unless every poll of the new binary
# logs 0 added, 0 modified and 0 removed features and the stored GML
# values became JSON numbers.
#
# Ports come from INGESTD_PG_PORT and INGESTD_MAPSERVER_PORT, as for
# scripts/test.sh.
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
rev=${1:?usage: scripts/upgrade_check.sh REV (a commit before typed layers)}

log() { printf 'upgrade_check.sh: %s\n' "$*" >&2; }

work=$(mktemp -d)
cleanup() {
	[[ -z ${name:-} ]] || psql "$base" -X -q -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true
	git worktree remove --force "$work/old" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

log "building ingestd at $rev and at the working tree"
git worktree add --detach "$work/old" "$rev" >/dev/null
(cd "$work/old" && go build -o "$work/ingestd-old" ./cmd/ingestd)
go build -o "$work/ingestd-new" ./cmd/ingestd

base=${DATABASE_URL:-$(scripts/postgis.sh start)}
ms=${INGESTD_MAPSERVER_URL:-$(scripts/mapserver.sh start)}
db=${base%%\?*}
query=${base#"$db"}
# A name of this run's own: others may run the check on the same cluster.
name=ingestd_upgrade_check_$$
db="${db%/*}/$name$query"
psql "$base" -X -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
psql "$db" -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION postgis"

cat >"$work/up.yaml" <<YAML
jurisdictions:
  - id: nc
    feeds:
      - {id: gml32, kind: wfs, url: "$ms?srsName=EPSG:4326", type_name: nc, version: "2.0.0", output_format: "application/gml+xml; version=3.2", page_size: 17, id_property: FIPS, sort_by: FIPS}
      - {id: gml311, kind: wfs, url: "$ms", type_name: nc, version: "1.1.0", output_format: "text/xml; subtype=gml/3.1.1", id_property: FIPS, sort_by: FIPS}
      - {id: geojson, kind: wfs, url: "$ms?srsName=EPSG:4326", type_name: nc, version: "2.0.0", output_format: auto, page_size: 17, id_property: FIPS, sort_by: FIPS}
YAML

feeds=(gml32 gml311 geojson)
for f in "${feeds[@]}"; do
	"$work/ingestd-old" poll -config "$work/up.yaml" -database-url "$db" "nc/$f" >"$work/old-$f.log" 2>&1 ||
		{ log "poll of nc/$f at $rev failed:"; tail -5 "$work/old-$f.log" >&2; exit 1; }
done
log "loaded by $rev: $(psql "$db" -X -tAc "SELECT string_agg(feed || ' ' || count, ', ') FROM (SELECT feed, count(*) FROM features GROUP BY 1 ORDER BY 1) c")"

# Rows and history before the upgrade, compared after it.
kept_sql="SELECT (SELECT count(*) FROM features) || ' features, ' || (SELECT count(*) FROM feature_changes) || ' changes, '
	|| (SELECT count(*) FROM polls) || ' polls'"
before=$(psql "$db" -X -tAc "$kept_sql")

fail=0
for f in "${feeds[@]}"; do
	"$work/ingestd-new" poll -config "$work/up.yaml" -database-url "$db" "nc/$f" >"$work/new-$f.log" 2>&1 ||
		{ log "poll of nc/$f after the upgrade failed:"; tail -5 "$work/new-$f.log" >&2; exit 1; }
	line=$(grep -o '"msg":"poll succeeded".*"removed":[0-9]*' "$work/new-$f.log" || true)
	counts=$(grep -o '"added":[0-9]*,"modified":[0-9]*,"removed":[0-9]*' <<<"$line" || true)
	echo "nc/$f after the upgrade: ${counts:-no poll succeeded}"
	[[ $counts == '"added":0,"modified":0,"removed":0' ]] || fail=1
done
typed=$(psql "$db" -X -tAc "SELECT count(*) FROM features WHERE feed LIKE 'gml%' AND jsonb_typeof(properties->'AREA') = 'number'")
echo "GML features whose AREA is now a JSON number: $typed of 200"
[[ $typed == 200 ]] || fail=1
# Version 30: every feed's layer is nc.<feed>, with all its rows; nothing
# of the layers is left in public; the rows and history of before are
# kept (the new polls changed nothing, and log one poll each).
for f in "${feeds[@]}"; do
	n=$(psql "$db" -X -tAc "SELECT count(*) FROM nc.$f" 2>&1 || true)
	echo "layer nc.$f: $n rows"
	[[ $n == 100 ]] || fail=1
done
# Version 31: nothing of ingestd's left in public (the old layer_… views
# included), goose's version table neither: it is in schema ingestd with
# every version REV had applied.
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
	log "FAILED: the first poll after the upgrade changed features, lost rows, or a layer is not under its new name"
	exit 1
fi
log "ok: 0 features modified by the upgrade"
