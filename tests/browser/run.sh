#!/usr/bin/env bash
# The browser tests, in Debian's headless Chromium. First Swagger UI: headless Chromium (installed from Debian's packages when missing)
# loads /swagger-ui/ from the built binary with no internet, runs its JavaScript, and the rendered
# page must list the API's operations — proof that the UI, its assets and /openapi.json are all
# served by the binary; then a delivery of each standard is executed through the UI
# (swagger_ui_delivery.py). Then the operator console (console.py, against a server of its own), and
# Lighthouse's accessibility audit of each console page (accessibility.py).
# Screenshots go to target/browser/. Prints closing `N passed, N failed` lines.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v chromium >/dev/null; then
  echo "browser tests: installing Debian's chromium" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
cargo build --quiet --bin edi-inbox

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
source scripts/start-server.sh
start_server "$work/server.log" target/debug/edi-inbox --database-url "sqlite://$work/inbox.db"

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/profile" --virtual-time-budget=15000 \
  --dump-dom "http://$address/swagger-ui/" >"$work/dom.html" 2>"$work/chromium.log" || true
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/profile" --virtual-time-budget=15000 \
  --window-size=1280,2400 --screenshot="$work/swagger-ui.png" "http://$address/swagger-ui/" >/dev/null 2>&1 || true
[[ -n ${SWAGGER_UI_SCREENSHOT:-} ]] && cp "$work/swagger-ui.png" "$SWAGGER_UI_SCREENSHOT"

passed=0 failed=0
check() {
  if grep -q -- "$2" "$work/dom.html"; then
    passed=$((passed + 1)); echo "ok   $1"
  else
    failed=$((failed + 1)); echo "FAIL $1: '$2' not in the rendered page"
  fi
}
check "the UI rendered the document's title" 'class="title"'
check "POST /v1/interchanges is listed" 'data-path="/v1/interchanges"'
check "the acknowledgement operation is listed" '/v1/interchanges/{id}/ack'
check "the admin operations are listed" '/v1/admin/partners'
check "the problem schema is listed" 'Problem'
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]

# A person's delivery through the UI: Playwright (PyPI, in its own virtualenv) drives the same
# Chromium; `playwright install` is never run, the browser is Debian's.
venv=target/browser-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tests/browser/requirements.txt
"$venv/bin/python" tests/browser/swagger_ui_delivery.py "$address"

# A person at the operator console: sign in, watch, filter, open, release, discard, retry, sign out.
"$venv/bin/python" tests/browser/console.py target/debug/edi-inbox
# Lighthouse's accessibility audit of every console page (npm, pinned, with the same Chromium): 90 at
# least each.
if ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
lighthouse=target/browser-node/node_modules/.bin/lighthouse
[[ -x $lighthouse ]] && [[ $("$lighthouse" --version 2>/dev/null) == 13.5.0 ]] ||
  npm install --silent --no-audit --no-fund --prefix target/browser-node lighthouse@13.5.0
"$venv/bin/python" tests/browser/accessibility.py target/debug/edi-inbox "$lighthouse"
