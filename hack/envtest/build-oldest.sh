#!/usr/bin/env bash
# Builds the envtest control plane of the oldest supported Kubernetes
# (ENVTEST_OLDEST_K8S_VERSION) into bin/envtest-<version>/, for
# `make test-oldest-k8s`.
#
# Only kube-apiserver is compiled for that release (hack/cluster/build.sh
# with KUBE_BINARIES=kube-apiserver, into bin/cluster-<version>/, cached
# there). etcd and kube-controller-manager are hard-linked (or copied)
# from the current envtest (bin/envtest, `make envtest`) instead of being
# built a second time:
#
#   - etcd: kube-apiserver 1.29 talks to etcd through its v3 gRPC API
#     only, which the newer etcd server serves unchanged.
#   - kube-controller-manager: the suite runs only its garbage collector,
#     which works from discovery and metadata-only watches of the API
#     server; it stands in for the cluster's garbage collector, it is not
#     what the specs test.
#
# Idempotent: when the three binaries exist and bin/envtest-<version>/VERSION
# names this kube-apiserver and the current envtest's VERSION, it does
# nothing. The cold build of kube-apiserver alone: see docs/install.md
# (Supported Kubernetes versions); with a warm Go build cache, seconds.
#
# Environment:
#   KUBE_VERSION      kubernetes release of kube-apiserver (required)
#   ENVTEST_DIR       output directory (default <repo>/bin/envtest-<KUBE_VERSION>)
#   ENVTEST_SHARE_DIR the current envtest, whose etcd and
#                     kube-controller-manager are linked (default <repo>/bin/envtest)
#   CLUSTER_DIR       where kube-apiserver is built (default <repo>/bin/cluster-<KUBE_VERSION>)
#   GO                go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
: "${KUBE_VERSION:?KUBE_VERSION is required}"
ENVTEST_DIR="${ENVTEST_DIR:-$root/bin/envtest-$KUBE_VERSION}"
ENVTEST_SHARE_DIR="${ENVTEST_SHARE_DIR:-$root/bin/envtest}"
CLUSTER_DIR="${CLUSTER_DIR:-$root/bin/cluster-$KUBE_VERSION}"
start=$(date +%s)

log() { printf 'envtest-oldest: %s\n' "$*" >&2; }

for b in etcd kube-controller-manager; do
	[ -x "$ENVTEST_SHARE_DIR/$b" ] || {
		log "$ENVTEST_SHARE_DIR/$b is missing: run \`make envtest\` first"
		exit 1
	}
done
stamp="kube-apiserver $KUBE_VERSION; etcd and kube-controller-manager of: $(cat "$ENVTEST_SHARE_DIR/VERSION")"
if [ -x "$ENVTEST_DIR/kube-apiserver" ] && [ -x "$ENVTEST_DIR/etcd" ] && [ -x "$ENVTEST_DIR/kube-controller-manager" ] &&
	[ "$(cat "$ENVTEST_DIR/VERSION" 2>/dev/null)" = "$stamp" ]; then
	log "up to date in $ENVTEST_DIR ($stamp)"
	exit 0
fi

# ENVTEST_DIR emptied: hack/cluster/build.sh would link its own etcd there.
KUBE_VERSION="$KUBE_VERSION" KUBE_BINARIES=kube-apiserver KUBE_BUILD_TAGS=providerless CLUSTER_DIR="$CLUSTER_DIR" ENVTEST_DIR= GO="${GO:-go}" "$root/hack/cluster/build.sh"

mkdir -p "$ENVTEST_DIR"
rm -f "$ENVTEST_DIR/VERSION"
link() {
	rm -f "$2"
	ln "$1" "$2" 2>/dev/null || cp "$1" "$2"
}
link "$CLUSTER_DIR/kube-apiserver" "$ENVTEST_DIR/kube-apiserver"
for b in etcd kube-controller-manager; do
	# The real file behind a symbolic link: bin/envtest may be one.
	link "$(readlink -f "$ENVTEST_SHARE_DIR/$b")" "$ENVTEST_DIR/$b"
done
echo "$stamp" >"$ENVTEST_DIR/VERSION"

# Smoke test; sed reads all of etcd's output, so pipefail sees no SIGPIPE.
"$ENVTEST_DIR/kube-apiserver" --version >&2
"$ENVTEST_DIR/etcd" --version | sed -n 1p >&2
"$ENVTEST_DIR/kube-controller-manager" --version >&2
log "done in $(($(date +%s) - start))s: KUBEBUILDER_ASSETS=$ENVTEST_DIR ($stamp)"
