#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd) from the Go
# module proxy into bin/envtest/, for KUBEBUILDER_ASSETS.
#
# Prebuilt envtest binaries cannot be downloaded on this project's machines,
# but both programs build from published Go modules. The script writes a
# throwaway module in a temporary directory that requires k8s.io/kubernetes
# with every k8s.io/<staging> module replaced by the published v0.X.Y of the
# same release (the list is read from kubernetes' own go.mod, its
# "=> ./staging/..." lines), plus the etcd server version kubernetes pins, and
# builds:
#
#   k8s.io/kubernetes/cmd/kube-apiserver -> bin/envtest/kube-apiserver
#   go.etcd.io/etcd/server/v3            -> bin/envtest/etcd
#
# It is idempotent: when both binaries exist and bin/envtest/VERSION matches
# the requested versions, it does nothing. A cold build takes about 7
# minutes on 2 idle cores (17 CPU-minutes; it took 36 minutes on a busy
# shared machine); with a warm Go build cache, as in a fresh clone on the
# same machine, about 15 seconds.
#
# Environment:
#   KUBE_VERSION  kubernetes release to build (default v1.37.2; keep it in step
#                 with the k8s.io/* v0.X.Y libraries in go.mod)
#   ENVTEST_DIR   output directory (default <repo>/bin/envtest)
#   GO            go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
GO="${GO:-go}"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ENVTEST_DIR="${ENVTEST_DIR:-$root/bin/envtest}"

# v1.37.2 -> v0.37.2: the staging modules are published with major version 0.
staging_version="v0.${KUBE_VERSION#v1.}"

log() { printf 'envtest: %s\n' "$*" >&2; }

start=$(date +%s)

work="$(mktemp -d "${TMPDIR:-/tmp}/summa-envtest.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The etcd version is read from kubernetes' go.mod, which needs the module
# download (cached by Go); the version stamp is checked only after that, so
# that a stamp of another release is never trusted. The download runs in the
# empty temporary directory, outside any module.
kube_gomod="$(cd "$work" && GOWORK=off GOFLAGS=-buildvcs=false "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
	sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
if [ -z "$kube_gomod" ] || [ ! -f "$kube_gomod" ]; then
	log "cannot find go.mod of k8s.io/kubernetes@$KUBE_VERSION"
	exit 1
fi
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$kube_gomod")"
if [ -z "$etcd_version" ]; then
	log "k8s.io/kubernetes@$KUBE_VERSION does not pin go.etcd.io/etcd/server/v3"
	exit 1
fi

stamp="kube-apiserver $KUBE_VERSION etcd $etcd_version"
if [ -x "$ENVTEST_DIR/kube-apiserver" ] && [ -x "$ENVTEST_DIR/etcd" ] &&
	[ "$(cat "$ENVTEST_DIR/VERSION" 2>/dev/null)" = "$stamp" ]; then
	log "up to date in $ENVTEST_DIR ($stamp)"
	exit 0
fi

# The throwaway module: kubernetes itself, its staging modules pinned to the
# published releases, and the etcd server it pins.
{
	echo "module summa.dev/envtest-build"
	echo
	echo "go $("$GO" env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes $KUBE_VERSION"
	echo "	go.etcd.io/etcd/server/v3 $etcd_version"
	echo ")"
	echo
	echo "replace ("
	sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*$#\t\1 => \1 '"$staging_version"'#p' "$kube_gomod"
	echo ")"
} >"$work/go.mod"
replaced=$(grep -c '=> k8s.io/' "$work/go.mod" || true)
if [ "$replaced" -eq 0 ]; then
	log "no staging modules found in kubernetes' go.mod"
	exit 1
fi
log "building $stamp ($replaced staging modules at $staging_version) in $work"

ldflags="-s -w"
ldflags="$ldflags -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
ldflags="$ldflags -X k8s.io/component-base/version.gitMajor=1"
ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
ldflags="$ldflags -X k8s.io/component-base/version.gitTreeState=clean"

mkdir -p "$ENVTEST_DIR"
ENVTEST_DIR="$(cd "$ENVTEST_DIR" && pwd)" # the builds run in $work
rm -f "$ENVTEST_DIR/VERSION"
(
	cd "$work"
	export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
	t=$(date +%s)
	"$GO" build -trimpath -ldflags "$ldflags" -o "$ENVTEST_DIR/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
	mv "$ENVTEST_DIR/kube-apiserver.tmp" "$ENVTEST_DIR/kube-apiserver"
	log "kube-apiserver built in $(($(date +%s) - t))s"

	t=$(date +%s)
	"$GO" build -trimpath -ldflags "-s -w" -o "$ENVTEST_DIR/etcd.tmp" go.etcd.io/etcd/server/v3
	mv "$ENVTEST_DIR/etcd.tmp" "$ENVTEST_DIR/etcd"
	log "etcd built in $(($(date +%s) - t))s"
)
echo "$stamp" >"$ENVTEST_DIR/VERSION"

# Smoke test; sed reads all of etcd's output, so pipefail sees no SIGPIPE.
"$ENVTEST_DIR/kube-apiserver" --version >&2
"$ENVTEST_DIR/etcd" --version | sed -n 1p >&2
log "done in $(($(date +%s) - start))s: KUBEBUILDER_ASSETS=$ENVTEST_DIR"
