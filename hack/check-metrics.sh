#!/usr/bin/env bash
# Lints Summa's metrics with `promtool check metrics` (make check-monitoring):
#  1. the live /metrics of a real summa-server (the binary given as $1):
#     started on a free loopback port with a temporary data directory, an
#     index created, documents ingested and committed, /metrics scraped;
#  2. the operator's metrics registry (controller-runtime's and
#     controllers/metrics.go's, one index's gauges set), written by
#     TestOperatorMetricsExposition.
# Fails when promtool reports a problem in a metric of ours. Lint findings
# about client_golang's own go_*/process_* metrics, and controller-runtime's
# (not ours to rename), are printed but do not fail it.
set -euo pipefail
cd "$(dirname "$0")/.."
server="${1:-bin/summa-server}"
PROMTOOL="${PROMTOOL:-promtool}"
GO="${GO:-go}"
tmp="$(mktemp -d)"
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# lint NAME FILE: promtool check metrics; fail on findings about our metrics.
lint() {
	local name="$1" file="$2" out
	out="$("$PROMTOOL" check metrics < "$file" 2>&1)" || true
	if [ -z "$out" ]; then
		echo "promtool check metrics ($name): no findings"
		return 0
	fi
	echo "promtool check metrics ($name):"
	echo "$out" | sed 's/^/  /'
	local ours
	ours="$(echo "$out" | grep -Ev '^(go_|process_|controller_runtime_|workqueue_|rest_client_|certwatcher_|leader_election_)' || true)"
	if [ -n "$ours" ]; then
		echo "promtool reports problems in Summa's own metrics ($name):"
		echo "$ours"
		return 1
	fi
}

# 1. A real summa-server.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
"$server" --data-dir "$tmp/data" --listen "127.0.0.1:$port" 2> "$tmp/server.log" &
pid=$!
for _ in $(seq 1 100); do
	curl -fsS "$base/readyz" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/server.log"; exit 1; }
	sleep 0.1
done
curl -fsS -X PUT "$base/v1/indexes/metrics" -H 'Content-Type: application/json' \
	-d '{"fields":[{"name":"id","type":"text","primary":true},{"name":"body","type":"text"}]}' >/dev/null
printf '%s\n' '{"id":"1","body":"light through a prism"}' '{"id":"2","body":"colours of thin plates"}' |
	curl -fsS -X POST "$base/v1/indexes/metrics/documents" -H 'Content-Type: application/x-ndjson' --data-binary @- >/dev/null
curl -fsS -X POST "$base/v1/indexes/metrics/commit" >/dev/null
curl -fsS -X POST "$base/v1/indexes/metrics/search" -d '{"query":"light"}' >/dev/null
curl -fsS "$base/metrics" > "$tmp/engine.prom"
grep -q '^summa_commit_duration_seconds_count{index="metrics"} 1' "$tmp/engine.prom" ||
	{ echo "the engine's /metrics lacks the commit"; exit 1; }
lint "summa-server /metrics" "$tmp/engine.prom"

# 2. The operator's registry.
SUMMA_METRICS_OUT="$tmp/operator.prom" "$GO" test -count=1 -run '^TestOperatorMetricsExposition$' ./controllers/ >/dev/null
lint "operator" "$tmp/operator.prom"
