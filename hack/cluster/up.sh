#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Starts a real single-node Kubernetes on this machine: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd and a kubelet running
# real pods from locally built images (no registry). Linux, as root.
#
#   hack/cluster/up.sh        (make cluster-up)
#   export KUBECONFIG=bin/cluster/run/admin.kubeconfig
#   hack/cluster/down.sh      (make cluster-down: stops it, restores the host)
#
# The parts and the settings that made them work on this project's machine
# kind are in hack/cluster/README.md. In short:
#   - binaries built from the Go module proxy (hack/cluster/build.sh, cached);
#   - containerd, runc, CNI plugins, iptables from Debian (installed if missing);
#   - images summa-server:latest, summa-operator:latest and the pause image
#     built and imported by hack/imagebuild;
#   - every daemon in the background, PIDs in bin/cluster/run/pids, logs in
#     bin/cluster/run/logs, state under bin/cluster/run;
#   - the host's sysctls, links, iptables and fixed paths recorded first
#     (bin/cluster/run/host) for down.sh;
#   - pod IPs (10.244.0.0/24) answer from the host; the node IP is 10.250.0.1,
#     where the apiserver listens (the kubernetes Service's endpoint);
#   - kube-proxy (iptables mode) routes Service ClusterIPs; CoreDNS on the
#     host, behind Service kube-system/kube-dns (10.96.0.10), answers
#     cluster.local (hack/cluster/dns.yaml);
#   - a default StorageClass "standard" (host-path provisioner, /tmp/hostpath_pv).
#
# Idempotent: with the cluster running it says so and does nothing.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
source "$here/common.sh"
# shellcheck source=pki.sh
source "$here/pki.sh"
# shellcheck source=configs.sh
source "$here/configs.sh"
# shellcheck source=host.sh
source "$here/host.sh"

GO="${GO:-go}"
command -v "$GO" >/dev/null || GO=/usr/local/go/bin/go

# cluster_state prints running, stopped or partial (some daemons alive).
cluster_state() {
	local d alive=0
	for d in "${DAEMONS[@]}"; do
		[ -z "$(pid_of "$d")" ] || alive=$((alive + 1))
	done
	if [ "$alive" -eq "${#DAEMONS[@]}" ]; then
		echo running
	elif [ "$alive" -eq 0 ]; then
		echo stopped
	else
		echo partial
	fi
}

# install_packages installs from Debian what is missing: containerd, runc,
# the CNI plugins, iptables, conntrack (kube-proxy clears stale UDP entries
# with it) and openssl.
install_packages() {
	local need=()
	command -v containerd >/dev/null || need+=(containerd)
	command -v runc >/dev/null || need+=(runc)
	[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
		need+=(containernetworking-plugins)
	command -v iptables >/dev/null || need+=(iptables)
	command -v conntrack >/dev/null || need+=(conntrack)
	command -v openssl >/dev/null || need+=(openssl)
	[ ${#need[@]} -gt 0 ] || return 0
	command -v apt-get >/dev/null || die "missing ${need[*]}, and no apt-get to install them"
	log "installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# check_ports fails early when another program holds a port the cluster needs.
check_ports() {
	local p busy=""
	for p in 127.0.0.1:2379 127.0.0.1:2380 "$NODE_IP:$APISERVER_PORT" 127.0.0.1:10248 "*:10257" "*:10259" "*:10250" \
		"$COREDNS_READY" "$KUBE_PROXY_HEALTHZ" "$KUBE_PROXY_METRICS"; do
		if ss -Hltn "sport = :${p##*:}" | grep -q .; then busy="$busy ${p##*:}"; fi
	done
	[ -z "$busy" ] || die "ports in use by another program:$busy"
}

# build_parts builds the binaries (cached) and the image tarballs.
build_parts() {
	KUBE_VERSION="${KUBE_VERSION:-v1.37.2}" CLUSTER_DIR="$BIN_DIR" GO="$GO" "$here/build.sh"
	(cd "$root" && export GO && "$GO" run ./hack/imagebuild -out "$IMAGES_DIR")
}

# setup_network creates the node bridge holding the node IP (/32).
setup_network() {
	ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || ip link add "$NODE_BRIDGE" type bridge
	ip -4 addr show dev "$NODE_BRIDGE" | grep -q "inet $NODE_IP/32" ||
		ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
	ip link set "$NODE_BRIDGE" up
}

# start_daemon NAME BINARY ARG... starts a daemon in its own session, its
# output in $LOGS/NAME.log, its PID and binary in $PIDS.
start_daemon() {
	local name="$1" bin="$2"
	shift 2
	local pid i
	setsid "$bin" "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$PIDS/$name.pid"
	readlink -f "$bin" >"$PIDS/$name.exe"
	# Until setsid has exec'd the binary, pid_of would not recognise it.
	for ((i = 0; i < 50; i++)); do
		[ -z "$(pid_of "$name")" ] || return 0
		[ -d "/proc/$pid" ] || break
		sleep 0.1
	done
	[ -n "$(pid_of "$name")" ] || die "$name did not start (log: $LOGS/$name.log)"
}

# wait_daemon NAME SECONDS COMMAND... waits until COMMAND succeeds; fails
# with the log's tail as soon as the daemon exits.
wait_daemon() {
	local name="$1" secs="$2" i
	shift 2
	for ((i = 0; i < secs * 10; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		if [ -z "$(pid_of "$name")" ]; then
			tail -n 20 "$LOGS/$name.log" >&2 || true
			die "$name exited (log: $LOGS/$name.log)"
		fi
		sleep 0.1
	done
	tail -n 20 "$LOGS/$name.log" >&2 || true
	die "$name not ready after ${secs}s (log: $LOGS/$name.log)"
}

start_etcd() {
	start_daemon etcd "$BIN_DIR/etcd" --name=summa --data-dir="$ETCD_DATA" \
		--listen-client-urls="$ETCD_CLIENT" --advertise-client-urls="$ETCD_CLIENT" \
		--listen-peer-urls="$ETCD_PEER" --initial-advertise-peer-urls="$ETCD_PEER" \
		--initial-cluster="summa=$ETCD_PEER" --unsafe-no-fsync=true --log-level=warn
}

start_containerd() {
	start_daemon containerd "$(command -v containerd)" --config "$CONTAINERD_DIR/config.toml"
}

start_apiserver() {
	start_daemon kube-apiserver "$BIN_DIR/kube-apiserver" \
		--etcd-servers="$ETCD_CLIENT" \
		--bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port="$APISERVER_PORT" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--client-ca-file="$PKI/ca.crt" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--kubelet-preferred-address-types=InternalIP \
		--allow-privileged=true --profiling=false --v=1
}

start_controller_manager() {
	local kc="$RUN_DIR/controller-manager.kubeconfig"
	start_daemon kube-controller-manager "$BIN_DIR/kube-controller-manager" \
		--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --leader-elect=false \
		--use-service-account-credentials=true \
		--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
		--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--enable-hostpath-provisioner=true --controllers='*' \
		--service-cluster-ip-range="$SERVICE_CIDR" --cluster-name=summa-local \
		--profiling=false --v=1
}

start_scheduler() {
	local kc="$RUN_DIR/scheduler.kubeconfig"
	start_daemon kube-scheduler "$BIN_DIR/kube-scheduler" \
		--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --leader-elect=false --profiling=false --v=1
}

start_kubelet() {
	start_daemon kubelet "$BIN_DIR/kubelet" \
		--config="$RUN_DIR/kubelet.yaml" --kubeconfig="$RUN_DIR/kubelet.kubeconfig" \
		--root-dir="$KUBELET_DIR" --cert-dir="$KUBELET_DIR/pki" \
		--node-ip="$NODE_IP" --hostname-override="$NODE_NAME" --v=1
}

# start_kube_proxy starts kube-proxy in iptables mode (configs.sh); it
# needs the node object, so it starts once the node is registered.
start_kube_proxy() {
	start_daemon kube-proxy "$BIN_DIR/kube-proxy" --config="$RUN_DIR/kube-proxy.yaml" --v=1
}

# start_coredns starts CoreDNS on the node IP with the Corefile of configs.sh.
start_coredns() {
	start_daemon coredns "$BIN_DIR/coredns" -conf "$RUN_DIR/Corefile"
}

# Readiness probes.
etcd_ready() { curl -fsS "$ETCD_CLIENT/health"; }
containerd_ready() { ctr --address "$CONTAINERD_SOCK" version; }
apiserver_ready() {
	curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$APISERVER_PORT/readyz"
}
https_healthz() { curl -fsSk "https://127.0.0.1:$1/healthz"; }
node_ready() {
	[ "$(kctl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
default_sa() { kctl -n default get serviceaccount default; }
kube_proxy_ready() { curl -fsS "http://$KUBE_PROXY_HEALTHZ/healthz"; }
coredns_ready() { curl -fsS "http://$COREDNS_READY/ready"; }
# The apiserver writes the kubernetes Service's endpoint (its lease
# reconciler, now that it advertises a non-loopback address).
kubernetes_endpoints() {
	kctl -n default get endpointslices -l kubernetes.io/service-name=kubernetes \
		-o jsonpath='{.items[*].endpoints[*].addresses[*]}' | grep -qF "$NODE_IP"
}

# bridge_netfilter makes bridged traffic go through iptables, so that a
# reply from a Service's backend to a client on the same bridge is
# un-DNATed (kube-proxy's requirement; down.sh restores the recorded value).
bridge_netfilter() {
	[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
		die "no /proc/sys/net/bridge (br_netfilter): kube-proxy cannot see bridged Service replies"
	sysctl -q -w net.bridge.bridge-nf-call-iptables=1 >/dev/null
}

# import_images imports the image tarballs into containerd's k8s.io namespace.
import_images() {
	local t
	for t in "$IMAGES_DIR"/*.tar; do
		ctr --address "$CONTAINERD_SOCK" --namespace k8s.io images import "$t" >/dev/null
	done
	log "images imported: $(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"
}

# elapsed prints the seconds since up started (one decimal).
elapsed() {
	local ms=$(($(date +%s%3N) - start))
	echo "$((ms / 1000)).$((ms % 1000 / 100))s"
}

# on_exit explains what to do when up failed half-way.
on_exit() {
	local rc=$?
	[ "$rc" -eq 0 ] || log "up failed; logs in $LOGS; 'make cluster-down' (hack/cluster/down.sh) stops what started"
}

start=$(date +%s%3N)

main() {
	local state
	require_host
	state="$(cluster_state)"
	if [ "$state" = running ]; then
		log "already running (nothing done); stop it with make cluster-down"
		echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
		return 0
	fi
	[ "$state" = stopped ] || die "the cluster is partly running; run make cluster-down (hack/cluster/down.sh) first"
	trap on_exit EXIT

	install_packages
	command -v ss >/dev/null || die "ss (iproute2) is missing"
	check_ports
	build_parts
	log "binaries and images ready at $(elapsed)"
	mkdir -p "$PIDS" "$LOGS"
	record_host

	setup_network
	make_pki
	make_kubeconfigs
	write_containerd_config
	write_cni_config
	write_kubelet_config
	write_kube_proxy_config
	write_corefile
	bridge_netfilter

	start_etcd
	start_containerd
	wait_daemon etcd 30 etcd_ready
	start_apiserver
	wait_daemon containerd 30 containerd_ready
	import_images
	wait_daemon kube-apiserver 60 apiserver_ready
	log "etcd, containerd and kube-apiserver ready at $(elapsed)"
	# kube-system appears just after readyz: retried.
	wait_daemon kube-apiserver 30 kctl apply -f "$here/dns.yaml"
	start_controller_manager
	start_scheduler
	start_kubelet
	wait_daemon kube-controller-manager 60 https_healthz 10257
	wait_daemon kube-scheduler 60 https_healthz 10259
	start_coredns
	wait_daemon kubelet 120 node_ready
	start_kube_proxy
	wait_daemon kube-controller-manager 60 default_sa
	kctl apply -f "$here/storageclass.yaml" >/dev/null
	wait_daemon kube-apiserver 60 kubernetes_endpoints
	wait_daemon kube-proxy 60 kube_proxy_ready
	wait_daemon coredns 60 coredns_ready

	log "node $NODE_NAME Ready; up in $(elapsed)"
	echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
}

main "$@"
