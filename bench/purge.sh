#!/usr/bin/env bash
# Ingest while the retention purge drops 500,000 payloads and 500,000 audit rows, on PostgreSQL, one
# run: the database is seeded with five whole expired days of 100,000 of each (dropped as day
# partitions) and 50,000 of each just before the horizon, in the day it falls in (kept: a day goes
# whole), all 735-byte payloads like tests/fixtures/x12/810-single.edi. examples/load.rs posts
# unique interchanges for SECONDS from CONCURRENCY connections; a third of the way in,
# `edi-inbox purge --retention-days 30` runs. Prints the purge's time and counts, and ingest during
# the purge next to ingest outside it (answers per second, p99 and max latency of the requests sent
# in each window), with their ratios.
# Usage: bench/purge.sh [SECONDS] [CONCURRENCY]   (defaults: 30 s, 64)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
concurrency=${2:-64}
cargo build --quiet --release --bin edi-inbox --example load
source bench/postgres.sh
fresh_pg edi_inbox_purge
url=$server_url/edi_inbox_purge
target/release/edi-inbox --database-url "$url" migrate 2>/dev/null
echo "seeding 550,000 expired payloads and as many audit rows ..." >&2
psql -X -q -o /dev/null -v ON_ERROR_STOP=1 "$url" <<'SQL'
SELECT edi_inbox_partition(t::regclass, current_date - d)
    FROM unnest(ARRAY['payloads', 'deliveries']) AS t, generate_series(30, 36) AS d;
CREATE TEMPORARY TABLE seeded AS
    SELECT gen_random_uuid() AS id, (current_date - d)::timestamp AT TIME ZONE 'UTC' + n * interval '864 ms' AS at
    FROM generate_series(32, 36) AS d, generate_series(1, 100000) AS n
    UNION ALL
    SELECT gen_random_uuid(), now() - interval '30 days' - n * interval '50 ms' FROM generate_series(1, 50000) AS n;
INSERT INTO payloads (inbox_id, received_at, body) SELECT id, at, convert_to(repeat('x', 735), 'UTF8') FROM seeded;
INSERT INTO deliveries (id, inbox_id, source, message_id, outcome, status, request_id, remote_addr, content_type,
        body_bytes, received_at)
    SELECT gen_random_uuid(), id, 'x12:ZZ:ACMESUPPLY', id::text, 'recorded', 201, id::text, '127.0.0.1',
        'application/edi-x12', 735, at
    FROM seeded;
VACUUM ANALYZE payloads;
VACUUM ANALYZE deliveries;
SQL
RUST_LOG=warn,edi_inbox=info start_server "$work/server.log" target/release/edi-inbox --database-url "$url"
target/release/examples/load "http://$address" 8 2 unique >/dev/null
EDI_INBOX_LOAD_SAMPLES=$work/samples target/release/examples/load "http://$address" "$concurrency" "$seconds" \
  unique >"$work/load" &
load=$!
sleep $((seconds / 3))
started=$(date +%s.%N)
target/release/edi-inbox --database-url "$url" purge --retention-days 30 >"$work/purged" 2>/dev/null
ended=$(date +%s.%N)
wait "$load"
python3 - "$work/samples" "$started" "$ended" "$work/purged" "$(cat "$work/load")" <<'PY'
import json, sys
samples, started, ended, purged, load = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = [tuple(map(float, line.split())) for line in open(samples)]
first, last = min(r[0] for r in rows), max(r[0] for r in rows)
def window(inside):
    chosen = sorted(latency for sent, latency in rows if inside(sent))
    return chosen
during = window(lambda sent: started <= sent <= ended)
outside = window(lambda sent: not started <= sent <= ended)
def stats(latencies, span):
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / span, p99, latencies[-1]
span = ended - started
d_rate, d_p99, d_max = stats(during, span)
o_rate, o_p99, o_max = stats(outside, (last - first) - span)
print(f"purge: {span:.2f} s, {json.load(open(purged))}")
print(f"load over the whole run: {load}")
print(f"{'':24} {'answers/s':>10} {'p99 ms':>8} {'max ms':>8}")
print(f"{'outside the purge':24} {o_rate:10.0f} {o_p99:8.1f} {o_max:8.1f}")
print(f"{'during the purge':24} {d_rate:10.0f} {d_p99:8.1f} {d_max:8.1f}")
print(f"during ÷ outside: rate {d_rate / o_rate:.2f}×, p99 {d_p99 / o_p99:.2f}×")
PY
