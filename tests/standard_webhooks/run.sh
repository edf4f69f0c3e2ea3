#!/usr/bin/env bash
# Installs the official Standard Webhooks client (pinned) into a virtualenv and runs its check
# against the built binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/standard-webhooks-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tests/standard_webhooks/requirements.txt
cargo build --quiet --bin edi-inbox
exec "$venv/bin/python" tests/standard_webhooks/official_client.py
