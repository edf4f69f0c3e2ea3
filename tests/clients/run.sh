#!/usr/bin/env bash
# Installs the official clients (pinned: Standard Webhooks, the CloudEvents SDK, google-auth,
# pyas2lib and openapi-python-client, which generates a client from the served document, in a
# virtualenv; openapi-typescript, openapi-fetch and tsc for a TypeScript client, and AWS's SNS
# validator, from npm with Debian's nodejs when missing) and runs their checks against the built
# binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/clients-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tests/clients/requirements.txt
cargo build --quiet --bin edi-inbox
"$venv/bin/python" tests/clients/standard_webhooks_client.py
"$venv/bin/python" tests/clients/cloudevents_client.py
"$venv/bin/python" tests/clients/pubsub_push_client.py
"$venv/bin/python" tests/clients/as2_client.py
"$venv/bin/python" tests/clients/generated_client.py
if ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
# A TypeScript client (openapi-typescript, openapi-fetch, tsc; pinned by the lockfile) from the
# served document.
if ! cmp -s tests/clients/typescript/package-lock.json target/clients-ts/package-lock.json; then
  rm -rf target/clients-ts && mkdir -p target/clients-ts
  cp tests/clients/typescript/package.json tests/clients/typescript/package-lock.json target/clients-ts/
  npm ci --silent --no-audit --no-fund --prefix target/clients-ts
fi
"$venv/bin/python" tests/clients/typescript_client.py
# AWS's own SNS message validator (npm), the independent check of the messages sns_client.py signs.
[[ -d target/clients-node/node_modules/sns-validator ]] ||
  npm install --silent --no-audit --no-fund --prefix target/clients-node sns-validator@0.3.5
"$venv/bin/python" tests/clients/sns_client.py
