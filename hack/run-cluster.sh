#!/usr/bin/env bash
# make run: the whole product on this machine, with no cluster to start
# from. Brings up the local single-node Kubernetes (hack/cluster: built from
# the Go module proxy and Debian packages on first use, cached after),
# builds and imports the engine and operator images, deploys the operator
# in-cluster from config/local (its RBAC is the real one), applies a
# SummaIndex, ingests Newton's Opticks through the engine's HTTP API and
# prints where everything is. `make down` stops the cluster and restores
# the host.
#
# Without root on Linux the local cluster cannot run: summa-server is then
# started alone (hack/run-local.sh, also `make run-local`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if [ "$(uname -s)" != Linux ] || [ "$(id -u)" != 0 ]; then
	echo "make run: the local cluster needs root on Linux; starting summa-server alone instead (make run-local)" >&2
	exec hack/run-local.sh
fi

start=$(date +%s)
make --no-print-directory cluster-up
make --no-print-directory images
export KUBECONFIG="$PWD/bin/cluster/run/admin.kubeconfig"
kubectl=bin/cluster/kubectl

echo "run: deploying the operator from config/local"
"$kubectl" apply --server-side --force-conflicts -k config/local >/dev/null
"$kubectl" -n summa-system rollout status deployment/summa-operator --timeout=300s

echo "run: applying the SummaIndex opticks"
"$kubectl" apply -f hack/run-cluster-opticks.yaml
"$kubectl" wait --for=condition=Ready summaindex/opticks --timeout=300s
# The host reaches Service ClusterIPs too (kube-proxy).
ip="$("$kubectl" get service opticks -o jsonpath='{.spec.clusterIP}')"

# Access control is on by default: the operator made Secret
# opticks-credentials (a token per scope) and the CA in Secret opticks-tls;
# the engine's certificate names its Service, which is verified here.
creds="$PWD/bin/run-credentials"
mkdir -p "$creds"
chmod 700 "$creds"
for k in admin-token write-token read-token; do
	"$kubectl" get secret opticks-credentials -o jsonpath="{.data.$k}" | base64 -d >"$creds/$k"
done
"$kubectl" get secret opticks-tls -o jsonpath='{.data.ca\.crt}' | base64 -d >"$creds/ca.crt"
admin="$(cat "$creds/admin-token")"
read_token="$(cat "$creds/read-token")"
svc=opticks.default.svc
curl_tls="--cacert $creds/ca.crt --resolve $svc:8082:127.0.0.1"

echo "run: ingesting Opticks through the engine API at https://$svc:8082 (Service ClusterIP $ip)"
go run ./hack/sample-ingest -server "https://$ip:8082" -server-name "$svc" -cacert "$creds/ca.crt" \
	-token "$admin" -index opticks
# The operator refreshes status from the engine every --resync-period.
for _ in $(seq 1 60); do
	[ -n "$("$kubectl" get summaindex opticks -o jsonpath='{.status.documents}')" ] && break
	sleep 1
done
"$kubectl" get summaindex opticks -o wide

cat <<MSG

The local cluster runs (ready in $(($(date +%s) - start))s). Try:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$PWD/bin/cluster:\$PATH
  kubectl get summaindex                       # phase, documents, segments, ready
  kubectl describe summaindex opticks          # conditions, grace, events
  kubectl -n summa-system logs deploy/summa-operator
  kubectl port-forward service/opticks 8082:8082 &   # then, from this host:
  curl -s $curl_tls -H "Authorization: Bearer $read_token" https://$svc:8082/v1/indexes/opticks
  curl -s $curl_tls -H "Authorization: Bearer $read_token" -XPOST https://$svc:8082/v1/indexes/opticks/search -d '{"query":"+light +prism","limit":3}'
The engine speaks HTTPS with a certificate for its Service, from the CA in
Secret opticks-tls (saved to $creds/ca.crt), and wants a bearer token from
Secret opticks-credentials (saved to $creds; admin: $admin).
  kubectl patch summaindex opticks --type merge -p '{"spec":{"engine":{"indexingWorkers":1}}}'   # drained restart
Pods reach each other by Service name (CoreDNS, kube-proxy); from this host,
kubectl port-forward as above, or the ClusterIP $ip with --resolve $svc:8082:$ip.
Stop it and restore the host with: make down
MSG
