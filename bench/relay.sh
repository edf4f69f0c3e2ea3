#!/usr/bin/env bash
# Relay benchmark, one run, fresh databases:
#   * examples/relay.rs on PostgreSQL and on SQLite: relay throughput next to the floor of plain
#     POSTs to the same local accounting API, and the latency from 201 to accounting (one JSON line
#     per backend);
#   * what the outbox costs ingest: the release server on PostgreSQL driven by examples/load.rs for
#     SECONDS at 64 clients, without an accounting API and with one (outbox rows written, relay
#     off, so only the write is measured).
# Usage: bench/relay.sh [INVOICES] [CONCURRENCY] [SECONDS]   (defaults: 2000, 16, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
invoices=${1:-2000}
concurrency=${2:-16}
seconds=${3:-10}
cargo build --quiet --release --bin edi-inbox --example relay --example load
source bench/postgres.sh

fresh_pg edi_inbox_relay
RUST_LOG=warn target/release/examples/relay "$server_url/edi_inbox_relay" "$invoices" "$concurrency"
RUST_LOG=warn target/release/examples/relay "sqlite://$work/relay.db" "$invoices" "$concurrency"

for outbox in without with; do
  fresh_pg edi_inbox_ingest
  args=(--database-url "$server_url/edi_inbox_ingest" --auth open)
  [[ $outbox == with ]] && args+=(--accounting-url http://127.0.0.1:9/unused --relay false)
  start_server "$work/server.log" target/release/edi-inbox "${args[@]}"
  rate=$(target/release/examples/load "http://$address" 64 "$seconds" unique | awk '{ print $6 }')
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  echo "{\"ingest\":\"postgres, 64 clients, $outbox outbox rows\",\"per_second\":${rate:-0}}"
done
