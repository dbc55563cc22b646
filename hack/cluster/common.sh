# shellcheck shell=bash
# shellcheck disable=SC2034 # the settings are used by the scripts that source this
# Shared settings and helpers of hack/cluster/{up,down}.sh (sourced).
#
# Everything the cluster writes lives under RUN_DIR, except what the
# components insist on putting at fixed host paths (see host.sh, which records
# and restores them).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
BIN_DIR="${CLUSTER_DIR:-$root/bin/cluster}"
RUN_DIR="${CLUSTER_RUN_DIR:-$BIN_DIR/run}"
IMAGES_DIR="$root/bin/images"

PKI="$RUN_DIR/pki"
PIDS="$RUN_DIR/pids"
LOGS="$RUN_DIR/logs"
HOST_RECORD="$RUN_DIR/host" # the host's state before the first daemon started
ETCD_DATA="$RUN_DIR/etcd"
CONTAINERD_DIR="$RUN_DIR/containerd"
CONTAINERD_SOCK="$CONTAINERD_DIR/containerd.sock"
CNI_DIR="$RUN_DIR/cni"
KUBELET_DIR="$RUN_DIR/kubelet"
POD_LOGS="$RUN_DIR/pod-logs"
ADMIN_KUBECONFIG="$RUN_DIR/admin.kubeconfig"

# Network. The kubelet refuses a loopback node IP and this kernel has no
# dummy module: the node IP is a /32 on an empty bridge.
NODE_NAME="$(hostname | tr '[:upper:]' '[:lower:]')"
NODE_BRIDGE="summa-node"
NODE_IP="10.250.0.1"
CNI_BRIDGE="summa-cni0"
POD_CIDR="10.244.0.0/24"
SERVICE_CIDR="10.96.0.0/16"
SERVICE_IP="10.96.0.1" # the kubernetes Service's ClusterIP, in the apiserver's cert
DNS_SERVICE_IP="10.96.0.10" # Service kube-system/kube-dns, the pods' nameserver
CLUSTER_DOMAIN="cluster.local"
# The apiserver listens on the node IP (not 127.0.0.1): the kubernetes
# Service's endpoint, reached from pods through kube-proxy's DNAT.
APISERVER_PORT=6443
# CoreDNS runs on the host, on the node IP; kube-dns' endpoint.
COREDNS_READY="127.0.0.1:8181"
KUBE_PROXY_HEALTHZ="127.0.0.1:10256"
KUBE_PROXY_METRICS="127.0.0.1:10249"
ETCD_CLIENT="http://127.0.0.1:2379"
ETCD_PEER="http://127.0.0.1:2380"
PAUSE_IMAGE="summa.dev/pause:1"

# The daemons in start order; down.sh stops them in reverse.
DAEMONS=(etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns)

log() { printf 'cluster: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# require_host checks that this can run here at all: Linux, as root.
require_host() {
	[ "$(uname -s)" = Linux ] || die "the local cluster runs on Linux only"
	[ "$(id -u)" -eq 0 ] || die "run it as root (it starts containerd and the kubelet)"
}

# kctl runs the cluster's kubectl as the admin.
kctl() { "$BIN_DIR/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# pid_of NAME prints the recorded PID of a daemon if that process still runs
# the recorded binary; nothing otherwise (never trusts a reused PID; a
# zombie has no binary).
pid_of() {
	local f="$PIDS/$1.pid" pid exe cur
	[ -f "$f" ] || return 0
	pid="$(cat "$f")"
	exe="$(cat "$PIDS/$1.exe" 2>/dev/null || true)"
	[ -n "$pid" ] && [ -n "$exe" ] && [ -d "/proc/$pid" ] || return 0
	cur="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
	# A binary rebuilt while the daemon runs reads "PATH (deleted)".
	[ "${cur% (deleted)}" = "$exe" ] || return 0
	echo "$pid"
}
