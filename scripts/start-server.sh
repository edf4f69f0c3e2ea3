# Sourced by the scripts that need a running edi-inbox: `start_server LOG BINARY ARGS...` starts
# BINARY (with JSON logs) on a free loopback port in the background, sets `server` to its pid and
# `address` to the address it listens on, and fails with its log when it does not come up.
start_server() {
  local log=$1
  shift
  EDI_INBOX_LOG_FORMAT=json "$@" --bind 127.0.0.1:0 serve 2>"$log" &
  server=$!
  address=
  for _ in $(seq 1 100); do
    address=$(grep -o '"address":"[^"]*"' "$log" | head -n 1 | cut -d'"' -f4 || true)
    [[ -n $address ]] && return 0
    sleep 0.1
  done
  echo "edi-inbox did not start:" >&2
  cat "$log" >&2
  return 1
}
