#!/usr/bin/env bash
# mapserver.sh — a real WFS server for interoperability tests: MapServer 8
# (Debian cgi-mapserver) behind lighttpd on loopback, serving the North
# Carolina counties that Debian's r-cran-sf ships (100 polygons, NAD27).
#
# Usage: scripts/mapserver.sh [start|stop|url|ogcapi-url|status]
#
#   start   (default) install cgi-mapserver, lighttpd and gdal-bin when missing
#           (root only), extract nc.gpkg from the r-cran-sf package, write the
#           mapfile and lighttpd config under .mapserver/ at the repo root,
#           start lighttpd, wait until WFS answers, and print the WFS URL.
#   stop    stop lighttpd.
#   url     print the URL without starting anything.
#   ogcapi-url  print the OGC API – Features landing page of the same map
#           (/cgi-bin/mapserv/nc/ogcapi, alias "nc" in mapserver.conf's MAPS).
#   status  exit 0 when the server answers, 3 when it does not.
#
# Only the URL goes to stdout, so callers can write
#   export INGESTD_MAPSERVER_URL=$(scripts/mapserver.sh)
# Progress goes to stderr.
#
# The layer "nc" is offered as WFS 1.1.0 and 2.0.0, in GML (3.1.1 / 3.2) and
# GeoJSON (OGR driver), in EPSG:4267 (its own CRS) and EPSG:4326, with paging
# (startIndex) and sortBy. gml_featureid is FIPS, unique per county, so
# feature ids are stable across pages.
#
# OGC API – Features (MapServer 8's OGCAPI_SERVER) serves the same map at
# /cgi-bin/mapserv/nc/ogcapi: collection nc (a GeoPackage paged by OGR, where
# Debian's 8.0.0 ignores offset: MapServer#6613) and collection nc_sql (an
# OGR SQL layer over a WGS 84 copy made by ogr2ogr, paged by MapServer, where
# offset works; MapServer 8.0's OGC API does no datum shift, see fetch_data).
# Both write multi-part polygons with the other parts' outer rings as holes
# (MapServer#7177, fixed in 8.6): Beaufort, Carteret, Craven, Currituck,
# Dare and Hyde. No Part 2 (crs) in 8.0; limit at most 1000 (oga_max_limit).
#
# The US Census counties at 1:10 m (npm us-atlas 3.0.1, converted by GDAL:
# testdata/uscounties, 3,231 counties of which 22 are invalid polygons and
# one has no geometry) are served twice: the GeoJSON file as it is, by
# lighttpd from its document root (/us-counties-10m.geojson), and as WFS
# layer us_counties (a GeoPackage copy; gml_featureid is the FIPS code id).
#
# Environment: INGESTD_MAPSERVER_PORT (default 18180).
set -euo pipefail

PORT=${INGESTD_MAPSERVER_PORT:-18180}
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=$ROOT/.mapserver
RUN=$DIR/run
DATA=$DIR/data
MAPFILE=$DIR/nc.map
MSCONF=$DIR/mapserver.conf
LCONF=$DIR/lighttpd.conf
PIDFILE=$RUN/lighttpd.pid
MAPSERV=/usr/lib/cgi-bin/mapserv
LIGHTTPD=/usr/sbin/lighttpd
# The user lighttpd drops to when started as root; the CGI runs as it too.
WWW_USER=www-data

URL="http://127.0.0.1:${PORT}/wfs"
# The OGC API – Features landing page of the same map (alias nc).
OGCAPI_URL="http://127.0.0.1:${PORT}/cgi-bin/mapserv/nc/ogcapi"

log() { printf 'mapserver.sh: %s\n' "$*" >&2; }

# Where r-cran-sf puts the file when the package is installed for real.
SF_GPKG=/usr/lib/R/site-library/sf/gpkg/nc.gpkg

install_packages() {
	local missing=()
	[[ -x $MAPSERV ]] || missing+=(cgi-mapserver)
	[[ -x $LIGHTTPD ]] || missing+=(lighttpd)
	command -v ogr2ogr >/dev/null 2>&1 || missing+=(gdal-bin)
	if ((${#missing[@]} == 0)); then
		return
	fi
	if [[ $(id -u) -ne 0 ]]; then
		log "missing ${missing[*]} and we are not root: install them with apt-get"
		exit 1
	fi
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	APT_UPDATED=1
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# fetch_data puts nc.gpkg in .mapserver/data. Installing r-cran-sf would
# pull R itself (22 packages, ~38 MB) for one 125 kB file, so the package is
# only downloaded and unpacked (2.8 MB) unless it is already installed.
fetch_data() {
	mkdir -p "$DATA"
	fetch_nc
	# The OGC API layer nc_sql reads a WGS 84 copy: MapServer 8.0's OGC API
	# "reprojects" to +proj=latlong +ellps=WGS84 (map->latlon), which has no
	# datum, so NAD27 coordinates would come out unshifted (20-30 m off) and
	# labelled CRS84. GDAL's transform is PROJ's EPSG pipeline, as PostGIS's.
	if [[ ! -f $DATA/nc_wgs84.gpkg ]]; then
		ogr2ogr -f GPKG -t_srs EPSG:4326 -nln nc "$DATA/nc_wgs84.gpkg" "$DATA/nc.gpkg" nc.gpkg >&2
	fi
	fetch_counties
}

# fetch_counties puts the US counties where lighttpd serves them (its
# document root) and a GeoPackage copy for MapServer in .mapserver/data.
fetch_counties() {
	local src=$ROOT/testdata/uscounties/us-counties-10m.geojson
	mkdir -p "$RUN"
	if [[ ! -f $RUN/us-counties-10m.geojson || $src -nt $RUN/us-counties-10m.geojson ]]; then
		cp "$src" "$RUN/us-counties-10m.geojson"
	fi
	if [[ ! -f $DATA/us_counties.gpkg || $src -nt $DATA/us_counties.gpkg ]]; then
		rm -f "$DATA/us_counties.gpkg"
		ogr2ogr -f GPKG -nln us_counties "$DATA/us_counties.gpkg" "$src" >&2
	fi
}

fetch_nc() {
	if [[ -f $DATA/nc.gpkg ]]; then
		return
	fi
	if [[ -f $SF_GPKG ]]; then
		cp "$SF_GPKG" "$DATA/nc.gpkg"
		return
	fi
	log "downloading r-cran-sf for its nc.gpkg (North Carolina counties)"
	local tmp
	tmp=$(mktemp -d "$DIR/deb.XXXXXX")
	# apt's sandbox user must be able to write the download folder.
	chmod 0777 "$tmp"
	if ! (cd "$tmp" && apt-get download -qq r-cran-sf >&2); then
		if [[ $(id -u) -ne 0 || -n ${APT_UPDATED:-} ]]; then
			log "apt-get download r-cran-sf failed"
			exit 1
		fi
		apt-get update -qq >&2
		(cd "$tmp" && apt-get download -qq r-cran-sf >&2)
	fi
	dpkg-deb --fsys-tarfile "$tmp"/r-cran-sf_*.deb |
		tar -x -C "$tmp" ./usr/lib/R/site-library/sf/gpkg/nc.gpkg
	mv "$tmp/usr/lib/R/site-library/sf/gpkg/nc.gpkg" "$DATA/nc.gpkg"
	rm -rf "$tmp"
}

write_config() {
	mkdir -p "$RUN"
	if [[ $(id -u) -eq 0 ]]; then
		# The CGI runs as www-data: it must reach .mapserver/ through every
		# parent directory, and SQLite wants to write beside the gpkg.
		local d=$ROOT
		while [[ $d != / ]]; do
			chmod o+x "$d" 2>/dev/null || true
			d=$(dirname -- "$d")
		done
		chown -R "$WWW_USER:" "$RUN" "$DATA"
	fi

	cat >"$MSCONF" <<-CONF_EOF
		# Written by scripts/mapserver.sh.
		CONFIG
		  ENV
		    MS_MAPFILE "$MAPFILE"
		    MS_ERRORFILE "$RUN/mapserver.log"
		  END
		  # OGC API URLs name the map by alias: /cgi-bin/mapserv/nc/ogcapi/...
		  MAPS
		    "nc" "$MAPFILE"
		  END
		END
	CONF_EOF

	cat >"$MAPFILE" <<-MAPFILE_EOF
		# Written by scripts/mapserver.sh: North Carolina counties for ingestd's
		# interoperability tests.
		MAP
		  NAME "ingestd_interop"
		  STATUS ON
		  EXTENT -84.33 33.88 -75.45 36.59
		  UNITS DD
		  SIZE 400 300
		  PROJECTION
		    "init=epsg:4267"
		  END

		  OUTPUTFORMAT
		    NAME "geojson"
		    DRIVER "OGR/GEOJSON"
		    MIMETYPE "application/json; subtype=geojson"
		    # Stream instead of writing a temporary file per request.
		    FORMATOPTION "STORAGE=stream"
		    FORMATOPTION "FORM=SIMPLE"
		  END

		  WEB
		    METADATA
		      "ows_title" "ingestd interop: North Carolina counties"
		      "ows_onlineresource" "${URL}?"
		      "ows_enable_request" "*"
		      "ows_srs" "EPSG:4267 EPSG:4326"
		      # A cap as county servers have one; the tests page below it.
		      "wfs_maxfeatures" "1000"
		      # Without this, a GetFeature without BBOX is filtered by the map
		      # extent, which costs time and could drop edge features.
		      "wfs_use_default_extent_for_getfeature" "false"
		      # numberMatched on every page, not "unknown": the client checks
		      # the total it collected against it.
		      "wfs_compute_number_matched" "true"
		      "wfs_getfeature_formatlist" "geojson"
		      "ows_encoding" "UTF-8"
		      # OGC API – Features (issue 18): collections are the layers.
		      "oga_onlineresource" "${OGCAPI_URL}"
		      "oga_max_limit" "1000"
		      "oga_default_limit" "10"
		    END
		  END

		  LAYER
		    NAME "nc"
		    TYPE POLYGON
		    STATUS ON
		    CONNECTIONTYPE OGR
		    CONNECTION "$DATA/nc.gpkg"
		    DATA "nc.gpkg"
		    TEMPLATE "none"
		    PROJECTION
		      "init=epsg:4267"
		    END
		    METADATA
		      "ows_title" "North Carolina counties (r-cran-sf nc.gpkg)"
		      "ows_srs" "EPSG:4267 EPSG:4326"
		      "gml_include_items" "all"
		      "gml_types" "auto"
		      # FIPS is unique per county: stable ids across pages.
		      "gml_featureid" "FIPS"
		      "wfs_featureid" "FIPS"
		      # GML coordinates with 10 decimals instead of MapServer's 6
		      # (0.1 m, which alone moves a small coastal county's area by
		      # 5e-6): the interop test bounds ingestd's reading at 1e-6.
		      "wfs_geometry_precision" "10"
		      "wfs_getfeature_formatlist" "geojson"
		    END
		  END

		  # OGC API – Features test layers (issue 18). Layer nc above is the
		  # broken case through OGC API: a GeoPackage read by OGR pages in its
		  # driver, and MapServer 8.0.0 then ignores offset (MapServer#6613,
		  # fixed in 8.0.1) while its next links keep coming. The same data
		  # (a WGS 84 copy, see fetch_data) through an OGR SQL layer pages in
		  # MapServer, where offset works.
		  LAYER
		    NAME "nc_sql"
		    TYPE POLYGON
		    STATUS ON
		    CONNECTIONTYPE OGR
		    CONNECTION "$DATA/nc_wgs84.gpkg"
		    DATA "SELECT * FROM nc"
		    TEMPLATE "none"
		    PROJECTION
		      "init=epsg:4326"
		    END
		    METADATA
		      "ows_title" "North Carolina counties in WGS 84 through OGR SQL (offset works)"
		      "ows_srs" "EPSG:4326"
		      "gml_include_items" "all"
		      "gml_types" "auto"
		      "gml_featureid" "FIPS"
		      "oga_featureid" "FIPS"
		    END
		  END

		  # The US Census counties at 1:10 m (issue 30): real invalid
		  # polygons, served as they are.
		  LAYER
		    NAME "us_counties"
		    TYPE POLYGON
		    STATUS ON
		    CONNECTIONTYPE OGR
		    CONNECTION "$DATA/us_counties.gpkg"
		    DATA "us_counties"
		    TEMPLATE "none"
		    PROJECTION
		      "init=epsg:4326"
		    END
		    METADATA
		      "ows_title" "US counties at 1:10 m (npm us-atlas, converted by GDAL)"
		      "ows_srs" "EPSG:4326"
		      "gml_include_items" "all"
		      "gml_types" "auto"
		      "gml_featureid" "id"
		      "wfs_featureid" "id"
		      "oga_featureid" "id"
		      "wfs_geometry_precision" "10"
		      "wfs_getfeature_formatlist" "geojson"
		    END
		  END
		END
	MAPFILE_EOF

	cat >"$LCONF" <<-CONF_EOF
		# Written by scripts/mapserver.sh. Loopback only.
		# mod_setenv must come before mod_cgi, or the CGI never sees MAPSERVER_CONFIG_FILE (MapServer 8.0's name for it).
		server.modules = ("mod_alias", "mod_setenv", "mod_cgi", "mod_accesslog")
		server.bind = "127.0.0.1"
		server.port = ${PORT}
		server.document-root = "$RUN"
		server.pid-file = "$PIDFILE"
		server.errorlog = "$RUN/lighttpd.log"
		accesslog.filename = "$RUN/access.log"
		$( [[ $(id -u) -eq 0 ]] && printf 'server.username = "%s"\nserver.groupname = "%s"' "$WWW_USER" "$WWW_USER" )
		alias.url = ("/wfs" => "$MAPSERV", "/cgi-bin/mapserv" => "$MAPSERV")
		\$HTTP["url"] =~ "^/(wfs|cgi-bin/mapserv)" {
		  cgi.assign = ("" => "")
		}
		setenv.add-environment = ("MAPSERVER_CONFIG_FILE" => "$MSCONF")
	CONF_EOF
}

is_running() {
	[[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

answers() {
	local body
	body=$(curl -fsS --max-time 5 "${URL}?SERVICE=WFS&REQUEST=GetCapabilities&VERSION=2.0.0" 2>/dev/null) || return 1
	[[ $body == *WFS_Capabilities* ]]
}

start_server() {
	if is_running; then
		return
	fi
	log "starting lighttpd on 127.0.0.1:${PORT} (logs: $RUN)"
	"$LIGHTTPD" -f "$LCONF"
}

cmd=${1:-start}
case $cmd in
start)
	install_packages
	fetch_data
	write_config
	start_server
	for _ in $(seq 1 50); do
		if answers; then
			echo "$URL"
			exit 0
		fi
		sleep 0.1
	done
	log "no WFS answer from $URL; last lines of the logs:"
	tail -n 20 "$RUN/lighttpd.log" "$RUN/mapserver.log" >&2 2>/dev/null || true
	exit 1
	;;
stop)
	if is_running; then
		log "stopping"
		kill "$(cat "$PIDFILE")"
		rm -f "$PIDFILE"
	else
		log "not running"
	fi
	;;
url)
	echo "$URL"
	;;
ogcapi-url)
	# The OGC API – Features landing page of the same server (start it first).
	echo "$OGCAPI_URL"
	;;
status)
	if answers; then
		log "running: $URL"
	else
		log "not running"
		exit 3
	fi
	;;
*)
	log "unknown command: $cmd (want start, stop, url, ogcapi-url or status)"
	exit 2
	;;
esac
