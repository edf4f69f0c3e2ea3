#!/usr/bin/env bash
# End-to-end load benchmark, one run, fresh databases, everything on this machine:
#   * pgbench on bench/minimal.sql (the least an inbox must do: claim the key, book the invoice and
#     its lines, one commit) — the floor edi-inbox is compared with — and on bench/claim.sql (the
#     statement edi-inbox actually sends);
#   * edi-inbox (release build) over HTTP on PostgreSQL and on SQLite, in open mode and with partner
#     API keys, driven by examples/load.rs: unique ingest (a new key per request) and replay (one key
#     again and again), at each concurrency;
#   * peak RSS of each server (VmHWM).
# Prints one table and the ratios the throughput issue asks for.
# Usage: bench/load.sh [SECONDS] [CONCURRENCY...]   (defaults: 10 s; 8 64 256)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
levels=("$@")
[[ ${#levels[@]} -gt 0 ]] || levels=(8 64 256)
cargo build --quiet --release --bin edi-inbox --example load
source bench/postgres.sh
# pgbench connects at most this many clients: the server's max_connections less a margin.
max_clients=$(($(psql -X -At "$admin" -c "SHOW max_connections") - 10))
pgbench_tps() { # SCRIPT DATABASE CLIENTS
  pgbench -n -M prepared -D k=0 -c "$3" -j 2 -T "$seconds" -f "$1" "$server_url/$2" 2>/dev/null |
    awk '/^tps = / { printf "%.0f", $3 }'
}

declare -A result
echo "pgbench (clients capped at $max_clients by max_connections) ..." >&2
fresh_pg edi_inbox_minimal
psql -X -q "$server_url/edi_inbox_minimal" -f bench/minimal-schema.sql
fresh_pg edi_inbox_claim
target/release/edi-inbox --database-url "$server_url/edi_inbox_claim" migrate 2>/dev/null
pgbench -n -M prepared -D k=0 -c 8 -j 2 -T 2 -f bench/minimal.sql "$server_url/edi_inbox_minimal" >/dev/null 2>&1
for c in "${levels[@]}"; do
  clients=$((c < max_clients ? c : max_clients))
  result[minimal,$c]=$(pgbench_tps bench/minimal.sql edi_inbox_minimal "$clients")
  result[claim,$c]=$(pgbench_tps bench/claim.sql edi_inbox_claim "$clients")
done

for backend in postgres sqlite; do
  for auth in open partners; do
    if [[ $backend == postgres ]]; then
      fresh_pg edi_inbox_load
      url=$server_url/edi_inbox_load
    else
      rm -f "$work"/load.db*
      url=sqlite://$work/load.db
    fi
    flags=(--database-url "$url")
    unset EDI_INBOX_LOAD_API_KEY
    if [[ $auth == partners ]]; then
      flags+=(--auth partners)
      key=$(target/release/edi-inbox --database-url "$url" partner add acme --name ACME \
        --sender x12:ZZ:ACMESUPPLY --requests-per-minute 2000000000 2>/dev/null |
        python3 -c 'import json,sys; print(next(s["secret"] for s in json.load(sys.stdin)["secrets"] if s["kind"] == "api_key"))')
      export EDI_INBOX_LOAD_API_KEY=$key
    fi
    echo "edi-inbox on $backend, $auth ..." >&2
    RUST_LOG=warn,edi_inbox=info \
      start_server "$work/server.log" target/release/edi-inbox "${flags[@]}"
    target/release/examples/load "http://$address" 8 2 unique >/dev/null
    for c in "${levels[@]}"; do
      for mode in unique replay; do
        line=$(target/release/examples/load "http://$address" "$c" "$seconds" "$mode")
        result[$backend,$auth,$mode,$c]=$(awk '{ print $6 }' <<<"$line")
        result[$backend,$auth,$mode,$c,p99]=$(awk '{ print $10 }' <<<"$line")
        result[$backend,$auth,$mode,$c,failures]=$(awk '{ print $4 }' <<<"$line")
      done
    done
    result[$backend,$auth,rss]=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$server/status")
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
printf '\n%-9s %-24s %10s %10s %8s %10s %10s %8s\n' clients "" "pgbench" "claim.sql" "" "" "" ""
for c in "${levels[@]}"; do
  printf '%-9s %-24s %10s %10s\n' "$c" "minimal / claim.sql tps" "${result[minimal,$c]}" "${result[claim,$c]}"
done
printf '\n%-9s %-24s %10s %8s %10s %8s %9s %9s %7s\n' clients "edi-inbox" "unique/s" "p99 ms" "replay/s" "p99 ms" "unique÷min" "replay÷uniq" failures
for c in "${levels[@]}"; do
  for backend in postgres sqlite; do
    for auth in open partners; do
      u=${result[$backend,$auth,unique,$c]}
      r=${result[$backend,$auth,replay,$c]}
      printf '%-9s %-24s %10s %8s %10s %8s %9s %9s %7s\n' "$c" "$backend, $auth" "$u" \
        "${result[$backend,$auth,unique,$c,p99]}" "$r" "${result[$backend,$auth,replay,$c,p99]}" \
        "$(ratio "$u" "${result[minimal,$c]}")" "$(ratio "$r" "$u")" \
        "$((${result[$backend,$auth,unique,$c,failures]} + ${result[$backend,$auth,replay,$c,failures]}))"
    done
  done
done
echo
for c in "${levels[@]}"; do
  echo "c=$c: SQLite ÷ PostgreSQL unique $(ratio "${result[sqlite,open,unique,$c]}" "${result[postgres,open,unique,$c]}");" \
    "partners ÷ open unique: PostgreSQL $(ratio "${result[postgres,partners,unique,$c]}" "${result[postgres,open,unique,$c]}")," \
    "SQLite $(ratio "${result[sqlite,partners,unique,$c]}" "${result[sqlite,open,unique,$c]}")"
done
for backend in postgres sqlite; do
  for auth in open partners; do
    echo "peak RSS, $backend, $auth: ${result[$backend,$auth,rss]} MiB"
  done
done
