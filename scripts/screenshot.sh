#!/usr/bin/env bash
# screenshot.sh — renders pages of a running status page in headless
# Chromium (Debian's `chromium`, installed when missing, as root) and saves
# one PNG each. Fails when Chromium reports a page error (any console
# message: the page has no script, so a message is a refused or failed
# load, a CSP violation, or worse), when the DOM lacks the page's header,
# or when the PNG is blank or unstyled (internal/tools/pngcheck: one colour, or no
# pixel of the header's colour).
#
#   scripts/screenshot.sh --install              install chromium if missing, nothing else
#   scripts/screenshot.sh OUTDIR NAME=URL...     e.g. overview=http://127.0.0.1:9187/status/
#
# TestStatusPageDemo (cmd/ingestd) runs it on the demo scenario; with
# INGESTD_SCREENSHOTS=DIR it keeps the PNGs there (docs/ holds the README's).
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)

log() { printf 'screenshot.sh: %s\n' "$*" >&2; }

install_chromium() {
	command -v chromium >/dev/null 2>&1 && return
	if [[ $(id -u) -ne 0 ]]; then
		log "chromium is missing and we are not root: apt-get install chromium"
		exit 3
	fi
	log "installing chromium"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
}

install_chromium
[[ ${1:-} == --install ]] && exit 0
if (($# < 2)); then
	log "usage: screenshot.sh OUTDIR NAME=URL..."
	exit 2
fi
out=$1
shift
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pngcheck="$work/pngcheck"
(cd "$ROOT" && go build -o "$pngcheck" ./internal/tools/pngcheck)

# A profile of its own, no network beyond what the page asks for (loopback),
# no first-run or extension noise.
chrome=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
	--disable-extensions --disable-background-networking --disable-sync --disable-component-update
	--user-data-dir="$work/profile" --window-size=1280,1000 --enable-logging=stderr --v=0)
status=0
for arg in "$@"; do
	name=${arg%%=*}
	url=${arg#*=}
	png="$out/$name.png"
	rm -f "$png"
	if ! timeout 90 "${chrome[@]}" --screenshot="$png" "$url" >"$work/$name.out" 2>"$work/$name.log"; then
		log "$name: chromium failed on $url:"
		grep -v dbus "$work/$name.log" | tail -n 20 >&2
		status=1
		continue
	fi
	if grep -q 'CONSOLE' "$work/$name.log"; then
		log "$name: page errors on $url:"
		grep 'CONSOLE' "$work/$name.log" >&2
		status=1
	fi
	if ! timeout 90 "${chrome[@]}" --dump-dom "$url" 2>/dev/null >"$work/$name.html" ||
		! grep -q '<header><a href="[./]*">ingestd status</a>' "$work/$name.html"; then
		log "$name: the DOM of $url lacks the status page's header"
		status=1
	fi
	if [[ ! -s $png ]]; then
		log "$name: no screenshot written"
		status=1
		continue
	fi
	# #24292e is the header band: present only when the stylesheet loaded.
	"$pngcheck" -expect 24292e "$png" || status=1
done
exit $status
