# Sourced by the benchmarks that run the server on PostgreSQL: makes sure the server in
# EDI_INBOX_TEST_POSTGRES is up, sets `admin` (that URL) and `server_url` (the same server, no
# database), a scratch directory `work` removed on exit with the server started by `start_server`,
# and `fresh_pg NAME`, which (re)creates an empty database.
admin=${EDI_INBOX_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
server_url=${admin%/*}
scripts/postgres-up
work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
source scripts/start-server.sh
fresh_pg() {
  psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" 2>/dev/null
}
