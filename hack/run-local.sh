#!/usr/bin/env bash
# Runs summa-server locally with no cluster: builds it, starts it on
# 127.0.0.1:8082 with its data under bin/data and access control on (HTTPS
# with a local CA, one bearer token per scope, all in bin/credentials),
# loads a sample of real text through the HTTP API, and keeps serving until
# Ctrl-C (SIGTERM: drain and ordered shutdown).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
listen="${SUMMA_LISTEN:-127.0.0.1:8082}"
data="${SUMMA_DATA_DIR:-bin/data}"
creds="${SUMMA_CREDENTIALS_DIR:-bin/credentials}"
mkdir -p bin "$data"
go build -o bin/summa-server ./cmd/summa-server
go run ./hack/local-credentials -dir "$creds"
bin/summa-server --data-dir "$data" --listen "$listen" \
  --admin-token-file "$creds/admin-token" --write-token-file "$creds/write-token" --read-token-file "$creds/read-token" \
  --tls-cert-file "$creds/tls.crt" --tls-key-file "$creds/tls.key" 2> bin/summa-server.log &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; echo "summa-server stopped (log: bin/summa-server.log)"' EXIT
for _ in $(seq 1 100); do
  curl -fsS --cacert "$creds/ca.crt" "https://$listen/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat bin/summa-server.log; exit 1; }
  sleep 0.1
done
admin="$(cat "$creds/admin-token")"
read_token="$(cat "$creds/read-token")"
go run ./hack/sample-ingest -server "https://$listen" -token "$admin" -cacert "$creds/ca.crt"
cat <<MSG

summa-server is running (pid $pid), data in $data, log in bin/summa-server.log.
Access control is on: HTTPS with the CA $creds/ca.crt, and one bearer token
per scope in $creds (admin-token, write-token, read-token).
  admin token: $admin
  read token:  $read_token
Try:
  curl -s --cacert $creds/ca.crt -H "Authorization: Bearer $read_token" https://$listen/v1/indexes/opticks
  curl -s --cacert $creds/ca.crt -H "Authorization: Bearer $read_token" -XPOST https://$listen/v1/indexes/opticks/search -d '{"query":"+light +prism","limit":3}'
  curl -s --cacert $creds/ca.crt -H "Authorization: Bearer $admin" https://$listen/v1/admin/lifecycle
  curl -s --cacert $creds/ca.crt https://$listen/metrics | grep summa_
Ctrl-C drains and stops it.
MSG
wait $pid
