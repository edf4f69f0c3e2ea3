#!/usr/bin/env bash
# Peak memory under the worst allowed load, on the release binary; prints the server's RSS (idle,
# peak as VmHWM, and after the load) for two loads:
#   1. reading: CONCURRENCY clients (default 256) post a body of the largest allowed size (10 MiB) at
#      once, on SQLite. The bodies carry no interchange key, so each is read in full and refused
#      (400): what is measured is the buffering, bounded by the read reservations (4 × the body).
#   2. recording: BIG clients (default 8) post at once a distinct valid 10 MiB interchange of 31,415
#      three-line invoices on PostgreSQL (fresh database), retrying a 429 as a partner does
#      (curl --retry honours Retry-After). Each costs about 300 MB to record (its estimate is printed,
#      from a server whose budget is too small for it), so the budget admits one at a time.
# Usage: bench/memory.sh [CONCURRENCY] [BIG] [BUFFER_BYTES]   (budget default: the server's, 512 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency=${1:-256}
big=${2:-8}
budget=${3:-$((512 * 1024 * 1024))}
cargo build --quiet --release --bin edi-inbox --example corpus
source bench/postgres.sh
rss() { awk -v field="$1" '$1 == field":" { printf "%.1f", $2 / 1024 }' "/proc/$server/status"; }
export EDI_INBOX_BUFFER_BYTES=$budget EDI_INBOX_MAX_IN_FLIGHT=$concurrency EDI_INBOX_REQUEST_TIMEOUT=300 \
  EDI_INBOX_IDLE_TIMEOUT=310 RUST_LOG=warn,edi_inbox=info
post() { # CLIENTS FILE-PATTERN (with {} for the client's number) [CURL OPTIONS...]
  local clients=$1 pattern=$2
  shift 2
  seq "$clients" | xargs -P "$clients" -I{} curl -s -o "$work/answer-{}" -w '%{http_code}\n' "$@" \
    -H 'content-type: application/edi-x12' --data-binary @"$pattern" "http://$address/v1/interchanges" |
    sort | uniq -c | awk '{ printf "%s × %s  ", $1, $2 } END { print "" }'
}
measure() { # LABEL CLIENTS FILE-PATTERN [CURL OPTIONS...]
  local label=$1 before started
  shift
  before=$(rss VmRSS)
  started=$(date +%s.%N)
  post "$@"
  local elapsed peak
  elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  peak=$(rss VmHWM)
  sleep 12
  echo "$label: RSS $before MiB idle, peak $peak MiB, $(rss VmRSS) MiB after; all answered in $elapsed s"
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
}

head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' 'x' >"$work/garbage"
start_server "$work/server.log" target/release/edi-inbox --database-url "sqlite://$work/inbox.db"
measure "$concurrency concurrent 10 MiB unparseable bodies, budget $((budget / 1024 / 1024)) MiB (SQLite)" \
  "$concurrency" "$work/garbage"

for i in $(seq "$big"); do
  target/release/examples/corpus $((10 * 1024 * 1024 - 4096)) "$i" >"$work/interchange-$i.edi"
done
EDI_INBOX_BUFFER_BYTES=$((64 * 1024 * 1024)) start_server "$work/estimate.log" target/release/edi-inbox \
  --database-url "sqlite://$work/estimate.db"
curl -s -H 'content-type: application/edi-x12' --data-binary @"$work/interchange-1.edi" \
  "http://$address/v1/interchanges" | grep -o 'recording its [0-9]* documents needs about [0-9]* bytes' || true
kill "$server"
server=
fresh_pg edi_inbox_memory
start_server "$work/server.log" target/release/edi-inbox \
  --database-url "$server_url/edi_inbox_memory"
measure "$big concurrent valid 10 MiB interchanges, budget $((budget / 1024 / 1024)) MiB (PostgreSQL)" \
  "$big" "$work/interchange-{}.edi" --retry 100 --retry-max-time 600
