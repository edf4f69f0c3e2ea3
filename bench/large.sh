#!/usr/bin/env bash
# Large interchanges, one run, release build, fresh databases: one X12 interchange of about 20,000
# three-line 810 invoices (examples/corpus.rs), posted with `Prefer: return=minimal` to a fresh
# server, 1 at a time and 8 at once (distinct control numbers), on PostgreSQL and on SQLite. Prints
# the wall time and the server's peak RSS (VmHWM) against the bodies' bytes, and the time 20,000
# single-invoice deliveries take at the load driver's unique rate (64 connections, 10 s) on the same
# engine. The memory budget is raised so that no delivery waits for it: what is measured is what
# recording costs, not what admission allows.
# Then the floors of one interchange on PostgreSQL, from the rows the service booked: psql copying
# them in one transaction into bench/minimal-schema.sql (the key with its payload, the invoices and
# their lines: the least the job needs), and into this service's own schema (every row the service
# wrote, each table's indexes and foreign keys), each against the service's wall time.
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
    # The previous phase's writes (the single deliveries, the dropped database) flushed now, not
    # by a checkpoint in the middle of the run measured.
    psql -X -q "$admin" -c CHECKPOINT
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
# The rows of the interchange just booked on PostgreSQL, as files psql copies again: for the minimal
# schema its key, payload, invoices and lines; for the service's schema every table it wrote.
written=(payloads documents invoices invoice_lines acks deliveries outbox)
keep_rows() {
  local db=$server_url/edi_inbox_large
  psql -X -q "$db" -c "\copy (SELECT i.id, i.source, i.message_id, i.payload_sha256, p.body, i.response_body,
    i.received_at FROM inbox i JOIN payloads p ON p.inbox_id = i.id) TO '$work/minimal-inbox' (FORMAT binary)"
  psql -X -q "$db" -c "\copy (SELECT id, inbox_id, number, issue_date, currency, total FROM invoices) TO '$work/minimal-invoices'"
  psql -X -q "$db" -c "\copy (SELECT invoice_id, line_number, quantity, unit_price, amount FROM invoice_lines) TO '$work/minimal-lines'"
  for table in inbox "${written[@]}"; do
    psql -X -q "$db" -c "\copy (SELECT * FROM $table) TO '$work/own-$table' (FORMAT binary)"
  done
  psql -X -q "$admin" -c "DROP DATABASE IF EXISTS edi_inbox_own" -c "CREATE DATABASE edi_inbox_own TEMPLATE edi_inbox_large" 2>/dev/null
  psql -X -q "$server_url/edi_inbox_own" -c "TRUNCATE inbox, $(IFS=,; echo "${written[*]}") CASCADE" 2>/dev/null
}
# Seconds psql takes to copy the kept rows in one transaction (DATABASE, then its \copy commands).
copied() {
  local db=$1 started ended
  shift
  local commands=(-c BEGIN)
  for copy in "$@"; do commands+=(-c "\copy $copy"); done
  started=$(date +%s.%N)
  psql -X -q -v ON_ERROR_STOP=1 "$db" "${commands[@]}" -c COMMIT
  ended=$(date +%s.%N)
  awk -v s="$started" -v t="$ended" 'BEGIN { print t - s }'
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
    [[ $engine == postgres && $posts == 1 ]] && { service_wall=$(awk -v s="$started" -v t="$ended" 'BEGIN { print t - s }'); keep_rows; }
    awk -v e="$engine" -v p="$posts" -v s="$started" -v t="$ended" -v i="$idle" -v k="$peak" -v b="$body" \
      -v r="$single" -v n="$invoices" 'BEGIN {
        mib = p * b / 1048576
        printf "%-10s %5d %8.2f %10.1f %10.1f %10.1f %12.1f %16.2f\n", e, p, t - s, i, k, k / mib, (k - i) / mib, n / r
      }'
  done
done

fresh_pg edi_inbox_minimal
psql -X -q "$server_url/edi_inbox_minimal" -f bench/minimal-schema.sql
minimal=$(copied "$server_url/edi_inbox_minimal" "inbox FROM '$work/minimal-inbox' (FORMAT binary)" \
  "invoices FROM '$work/minimal-invoices'" "invoice_lines FROM '$work/minimal-lines'")
own_copies=()
for table in inbox "${written[@]}"; do own_copies+=("$table FROM '$work/own-$table' (FORMAT binary)"); done
own=$(copied "$server_url/edi_inbox_own" "${own_copies[@]}")
psql -X -q "$admin" -c "DROP DATABASE edi_inbox_own" -c "DROP DATABASE edi_inbox_minimal"
printf '\nPostgreSQL, one interchange: the service %.2f s; psql copying its rows in one transaction into\n' "$service_wall"
printf '  the minimal schema %.2f s (service ÷ it %.2f), the service'"'"'s schema %.2f s (service ÷ it %.2f)\n' \
  "$minimal" "$(awk -v a="$service_wall" -v b="$minimal" 'BEGIN { print a / b }')" \
  "$own" "$(awk -v a="$service_wall" -v b="$own" 'BEGIN { print a / b }')"
