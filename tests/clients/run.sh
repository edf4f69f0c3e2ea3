#!/usr/bin/env bash
# Installs the official clients (pinned: Standard Webhooks, the CloudEvents SDK, google-auth) into a
# virtualenv and runs their checks against the built binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/clients-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tests/clients/requirements.txt
cargo build --quiet --bin edi-inbox
"$venv/bin/python" tests/clients/standard_webhooks_client.py
"$venv/bin/python" tests/clients/cloudevents_client.py
"$venv/bin/python" tests/clients/pubsub_push_client.py
