#!/usr/bin/env bash
# Peak memory under the worst allowed load: CONCURRENCY clients (default 256) post a body of the
# largest allowed size (10 MiB) at once to the release binary on SQLite, and the server's peak RSS
# (VmHWM) is printed with the answers. The bodies carry no interchange key, so each is read in full,
# parsed as far as its first bytes and refused (400): what is measured is the buffering, which the
# byte budget (EDI_INBOX_BUFFER_BYTES) bounds, not the database.
# Usage: bench/memory.sh [CONCURRENCY] [BUFFER_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency=${1:-256}
budget=${2:-$((256 * 1024 * 1024))}
cargo build --quiet --release --bin edi-inbox
work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
source scripts/start-server.sh
head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' 'x' >"$work/body"
RUST_LOG=warn,edi_inbox=info EDI_INBOX_BUFFER_BYTES=$budget EDI_INBOX_MAX_IN_FLIGHT=$concurrency \
  EDI_INBOX_REQUEST_TIMEOUT=120 EDI_INBOX_IDLE_TIMEOUT=130 \
  start_server "$work/server.log" target/release/edi-inbox --database-url "sqlite://$work/inbox.db"
before=$(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$server/status")
started=$(date +%s.%N)
seq "$concurrency" | xargs -P "$concurrency" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
  -H 'content-type: application/edi-x12' --data-binary @"$work/body" "http://$address/v1/interchanges" |
  sort | uniq -c | awk '{ printf "%s × %s  ", $1, $2 } END { print "" }'
elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
peak=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$server/status")
echo "$concurrency concurrent 10 MiB bodies, buffer budget $((budget / 1024 / 1024)) MiB: RSS $before MiB idle, peak $peak MiB, all answered in $elapsed s"
