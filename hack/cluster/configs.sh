# shellcheck shell=bash
# Configuration files of containerd, CNI and the kubelet (sourced by up.sh).
# The settings marked "blocker" are the ones without which nothing ran on
# this project's machine kind (see hack/cluster/README.md).

# write_containerd_config: config version 2, every path private.
write_containerd_config() {
	mkdir -p "$CONTAINERD_DIR"
	cat >"$CONTAINERD_DIR/config.toml" <<EOF
version = 2
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CONTAINERD_SOCK"

[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_DIR/opt"

# Unused (pods run on the v2 shim), but the task service needs it loaded;
# its runc state would default to /run/containerd/runc.
[plugins."io.containerd.runtime.v1.linux"]
  runtime_root = "$CONTAINERD_DIR/runc-v1"

[plugins."io.containerd.grpc.v1.cri"]
  # The local pause image (hack/imagebuild): there is no registry to pull from.
  sandbox_image = "$PAUSE_IMAGE"
  # Blocker: root here may not lower oom_score_adj; without this every
  # sandbox fails with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  # Pod network namespaces under the private state, not /run/netns.
  netns_mounts_under_state_dir = true
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # The kubelet uses cgroupfs (no systemd here).
        SystemdCgroup = false
        # runc's state, private (default /run/containerd/runc).
        Root = "$CONTAINERD_DIR/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    # Debian's containernetworking-plugins; containerd adds lo itself with
    # the loopback plugin from the same directory.
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_DIR/net.d"
    max_conf_num = 1
EOF
}

# write_cni_config: one bridge, the host its gateway (pod IPs answer from the
# host); no masquerade, nothing here needs the outside.
write_cni_config() {
	mkdir -p "$CNI_DIR/net.d" "$CNI_DIR/ipam"
	cat >"$CNI_DIR/net.d/10-summa.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "summa",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$CNI_DIR/ipam"
      }
    }
  ]
}
EOF
}

# write_kubelet_config: x509 plus webhook authn/authz, cgroupfs, and
# thresholds that never evict pods or collect images on a shared disk.
write_kubelet_config() {
	mkdir -p "$KUBELET_DIR" "$POD_LOGS"
	cat >"$RUN_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Blocker: this machine kind has cgroup v1 (hybrid).
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
podLogsDir: $POD_LOGS
resolvConf: /etc/resolv.conf
# CoreDNS (a host process) behind Service kube-system/kube-dns.
clusterDomain: $CLUSTER_DOMAIN
clusterDNS:
- $DNS_SERVICE_IP
# The disk is shared with other work: evict or collect only when it is full.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
# Sysctls the kubelet sets are recorded before and restored by down.sh.
protectKernelDefaults: false
EOF
}

# write_kube_proxy_config: iptables mode; it leaves the host's conntrack
# sysctls alone (0 = keep), keeps NodePorts off 127.0.0.1 (no
# route_localnet) and on the node IP only.
write_kube_proxy_config() {
	cat >"$RUN_DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $RUN_DIR/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
detectLocalMode: ClusterCIDR
healthzBindAddress: $KUBE_PROXY_HEALTHZ
metricsBindAddress: $KUBE_PROXY_METRICS
nodePortAddresses:
- $NODE_IP/32
iptables:
  localhostNodePorts: false
  masqueradeAll: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
EOF
}

# write_corefile: CoreDNS on the node IP, answering the cluster domain from
# the API (kubernetes plugin) and forwarding the rest to the host's resolver.
write_corefile() {
	cat >"$RUN_DIR/Corefile" <<EOF
.:53 {
    bind $NODE_IP
    errors
    ready $COREDNS_READY
    cache 30
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $RUN_DIR/coredns.kubeconfig
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    loop
    forward . /etc/resolv.conf
}
EOF
}
