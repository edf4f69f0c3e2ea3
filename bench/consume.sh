#!/usr/bin/env bash
# Consumer benchmark, one run, fresh PostgreSQL databases, release build:
#   * HTTP ingest: the server driven by examples/load.rs for SECONDS at 64 clients, unique
#     interchanges (201s) and one interchange again and again (200 replays);
#   * `edi-inbox consume` from RabbitMQ, NATS JetStream and Kafka (tansu; a topic of 8 partitions)
#     (examples/consume.rs): COUNT unique
#     interchanges, then one interchange COUNT times (each after the first a redelivery: a replay),
#     timed from the consumer's start until every message is audited.
# One JSON line per figure. Usage: bench/consume.sh [COUNT] [SECONDS]   (defaults: 20000, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20000}
seconds=${2:-10}
cargo build --quiet --release --bin edi-inbox --example load --example consume
source bench/postgres.sh
scripts/brokers-up

for mode in unique replay; do
  fresh_pg edi_inbox_bench_http
  start_server "$work/server.log" target/release/edi-inbox --database-url "$server_url/edi_inbox_bench_http" --auth open
  rate=$(target/release/examples/load "http://$address" 64 "$seconds" "$mode" | awk '{ print $6 }')
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  echo "{\"http\":\"64 clients\",\"messages\":\"$mode\",\"per_second\":${rate:-0}}"
done
for broker in amqp://guest:guest@127.0.0.1:5672/%2f nats://127.0.0.1:4222 kafka://127.0.0.1:9092; do
  for mode in unique redelivered; do
    fresh_pg edi_inbox_bench_consume
    target/release/examples/consume target/release/edi-inbox "$server_url/edi_inbox_bench_consume" "$broker" "$count" "$mode"
  done
done
