#!/usr/bin/env bash
# make e2e-kind: the same end-to-end specs on a kind cluster, for machines
# with Docker (only the bootstrap differs from make e2e). Creates the kind
# cluster $KIND_CLUSTER (default summa-e2e) when missing, builds the operator
# and engine images from the Dockerfile (make docker-build, IMG and
# ENGINE_IMG) and the test pause image (hack/imagebuild), loads them, and
# runs test/e2e with SUMMA_E2E=kind (the operator from config/default, its
# default engine image the one of the same build; engines reached through
# kubectl port-forward). Specs that read volume files from the host are
# skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
cluster="${KIND_CLUSTER:-summa-e2e}"
command -v kind >/dev/null || { echo "e2e-kind: kind is not installed" >&2; exit 1; }
kind get clusters 2>/dev/null | grep -qx "$cluster" || kind create cluster --name "$cluster"
img="$(make --no-print-directory -s print-IMG)"
engine_img="$(make --no-print-directory -s print-ENGINE_IMG)"
make --no-print-directory docker-build CONTAINER_TOOL=docker
kind load docker-image --name "$cluster" "$img" "$engine_img"
"$GO" run ./hack/imagebuild -out bin/images pause
kind load image-archive --name "$cluster" bin/images/pause.tar
make --no-print-directory build-installer helm
export SUMMA_E2E_IMG="$img" SUMMA_E2E_ENGINE_IMG="$engine_img"
export HELM="$(make --no-print-directory -s print-HELM)" SUMMA_E2E_INSTALL_YAML="$PWD/dist/install.yaml"
kubeconfig="$(mktemp)"
trap 'rm -f "$kubeconfig"' EXIT
kind get kubeconfig --name "$cluster" >"$kubeconfig"
KUBECONFIG="$kubeconfig" SUMMA_E2E=kind SUMMA_REQUIRE_E2E=1 "$GO" test -count=1 -timeout 45m ./test/e2e/
