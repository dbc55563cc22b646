#!/usr/bin/env bash
# make e2e: the end-to-end specs (test/e2e) on the local cluster. Brings the
# cluster up when it is not running, builds and imports the current images
# (hack/imagebuild's for the lifecycle specs; the Dockerfile's, built with
# buildah, for the installation specs, with dist/install.yaml and helm),
# runs the specs (which deploy the operator from config/local), prints the
# measured figures, and stops the cluster again if it started it, so that a
# cluster of `make run` is left alone and CI leaves the host as it found it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
GO="${GO:-go}"
CLUSTER_DIR="${CLUSTER_DIR:-$PWD/bin/cluster}"

if [ "$(uname -s)" != Linux ] || [ "$(id -u)" != 0 ]; then
	echo "e2e: the local cluster needs root on Linux" >&2
	exit 1
fi

# Was a cluster already running? (Any recorded daemon still alive.)
was_running=0
for f in "$CLUSTER_DIR"/run/pids/*.pid; do
	[ -f "$f" ] && [ -d "/proc/$(cat "$f")" ] && was_running=1
done

stop() {
	local rc=$?
	if [ "$was_running" = 0 ]; then
		make --no-print-directory cluster-down || rc=1
	fi
	exit "$rc"
}
trap stop EXIT

make --no-print-directory cluster-up
make --no-print-directory images
# A second operator image of another version, for the upgrade spec.
"$GO" run ./hack/imagebuild -out bin/images/next -containerd "$CLUSTER_DIR/run/containerd/containerd.sock" \
	-tag e2e-next -version v-e2e-next summa-operator
export SUMMA_E2E_NEXT_OPERATOR_IMG=summa-operator:e2e-next
# The in-cluster network probe of the cluster networking spec (also the
# search load of the read followers spec: netprobe -load).
"$GO" run ./hack/imagebuild -out bin/images/e2e -containerd "$CLUSTER_DIR/run/containerd/containerd.sock" netprobe
export SUMMA_E2E_NETPROBE_IMG=summa.dev/netprobe:1
# The release's images from the Dockerfile (imported: the cluster runs), the
# installer and helm, for the installation specs.
t=$(date +%s)
make --no-print-directory docker-build-local
docker_build_s=$(($(date +%s) - t))
make --no-print-directory build-installer helm
export SUMMA_E2E_IMG="$(make --no-print-directory -s print-IMG)"
export SUMMA_E2E_ENGINE_IMG="$(make --no-print-directory -s print-ENGINE_IMG)"
export HELM="$(make --no-print-directory -s print-HELM)"
export SUMMA_E2E_INSTALL_YAML="$PWD/dist/install.yaml"
export KUBECONFIG="$CLUSTER_DIR/run/admin.kubeconfig"
# A running operator keeps the image it started with: restart it on the
# freshly imported one (the specs apply config/local again).
if "$CLUSTER_DIR/kubectl" -n summa-system get deployment summa-operator >/dev/null 2>&1; then
	"$CLUSTER_DIR/kubectl" -n summa-system rollout restart deployment/summa-operator >/dev/null
fi
figures="$PWD/bin/e2e-figures.txt"
rm -f "$figures"
echo "Dockerfile images (make docker-build-local): ${docker_build_s}s; $(du -h bin/images/dockerfile/summa-server.tar | cut -f1) engine, $(du -h bin/images/dockerfile/summa-operator.tar | cut -f1) operator (tarballs)" >"$figures"
SUMMA_E2E=local SUMMA_REQUIRE_E2E=1 SUMMA_E2E_FIGURES="$figures" \
	"$GO" test -count=1 -timeout 45m ./test/e2e/
echo "e2e figures:"
sed 's/^/  /' "$figures" 2>/dev/null || true
