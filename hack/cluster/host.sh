# shellcheck shell=bash
# The host's state that the cluster changes outside RUN_DIR: recorded by
# up.sh before the first daemon starts, restored by down.sh (sourced by
# both). The machine is shared: only what the cluster made is removed.

# Sysctls the kubelet, the CNI bridge plugin, kube-proxy and up.sh set (or
# could: kube-proxy's conntrack settings are 0, "leave alone").
HOST_SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes
	net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.ipv4.conf.all.route_localnet
	net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
	net.netfilter.nf_conntrack_tcp_timeout_close_wait)

# Fixed paths the components create whatever their configuration says:
# containerd's shim sockets (/run/containerd/s), network namespaces
# (/run/netns), the CNI result cache (/var/lib/cni), the kubelet's
# container log links (/var/log/containers), the host-path provisioner's
# volumes (/tmp/hostpath_pv), and /var/lib/kubelet.
HOST_DIRS=(/run/containerd /run/netns /var/lib/cni /var/log/containers /var/log/pods /tmp/hostpath_pv /var/lib/kubelet)

# iptables_dump prints every table of iptables and ip6tables (stable order).
iptables_dump() {
	local t
	command -v iptables-save >/dev/null || return 0
	for t in filter nat mangle raw; do
		iptables-save -t "$t" 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' || true
		ip6tables-save -t "$t" 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//;s/^/v6 /' || true
	done
}

# host_snapshot DIR writes what down.sh compares: sysctls, links, iptables,
# nft, network namespaces, fixed paths, kubepods cgroups.
host_snapshot() {
	local dir="$1" s d
	mkdir -p "$dir"
	for s in "${HOST_SYSCTLS[@]}"; do
		sysctl -n "$s" >/dev/null 2>&1 && echo "$s=$(sysctl -n "$s")"
	done >"$dir/sysctl"
	ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort >"$dir/links"
	iptables_dump >"$dir/iptables"
	if command -v nft >/dev/null; then nft list ruleset >"$dir/nft" 2>&1 || true; fi
	find /run/netns -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort >"$dir/netns" || true
	for d in "${HOST_DIRS[@]}"; do
		[ -e "$d" ] && echo "$d"
	done >"$dir/dirs"
	ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null >"$dir/cgroups" || true
}

# record_host saves the host's state once: a second up, or an up after a
# failed one, keeps the first record, which down.sh deletes when done.
record_host() {
	if [ -f "$HOST_RECORD/complete" ]; then
		log "host state already recorded in $HOST_RECORD (kept)"
		return 0
	fi
	rm -rf "$HOST_RECORD"
	host_snapshot "$HOST_RECORD"
	touch "$HOST_RECORD/complete"
	log "host state recorded in $HOST_RECORD"
}

# recorded FILE LINE: was LINE in the record FILE?
recorded() { grep -qxF -- "$2" "$HOST_RECORD/$1" 2>/dev/null; }

# restore_sysctls sets every recorded sysctl back.
restore_sysctls() {
	local line
	[ -f "$HOST_RECORD/sysctl" ] || return 0
	while IFS= read -r line; do
		[ "$(sysctl -n "${line%%=*}")" = "${line#*=}" ] || sysctl -q -w "$line" >/dev/null
	done <"$HOST_RECORD/sysctl"
}

# remove_links deletes the cluster's bridges (the pods' veths went with
# their network namespaces).
remove_links() {
	local l
	for l in "$CNI_BRIDGE" "$NODE_BRIDGE"; do
		if ip link show "$l" >/dev/null 2>&1 && ! recorded links "$l"; then
			ip link delete "$l"
		fi
	done
}

# remove_iptables deletes the KUBE-* and CNI-* chains that were not there
# before, and the rules that jump to them.
remove_iptables() {
	local ipt t rule chain
	command -v iptables >/dev/null || return 0
	for ipt in iptables ip6tables; do
		for t in filter nat mangle raw; do
			local chains
			chains="$("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print $2 }')"
			for chain in $chains; do
				if [ "$ipt" = iptables ] && recorded iptables ":$chain - "; then continue; fi
				if [ "$ipt" = ip6tables ] && recorded iptables "v6 :$chain - "; then continue; fi
				# Rules elsewhere that jump to the chain, then the chain itself.
				while IFS= read -r rule; do
					# iptables -S quotes a comment with spaces: eval re-reads it.
					eval "\"\$ipt\" -t \"\$t\" ${rule/#-A /-D }" || true
				done < <("$ipt" -t "$t" -S 2>/dev/null | grep -E -- "-j $chain( |\$)" | grep -v -- "^-A $chain " || true)
				"$ipt" -t "$t" -F "$chain" 2>/dev/null || true
			done
			for chain in $chains; do
				if [ "$ipt" = iptables ] && recorded iptables ":$chain - "; then continue; fi
				if [ "$ipt" = ip6tables ] && recorded iptables "v6 :$chain - "; then continue; fi
				"$ipt" -t "$t" -X "$chain" 2>/dev/null || true
			done
		done
	done
}

# remove_netns unmounts and removes the network namespaces made since.
remove_netns() {
	local p
	for p in /run/netns/*; do
		[ -e "$p" ] || continue
		recorded netns "${p##*/}" && continue
		umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true
		rm -f "$p"
	done
}

# remove_cgroups kills what is left in the kubepods cgroups made since (all
# of it the cluster's containers) and removes them, innermost first.
remove_cgroups() {
	local tops=() top pid d i left
	for top in /sys/fs/cgroup/*/kubepods; do
		[ -d "$top" ] && ! recorded cgroups "$top" && tops+=("$top")
	done
	[ ${#tops[@]} -gt 0 ] || return 0
	for ((i = 0; i < 50; i++)); do
		left="$(find "${tops[@]}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)"
		[ -n "$left" ] || break
		for pid in $left; do
			kill -KILL "$pid" 2>/dev/null || true
		done
		sleep 0.1
	done
	for top in "${tops[@]}"; do
		find "$top" -depth -type d | while IFS= read -r d; do
			rmdir "$d" 2>/dev/null || true
		done
	done
}

# remove_host_dirs removes the fixed paths that did not exist before.
remove_host_dirs() {
	local d
	for d in "${HOST_DIRS[@]}"; do
		[ -e "$d" ] || continue
		recorded dirs "$d" && continue
		if findmnt -rno TARGET | grep -q "^$d\(/\|\$\)"; then
			log "warning: $d still has mounts, left in place"
			continue
		fi
		rm -rf "$d"
	done
}

# flush_conntrack deletes the connection-tracking entries of the cluster's
# addresses (pods, Services, the node IP), so that no NAT state of
# kube-proxy outlives it.
flush_conntrack() {
	local a
	command -v conntrack >/dev/null || return 0
	for a in "$POD_CIDR" "$SERVICE_CIDR" "$NODE_IP"; do
		conntrack -D -s "$a" >/dev/null 2>&1 || true
		conntrack -D -d "$a" >/dev/null 2>&1 || true
	done
}

# compare_host prints what differs from the record (nothing when restored).
compare_host() {
	local now f
	now="$(mktemp -d "${TMPDIR:-/tmp}/summa-host.XXXXXX")"
	host_snapshot "$now"
	for f in sysctl links iptables nft netns dirs cgroups; do
		[ -f "$HOST_RECORD/$f" ] || continue
		if ! diff -q "$HOST_RECORD/$f" "$now/$f" >/dev/null 2>&1; then
			log "warning: $f differs from before the cluster:"
			diff "$HOST_RECORD/$f" "$now/$f" >&2 || true
			echo differs >"$now/.differs"
		fi
	done
	local rc=0
	[ ! -f "$now/.differs" ] || rc=1
	rm -rf "$now"
	return $rc
}
