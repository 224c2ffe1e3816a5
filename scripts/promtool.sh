#!/usr/bin/env bash
# promtool.sh — checks and unit-tests the shipped Prometheus alert rules
# (deploy/prometheus/ingestd-rules.yml) with promtool from Debian's
# `prometheus` package, installing it when missing (as root). Part of the
# test command (scripts/test.sh).
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT/deploy/prometheus"

log() { printf 'promtool.sh: %s\n' "$*" >&2; }

if ! command -v promtool >/dev/null 2>&1; then
	if [[ $(id -u) -ne 0 ]]; then
		log "promtool is missing and we are not root: apt-get install prometheus"
		exit 1
	fi
	log "installing prometheus (for promtool)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends prometheus >&2
fi

promtool check rules ingestd-rules.yml
promtool test rules ingestd-rules.test.yml
