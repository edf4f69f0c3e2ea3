#!/usr/bin/env bash
# Relay benchmark, one run, fresh databases: examples/relay.rs on PostgreSQL and on SQLite; prints
# one JSON line per backend (relay throughput next to the floor of plain POSTs to the same local
# accounting API, and the latency from 201 to accounting).
# Usage: bench/relay.sh [INVOICES] [CONCURRENCY]   (defaults: 2000, 16)
set -euo pipefail
cd "$(dirname "$0")/.."
invoices=${1:-2000}
concurrency=${2:-16}
admin=${EDI_INBOX_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
server_url=${admin%/*}
scripts/postgres-up
cargo build --quiet --release --example relay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
psql -X -q "$admin" -c "DROP DATABASE IF EXISTS edi_inbox_relay WITH (FORCE)" -c "CREATE DATABASE edi_inbox_relay" 2>/dev/null
RUST_LOG=warn target/release/examples/relay "$server_url/edi_inbox_relay" "$invoices" "$concurrency"
RUST_LOG=warn target/release/examples/relay "sqlite://$work/relay.db" "$invoices" "$concurrency"
