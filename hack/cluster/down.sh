#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Stops the local cluster of hack/cluster/up.sh and restores the host.
#
#   hack/cluster/down.sh      (make cluster-down)
#
# No draining: the kubelet stops first, then every container is killed, then
# the control plane and containerd. Each daemon is stopped by its recorded
# PID (TERM, then KILL after a bound), never by name; containerd's shims by
# the PIDs in its private state. Then: the mounts under bin/cluster/run are
# unmounted, the network namespaces, bridges, KUBE-*/CNI-* iptables chains
# (kube-proxy's included), the conntrack entries of the cluster's addresses
# and kubepods cgroups made since up are removed, the recorded sysctls and
# the fixed host paths are restored, and the cluster's state (etcd,
# containerd, kubelet) is deleted; bin/cluster/run keeps the PKI, the admin
# kubeconfig and the logs. At the end the host is compared with the record
# taken before up. Idempotent.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
source "$here/common.sh"
# shellcheck source=host.sh
source "$here/host.sh"

STOP_TIMEOUT="${STOP_TIMEOUT:-10}" # seconds between TERM and KILL

# stop_daemons NAME... sends TERM to the daemons, waits for them all, KILLs
# those still alive after STOP_TIMEOUT.
stop_daemons() {
	local name pid i alive
	for name in "$@"; do
		pid="$(pid_of "$name")"
		[ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
	done
	for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
		alive=""
		for name in "$@"; do
			[ -z "$(pid_of "$name")" ] || alive="$alive $name"
		done
		[ -n "$alive" ] || break
		sleep 0.1
	done
	for name in "$@"; do
		pid="$(pid_of "$name")"
		if [ -n "$pid" ]; then
			log "$name ($pid) ignored TERM for ${STOP_TIMEOUT}s: KILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$PIDS/$name.pid" "$PIDS/$name.exe"
	done
}

# kill_tasks kills and deletes every container task through containerd while
# it runs; each shim exits when its last task is deleted.
kill_tasks() {
	local c=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io) id
	[ -n "$(pid_of containerd)" ] || return 0
	for id in $("${c[@]}" tasks ls -q 2>/dev/null); do
		"${c[@]}" tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true
	done
	for id in $("${c[@]}" tasks ls -q 2>/dev/null); do
		"${c[@]}" tasks delete --force "$id" >/dev/null 2>&1 || true
	done
}

# kill_shims KILLs the shims still alive after containerd stopped: their PIDs
# are in containerd's private state, and their command line names our socket.
kill_shims() {
	local f pid
	[ -d "$CONTAINERD_DIR/state" ] || return 0
	while IFS= read -r f; do
		pid="$(cat "$f" 2>/dev/null || true)"
		if [ -z "$pid" ] || [ ! -r "/proc/$pid/cmdline" ]; then continue; fi
		if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$CONTAINERD_SOCK"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done < <(find "$CONTAINERD_DIR/state" -name shim.pid 2>/dev/null)
}

# mounts_under DIR prints the mount points at or under DIR, deepest first.
mounts_under() {
	findmnt -rn -o TARGET | grep -E "^$1(/|\$)" | sort -r || true
}

# unmount_under DIR unmounts everything at or under DIR (stacked mounts too).
unmount_under() {
	local m i
	for ((i = 0; i < 5; i++)); do
		[ -n "$(mounts_under "$1")" ] || return 0
		for m in $(mounts_under "$1"); do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	done
	[ -z "$(mounts_under "$1")" ] || log "warning: mounts left under $1: $(mounts_under "$1" | tr '\n' ' ')"
}

# unmount_all unmounts the cluster's mounts: its private directories, and
# the fixed paths that did not exist before up.
unmount_all() {
	local d
	unmount_under "$RUN_DIR"
	for d in /var/lib/kubelet /run/containerd; do
		[ -e "$d" ] && ! recorded dirs "$d" && unmount_under "$d"
	done
	return 0
}

# remove_log_links removes the kubelet's links in /var/log/containers that
# point into our pod logs (when that directory existed before up).
remove_log_links() {
	local l
	[ -d /var/log/containers ] || return 0
	for l in /var/log/containers/*; do
		[ -L "$l" ] || continue
		case "$(readlink "$l")" in "$POD_LOGS"/*) rm -f "$l" ;; esac
	done
}

# remove_state deletes the cluster's state, never across a mount.
remove_state() {
	if [ -n "$(mounts_under "$RUN_DIR")" ]; then
		log "warning: mounts remain under $RUN_DIR; state kept"
		return 0
	fi
	rm -rf --one-file-system "$ETCD_DATA" "$CONTAINERD_DIR" "$CNI_DIR" "$KUBELET_DIR" "$POD_LOGS" "$PIDS" \
		"$RUN_DIR/kubelet.yaml" "$RUN_DIR/kube-proxy.yaml" "$RUN_DIR/Corefile"
}

main() {
	local start
	start=$(date +%s%3N)
	require_host
	if [ ! -d "$PIDS" ] && [ ! -d "$HOST_RECORD" ] && [ -z "$(mounts_under "$RUN_DIR")" ]; then
		log "not running: nothing to do"
		return 0
	fi
	stop_daemons kubelet
	kill_tasks
	stop_daemons coredns kube-proxy kube-scheduler kube-controller-manager kube-apiserver
	stop_daemons etcd
	stop_daemons containerd
	kill_shims
	if [ -f "$HOST_RECORD/complete" ]; then
		remove_cgroups
		unmount_all
		remove_netns
		remove_links
		remove_iptables
		flush_conntrack
		restore_sysctls
		remove_log_links
		remove_host_dirs
	else
		unmount_all
	fi
	remove_state
	local ms=$(($(date +%s%3N) - start))
	if [ ! -f "$HOST_RECORD/complete" ]; then
		log "stopped in $((ms / 1000)).$((ms % 1000 / 100))s (no host record to compare with)"
	elif compare_host; then
		rm -rf "$HOST_RECORD"
		log "stopped and host restored in $((ms / 1000)).$((ms % 1000 / 100))s"
	else
		log "stopped in $((ms / 1000)).$((ms % 1000 / 100))s; the host differs as above (record kept in $HOST_RECORD)"
	fi
}

main "$@"
