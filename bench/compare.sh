#!/usr/bin/env bash
# Parser throughput of edi-inbox against pydifact and pyx12 (pinned in bench/requirements.txt),
# measured in one run on the same generated 1 MiB interchanges.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/bench-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r bench/requirements.txt
exec "$venv/bin/python" bench/compare.py
