#!/usr/bin/env bash
# Builds the Kubernetes binaries of the local cluster (and of envtest) from
# the Go module proxy into bin/cluster/.
#
# Prebuilt Kubernetes binaries cannot be downloaded on this project's
# machines, but every program builds from published Go modules. The script
# writes a throwaway module in a temporary directory that requires
# k8s.io/kubernetes with every k8s.io/<staging> module replaced by the
# published v0.X.Y of the same release (the list is read from kubernetes' own
# go.mod, its "=> ./staging/..." lines), plus the etcd server version
# kubernetes pins, and builds, in one `go build`:
#
#   k8s.io/kubernetes/cmd/<name> -> bin/cluster/<name>
#       for kube-apiserver kube-controller-manager kube-scheduler kubelet
#       kubectl kube-proxy
#   go.etcd.io/etcd/server/v3    -> bin/cluster/etcd
#
# and, in a second throwaway module, CoreDNS (github.com/coredns/coredns at
# COREDNS_VERSION) with only the plugins the local cluster's Corefile uses
# (a main of its own; CoreDNS' own main links every plugin, clouds included):
#
#   -> bin/cluster/coredns
#
# This is the one place that builds them: hack/envtest/build.sh asks it for
# kube-apiserver and etcd only and links them into bin/envtest, so a fresh
# machine compiles kube-apiserver once whichever target runs first.
#
# Idempotent, and one build at a time per CLUSTER_DIR (flock on
# CLUSTER_DIR/.lock): a binary is built only when it is missing or when
# bin/cluster/VERSION names another release (coredns: when its -version is
# not COREDNS_VERSION). A cold build of the first six takes about 7-10
# minutes on 2 idle cores, kube-proxy and coredns add a few more (see
# hack/cluster/README.md); with a warm Go build cache, seconds.
#
# Environment:
#   KUBE_VERSION   kubernetes release (default v1.37.2; keep it in step with
#                  the k8s.io/* v0.X.Y libraries in go.mod)
#   CLUSTER_DIR    output directory (default <repo>/bin/cluster)
#   KUBE_BINARIES  which binaries (default: all eight above)
#   COREDNS_VERSION  github.com/coredns/coredns version (default v1.15.0)
#   ENVTEST_DIR    when set, also hard-link (or copy) kube-apiserver, etcd and
#                  kube-controller-manager
#                  there and write its VERSION in envtest's format
#   KUBE_BUILD_TAGS  go build tags of the kubernetes binaries (default none;
#                  "providerless" leaves out the in-tree cloud providers of
#                  releases before 1.31, and their cloud SDKs)
#   GO             go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
GO="${GO:-go}"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
CLUSTER_DIR="${CLUSTER_DIR:-$root/bin/cluster}"
KUBE_BINARIES="${KUBE_BINARIES:-kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy etcd coredns}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
ENVTEST_DIR="${ENVTEST_DIR:-}"
KUBE_BUILD_TAGS="${KUBE_BUILD_TAGS:-}"

work=""         # the throwaway module, removed on exit
coredns_work="" # CoreDNS' throwaway module, removed on exit
trap 'rm -rf ${work:+"$work"} ${coredns_work:+"$coredns_work"}' EXIT

log() { printf 'kube-build: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# kube_gomod prints the path of kubernetes' go.mod in the module cache
# (downloading the module if needed, outside any module).
kube_gomod() {
	local dir
	dir="$(mktemp -d "${TMPDIR:-/tmp}/summa-kube-mod.XXXXXX")"
	(cd "$dir" && GOWORK=off GOFLAGS=-buildvcs=false "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION") |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
	rmdir "$dir"
}

# write_gomod GOMOD ETCD_VERSION prints the throwaway module's go.mod:
# kubernetes, its staging modules pinned to the published releases, and the
# etcd server it pins.
write_gomod() {
	local gomod="$1" etcd_version="$2"
	local staging_version="v0.${KUBE_VERSION#v1.}" # v1.37.2 -> v0.37.2
	echo "module summa.dev/kube-build"
	echo
	echo "go $("$GO" env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes $KUBE_VERSION"
	echo "	go.etcd.io/etcd/server/v3 $etcd_version"
	echo ")"
	echo
	echo "replace ("
	sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*$#\t\1 => \1 '"$staging_version"'#p' "$gomod"
	echo ")"
}

# missing prints the requested binaries that are not built yet.
missing() {
	local b
	for b in $KUBE_BINARIES; do
		if [ "$b" = coredns ]; then
			# Its own release: rebuilt when it is not COREDNS_VERSION. (No
			# pipe into grep -q: an early exit of grep fails the pipe.)
			local v
			v="$("$CLUSTER_DIR/coredns" -version 2>/dev/null || true)"
			[ "${v%%$'\n'*}" = "CoreDNS-${COREDNS_VERSION#v}" ] || echo "$b"
			continue
		fi
		[ -x "$CLUSTER_DIR/$b" ] || echo "$b"
	done
}

# build_coredns builds bin/cluster/coredns in a throwaway module of its own:
# a main that links CoreDNS' server with the plugins of the Corefile that
# hack/cluster/configs.sh writes, in CoreDNS' plugin order.
build_coredns() {
	local t
	coredns_work="$(mktemp -d "${TMPDIR:-/tmp}/summa-coredns-build.XXXXXX")"
	cat >"$coredns_work/go.mod" <<EOF
module summa.dev/coredns-build

go $("$GO" env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')

require github.com/coredns/coredns $COREDNS_VERSION
EOF
	cat >"$coredns_work/main.go" <<'EOF'
// Command coredns is CoreDNS with the plugins of the local cluster only.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order of CoreDNS' plugin.cfg, which is the order of the chain.
	dnsserver.Directives = []string{"bind", "ready", "errors", "cache", "kubernetes", "loop", "forward"}
}

func main() { coremain.Run() }
EOF
	t=$(date +%s)
	(
		cd "$coredns_work"
		export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
		"$GO" mod tidy
		"$GO" build -trimpath -ldflags "-s -w" -o coredns .
	)
	mv "$coredns_work/coredns" "$CLUSTER_DIR/coredns.tmp"
	mv "$CLUSTER_DIR/coredns.tmp" "$CLUSTER_DIR/coredns"
	log "coredns $COREDNS_VERSION built in $(($(date +%s) - t))s"
}

# build WORK BINARY... builds the binaries in the throwaway module WORK.
build() {
	local work="$1"
	shift
	local kube=() etcd="" coredns="" b
	for b in "$@"; do
		case "$b" in
		etcd) etcd=1 ;;
		kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kubectl | kube-proxy)
			kube+=("k8s.io/kubernetes/cmd/$b") ;;
		coredns) coredns=1 ;;
		*) die "unknown binary $b" ;;
		esac
	done
	local ldflags="-s -w"
	ldflags="$ldflags -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
	ldflags="$ldflags -X k8s.io/component-base/version.gitMajor=1"
	ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
	ldflags="$ldflags -X k8s.io/component-base/version.gitTreeState=clean"
	(
		cd "$work"
		export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
		mkdir -p out
		local t
		if [ ${#kube[@]} -gt 0 ]; then
			t=$(date +%s)
			# One go build for all of them: the links run in parallel.
			"$GO" build -trimpath -tags "$KUBE_BUILD_TAGS" -ldflags "$ldflags" -o out/ "${kube[@]}"
			log "${kube[*]##*/} built in $(($(date +%s) - t))s"
		fi
		if [ -n "$etcd" ]; then
			t=$(date +%s)
			"$GO" build -trimpath -ldflags "-s -w" -o out/etcd go.etcd.io/etcd/server/v3
			log "etcd built in $(($(date +%s) - t))s"
		fi
	)
	for b in "$@"; do
		[ "$b" != coredns ] || continue
		mv "$work/out/$b" "$CLUSTER_DIR/$b.tmp"
		mv "$CLUSTER_DIR/$b.tmp" "$CLUSTER_DIR/$b"
	done
	[ -z "$coredns" ] || build_coredns
}

# smoke BINARY... runs each binary's version command.
smoke() {
	local b out
	for b in "$@"; do
		case "$b" in
		kubectl) out="$("$CLUSTER_DIR/$b" version --client 2>&1 | sed -n 1p)" ;;
		coredns) out="$("$CLUSTER_DIR/$b" -version 2>&1 | sed -n 1p)" ;;
		*) out="$("$CLUSTER_DIR/$b" --version 2>&1 | sed -n 1p)" ;;
		esac
		log "$b: $out"
	done
}

# link_envtest places kube-apiserver, etcd and kube-controller-manager (the
# operator specs run its garbage collector) into ENVTEST_DIR with the stamp
# hack/envtest/build.sh checks.
link_envtest() {
	local stamp="$1" b
	mkdir -p "$ENVTEST_DIR"
	rm -f "$ENVTEST_DIR/VERSION"
	for b in kube-apiserver etcd kube-controller-manager; do
		rm -f "$ENVTEST_DIR/$b"
		ln "$CLUSTER_DIR/$b" "$ENVTEST_DIR/$b" 2>/dev/null || cp "$CLUSTER_DIR/$b" "$ENVTEST_DIR/$b"
	done
	echo "$stamp" >"$ENVTEST_DIR/VERSION"
	log "linked kube-apiserver, etcd and kube-controller-manager into $ENVTEST_DIR"
}

main() {
	local start gomod etcd_version stamp envtest_stamp
	start=$(date +%s)
	# The etcd version comes from kubernetes' go.mod (the module download is
	# cached by Go); the stamp is checked only after that, so that a stamp of
	# another release is never trusted.
	gomod="$(kube_gomod)"
	[ -f "$gomod" ] || die "cannot find go.mod of k8s.io/kubernetes@$KUBE_VERSION"
	etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$gomod")"
	[ -n "$etcd_version" ] || die "k8s.io/kubernetes@$KUBE_VERSION does not pin go.etcd.io/etcd/server/v3"
	stamp="kubernetes $KUBE_VERSION etcd $etcd_version"
	envtest_stamp="kube-apiserver $KUBE_VERSION etcd $etcd_version kube-controller-manager"
	if [ -n "$ENVTEST_DIR" ] && [ -x "$ENVTEST_DIR/kube-apiserver" ] && [ -x "$ENVTEST_DIR/etcd" ] && [ -x "$ENVTEST_DIR/kube-controller-manager" ] &&
		[ "$(cat "$ENVTEST_DIR/VERSION" 2>/dev/null)" = "$envtest_stamp" ]; then
		log "up to date in $ENVTEST_DIR ($envtest_stamp)"
		return 0
	fi

	mkdir -p "$CLUSTER_DIR"
	CLUSTER_DIR="$(cd "$CLUSTER_DIR" && pwd)" # the builds run in a temporary directory
	# One build at a time per directory: a second one (CI's background
	# build of the oldest kube-apiserver and make test's own) waits, then
	# finds the binaries built.
	exec 9>"$CLUSTER_DIR/.lock"
	flock 9
	if [ "$(cat "$CLUSTER_DIR/VERSION" 2>/dev/null)" != "$stamp" ]; then
		# Another release (or none): nothing in the directory can be trusted.
		rm -f "$CLUSTER_DIR/VERSION" "$CLUSTER_DIR"/kube-* "$CLUSTER_DIR/kubelet" "$CLUSTER_DIR/kubectl" "$CLUSTER_DIR/etcd"
	fi
	local todo
	todo="$(missing | tr '\n' ' ')"
	if [ -z "${todo// /}" ]; then
		log "up to date in $CLUSTER_DIR ($stamp: $KUBE_BINARIES)"
	else
		work="$(mktemp -d "${TMPDIR:-/tmp}/summa-kube-build.XXXXXX")"
		write_gomod "$gomod" "$etcd_version" >"$work/go.mod"
		grep -q '=> k8s.io/' "$work/go.mod" || die "no staging modules found in kubernetes' go.mod"
		log "building $todo($stamp) in $work"
		# shellcheck disable=SC2086 # a list of names
		build "$work" $todo
		echo "$stamp" >"$CLUSTER_DIR/VERSION"
		# shellcheck disable=SC2086
		smoke $todo
		log "done in $(($(date +%s) - start))s: $CLUSTER_DIR"
	fi
	if [ -n "$ENVTEST_DIR" ]; then
		link_envtest "$envtest_stamp"
	fi
}

main "$@"
