#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd, and the
# kube-controller-manager whose garbage collector the operator specs run) from
# the Go module proxy into bin/envtest/, for KUBEBUILDER_ASSETS.
#
# Prebuilt envtest binaries cannot be downloaded on this project's machines,
# but both programs build from published Go modules. The build itself is
# hack/cluster/build.sh (one throwaway module for every Kubernetes binary of
# the project): this script asks it for kube-apiserver and etcd only, into
# bin/cluster/, and hard-links (or copies) them here. A later
# `make cluster-build` adds the other binaries without compiling
# kube-apiserver again, and an existing cluster build is reused as it is.
#
# It is idempotent: when both binaries exist and bin/envtest/VERSION matches
# the requested versions ("kube-apiserver vX etcd vY"), it does nothing. A
# cold build takes about 7 minutes on 2 idle cores (17 CPU-minutes; it took
# 36 minutes on a busy shared machine); with a warm Go build cache, as in a
# fresh clone on the same machine, about 15 seconds.
#
# Environment:
#   KUBE_VERSION  kubernetes release to build (default v1.37.2; keep it in step
#                 with the k8s.io/* v0.X.Y libraries in go.mod)
#   ENVTEST_DIR   output directory (default <repo>/bin/envtest)
#   CLUSTER_DIR   where the binaries are built (default <repo>/bin/cluster)
#   GO            go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
ENVTEST_DIR="${ENVTEST_DIR:-$root/bin/envtest}"
start=$(date +%s)

KUBE_BINARIES="kube-apiserver etcd kube-controller-manager" ENVTEST_DIR="$ENVTEST_DIR" "$root/hack/cluster/build.sh"

# Smoke test; sed reads all of etcd's output, so pipefail sees no SIGPIPE.
"$ENVTEST_DIR/kube-apiserver" --version >&2
"$ENVTEST_DIR/etcd" --version | sed -n 1p >&2
"$ENVTEST_DIR/kube-controller-manager" --version >&2
printf 'envtest: done in %ss: KUBEBUILDER_ASSETS=%s\n' "$(($(date +%s) - start))" "$ENVTEST_DIR" >&2
