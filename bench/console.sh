#!/usr/bin/env bash
# How fast the operator console answers with 100,000 interchanges stored, on PostgreSQL and SQLite:
# the release binary is filled over HTTP by examples/load.rs (unique first deliveries, then some
# replays, so the audit trail has both), then every console page is fetched 20 times with a signed-in
# session (curl, keep-alive off) and its median and slowest time printed, in milliseconds.
# The issue's bar is 200 ms. Usage: bench/console.sh [INTERCHANGES [BACKENDS]]   (default 100000,
# "postgres sqlite")
set -euo pipefail
cd "$(dirname "$0")/.."
wanted=${1:-100000}
cargo build --quiet --release --bin edi-inbox --example load
source bench/postgres.sh
token=bench-console-token

stored() { # the exact number of interchanges, from the admin API's pages would be slow: ask the database
  if [[ $1 == postgres ]]; then
    psql -X -At "$server_url/edi_inbox_console" -c "SELECT count(*) FROM inbox"
  else
    python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM inbox').fetchone()[0])" "$work/console.db"
  fi
}

# Fetches /console$1 20 times; prints its median and slowest time under the label $2 (default $1).
measure() {
  local page=$1 times=()
  for _ in $(seq 1 20); do
    times+=("$(curl -s -o /dev/null -b "$work/cookies" -w '%{http_code} %{time_total}' "http://$address/console$page")")
  done
  printf '%s\n' "${times[@]}" | awk -v backend="$backend ($(stored "$backend"))" -v page="${2:-$page}" '
    $1 != 200 { bad = 1 } { t[NR] = $2 * 1000 }
    END {
      if (bad) { print "console page " page " did not answer 200" > "/dev/stderr"; exit 1 }
      n = asort(t); printf "%-9s %-34s %8.1f %8.1f\n", backend, substr(page, 1, 34), t[int((n + 1) / 2)], t[n]
    }'
}

printf '%-9s %-34s %8s %8s\n' backend page median_ms max_ms
for backend in ${2:-postgres sqlite}; do
  if [[ $backend == postgres ]]; then
    fresh_pg edi_inbox_console
    url=$server_url/edi_inbox_console
  else
    url=sqlite://$work/console.db
  fi
  EDI_INBOX_ADMIN_TOKEN=$token start_server "$work/$backend.log" target/release/edi-inbox --database-url "$url" \
    --auth open --rate-limit 100000000
  while (($(stored "$backend") < wanted)); do
    target/release/examples/load "http://$address" 64 5 unique >/dev/null
  done
  target/release/examples/load "http://$address" 16 2 replay >/dev/null
  sleep 2 # the audit trail is written in the background
  # The planner statistics autovacuum would have gathered by then (it analyzes after 10 % changed rows):
  # without them PostgreSQL guesses that a control number matches hundreds of rows.
  [[ $backend == postgres ]] && psql -X -q "$server_url/edi_inbox_console" -c "ANALYZE"
  curl -s -o /dev/null -c "$work/cookies" -d "token=$token" "http://$address/console/sign-in"
  some=$(curl -s -b "$work/cookies" "http://$address/console/interchanges" | grep -o '/console/interchanges/[0-9a-f-]*' | head -n 1)
  control=$(curl -s -b "$work/cookies" "http://$address$some" | grep -o 'Control number</th><td class="mono">[0-9]*' | grep -o '[0-9]*$')
  invoice=$(curl -s -b "$work/cookies" "http://$address$some" | grep -o '/console/invoices/[0-9a-f-]*' | head -n 1)
  digits=$(sed 's/^0*//' <<<"$control" | cut -c1-4)
  # The search box: a partial control number (few match), one digit (a control number exactly:
  # as a prefix it would match a ninth of all), and an invoice number every interchange of the
  # load has (all match: the worst case).
  loaded=$SECONDS
  older=$(curl -s -b "$work/cookies" "http://$address/console/interchanges" | grep -o 'cursor=[0-9a-f-]*' | head -n 1)
  # The overview first while the load's last two minutes are still counted from the database (the
  # first fetch also counts the rest once), then every other page: lists (with how many match, up to
  # 10,000), a page back, oldest first, the search box, the detail pages.
  for page in / /interchanges "/interchanges?$older" "/interchanges?before=${older#cursor=}" \
    "/interchanges?order=oldest" "/interchanges?control_number=$control" "/interchanges?status=rejected" \
    "/interchanges?q=$digits" "/interchanges?q=1" "/interchanges?q=INV-1042" "/interchanges?q=INV-1042&$older" \
    "${some#/console}" "${invoice#/console}" /quarantine /accounting /partners /refusals /audit; do
    measure "$page"
  done
  # The overview once the load's minutes are settled (kept in memory, counted once).
  sleep $((loaded + 125 - SECONDS > 0 ? loaded + 125 - SECONDS : 0))
  measure / "/ (2 min after)"
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
done
