#!/usr/bin/env bash
# cluster.sh — issue 7's "Must show", with its figures: three `ingestd run`
# processes against one PostGIS and three fixture origins (one flapping),
# for about fifteen seconds with short probe leases and cooldowns (cmd/ingestd/cluster_test.go, TestCluster). The test
# also runs in `go test ./...` and checks order and counts only; this prints what it
# measured (`scripts/bench.sh cluster` reports the same figures as a benchmark). It
# starts the project's PostGIS unless DATABASE_URL is set. Extra arguments go to go test.
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

if [[ -z ${DATABASE_URL:-} ]]; then
	DATABASE_URL=$(scripts/postgis.sh start)
fi
export DATABASE_URL
exec go test -count=1 -run '^TestCluster$' -v "$@" ./cmd/ingestd
