#!/usr/bin/env bash
# AS2 messages per second (compressed, signed, encrypted by pyas2lib; a signed MDN each) next to
# plain HTTP ingest of the same interchanges, ~1 KiB and ~1 MiB, one run: see bench/as2.py.
# Usage: bench/as2.sh [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --bin edi-inbox --example corpus
venv=target/clients-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tests/clients/requirements.txt
"$venv/bin/python" bench/as2.py "$@"
