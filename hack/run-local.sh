#!/usr/bin/env bash
# Runs summa-server locally with no cluster: builds it, starts it on
# 127.0.0.1:8082 with its data under bin/data, loads a sample of real text
# through the HTTP API, and keeps serving until Ctrl-C (SIGTERM: drain and
# ordered shutdown).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
listen="${SUMMA_LISTEN:-127.0.0.1:8082}"
data="${SUMMA_DATA_DIR:-bin/data}"
mkdir -p bin "$data"
go build -o bin/summa-server ./cmd/summa-server
bin/summa-server --data-dir "$data" --listen "$listen" 2> bin/summa-server.log &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; echo "summa-server stopped (log: bin/summa-server.log)"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://$listen/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat bin/summa-server.log; exit 1; }
  sleep 0.1
done
go run ./hack/sample-ingest -server "http://$listen"
cat <<MSG

summa-server is running (pid $pid), data in $data, log in bin/summa-server.log. Try:
  curl -s http://$listen/v1/indexes/opticks
  curl -s -XPOST http://$listen/v1/indexes/opticks/search -d '{"query":"+light +prism","limit":3}'
  curl -s http://$listen/v1/admin/lifecycle
  curl -s http://$listen/metrics | grep summa_
Ctrl-C drains and stops it.
MSG
wait $pid
