#!/usr/bin/env bash
# Large interchanges, one run, release build, fresh databases: one X12 interchange of about 20,000
# three-line 810 invoices (examples/corpus.rs), posted with `Prefer: return=minimal` to a fresh
# server, 1 at a time and 8 at once (distinct control numbers), on PostgreSQL and on SQLite. Prints
# the wall time and the server's peak RSS (VmHWM) against the bodies' bytes, and the time 20,000
# single-invoice deliveries take at the load driver's unique rate (64 connections, 10 s) on the same
# engine. The memory budget is raised so that no delivery waits for it: what is measured is what
# recording costs, not what admission allows.
# Usage: bench/large.sh [INVOICES]   (default 20000; LARGE_BIN=path measures another build of the
# server, e.g. the previous commit's, on the same corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
invoices=${1:-20000}
cargo build --quiet --release --bin edi-inbox --example corpus --example load
source bench/postgres.sh
export EDI_INBOX_BUFFER_BYTES=$((8 * 1024 * 1024 * 1024)) EDI_INBOX_REQUEST_TIMEOUT=600 EDI_INBOX_IDLE_TIMEOUT=610
# The corpus writes invoices of about 330 bytes: ask for the size that holds INVOICES of them.
for i in $(seq 8); do
  target/release/examples/corpus $((invoices * 330)) "$i" >"$work/interchange-$i.edi"
done
count=$(grep -o 'ST\*810' "$work/interchange-1.edi" | wc -l)
body=$(stat -c %s "$work/interchange-1.edi")
rss() { awk -v field="$1" '$1 == field":" { printf "%.1f", $2 / 1024 }' "/proc/$server/status"; }
serve() { # ENGINE
  if [[ $1 == postgres ]]; then
    fresh_pg edi_inbox_large
    url=$server_url/edi_inbox_large
  else
    rm -f "$work"/large.db*
    url=sqlite://$work/large.db
  fi
  RUST_LOG=warn,edi_inbox=info start_server "$work/server.log" "${LARGE_BIN:-target/release/edi-inbox}" --database-url "$url"
}
stop() {
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
}
printf '%s invoices, %s bytes per interchange\n\n' "$count" "$body"
printf '%-10s %5s %8s %10s %10s %10s %12s %16s\n' engine posts "wall s" "idle MiB" "peak MiB" "peak÷body" \
  "added÷body" "20,000 single s"
for engine in postgres sqlite; do
  serve "$engine"
  single=$(target/release/examples/load "http://$address" 64 10 unique | awk '{ print $6 }')
  stop
  for posts in 1 8; do
    serve "$engine"
    idle=$(rss VmRSS)
    started=$(date +%s.%N)
    statuses=$(seq "$posts" | xargs -P "$posts" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
      -H 'content-type: application/edi-x12' -H 'prefer: return=minimal' \
      --data-binary @"$work/interchange-{}.edi" "http://$address/v1/interchanges" | sort | uniq -c | xargs)
    ended=$(date +%s.%N)
    peak=$(rss VmHWM)
    stop
    [[ $statuses == "$posts 201" ]] || { echo "$engine, $posts: answers $statuses" >&2; exit 1; }
    awk -v e="$engine" -v p="$posts" -v s="$started" -v t="$ended" -v i="$idle" -v k="$peak" -v b="$body" \
      -v r="$single" -v n="$invoices" 'BEGIN {
        mib = p * b / 1048576
        printf "%-10s %5d %8.2f %10.1f %10.1f %10.1f %12.1f %16.2f\n", e, p, t - s, i, k, k / mib, (k - i) / mib, n / r
      }'
  done
done
