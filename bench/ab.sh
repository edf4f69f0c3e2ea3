#!/usr/bin/env bash
# Compares two builds of edi-inbox in one run: unique ingest over HTTP on PostgreSQL (open mode),
# each binary on a fresh database, alternating, ROUNDS times, driven by examples/load.rs. For a
# change that must not cost throughput: build the commit before it and after it (release), then
#   bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECONDS] [CLIENTS]   (defaults: 3 rounds, 10 s, 64)
# Prints each run and the ratio of the means, new ÷ old. For what one schema change costs, give the
# same binary twice and AB_OLD_SQL: statements run on the old side's database once it is migrated
# (e.g. dropping an index the new side keeps).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-3}
seconds=${4:-10}
clients=${5:-64}
cargo build --quiet --release --example load
source bench/postgres.sh
declare -A total=([old]=0 [new]=0)
for round in $(seq 1 "$rounds"); do
  for which in old new; do
    fresh_pg edi_inbox_ab
    binary=$old
    [[ $which == new ]] && binary=$new
    RUST_LOG=warn,edi_inbox=info start_server "$work/server.log" "$binary" --database-url "$server_url/edi_inbox_ab"
    if [[ $which == old && -n ${AB_OLD_SQL:-} ]]; then
      psql -X -q -v ON_ERROR_STOP=1 "$server_url/edi_inbox_ab" -c "$AB_OLD_SQL"
    fi
    target/release/examples/load "http://$address" 8 2 unique >/dev/null
    line=$(target/release/examples/load "http://$address" "$clients" "$seconds" unique)
    echo "round $round, $which: $line"
    total[$which]=$((total[$which] + $(awk '{ print $6 }' <<<"$line")))
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=
  done
done
awk -v a="${total[new]}" -v b="${total[old]}" -v n="$rounds" \
  'BEGIN { printf "unique/s, mean of %d: old %.0f, new %.0f, new ÷ old %.3f\n", n, b / n, a / n, a / b }'
