#!/usr/bin/env bash
# End-to-end load on PostgreSQL, next to pgbench running the same SQL, in one run:
#   1. edi-inbox (release) on a fresh database, driven by examples/load.rs with CONCURRENCY clients
#      posting distinct 810 interchanges for SECONDS;
#   2. pgbench with bench/claim.sql (the statements one first delivery sends) at the same concurrency.
# Prints both rates and their ratio: how much of the database's own speed survives HTTP, parsing,
# JSON and the driver. Usage: bench/load.sh [CONCURRENCY] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency=${1:-32}
seconds=${2:-10}
admin=${EDI_INBOX_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
database=edi_inbox_load
url="${admin%/*}/$database"
scripts/postgres-up
psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" -c "CREATE DATABASE $database"
cargo build --quiet --release --bin edi-inbox --example load

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
source scripts/start-server.sh
RUST_LOG=warn,edi_inbox=info EDI_INBOX_DB_MAX_CONNECTIONS=$concurrency EDI_INBOX_MAX_IN_FLIGHT=$((concurrency * 4)) \
  start_server "$work/server.log" target/release/edi-inbox --database-url "$url"

http=$(target/release/examples/load "http://$address" "$concurrency" "$seconds")
kill "$server"; wait "$server" 2>/dev/null || true
pgbench=$(pgbench -n -M prepared -D k=0 -c "$concurrency" -j 1 -T "$seconds" -f bench/claim.sql "$url")
tps=$(awk '/^tps = / { print $3 }' <<<"$pgbench")
rps=$(awk '{ print $6 }' <<<"$http")
echo "edi-inbox over HTTP: $http"
echo "pgbench, same SQL:   tps $tps (latency average $(awk '/latency average/ { print $4 }' <<<"$pgbench") ms)"
awk -v rps="$rps" -v tps="$tps" 'BEGIN { printf "ratio: edi-inbox reaches %.0f%% of pgbench on the same statements\n", 100 * rps / tps }'
