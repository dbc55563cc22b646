# shellcheck shell=bash
# PKI and kubeconfigs of the local cluster, made with openssl (sourced by
# up.sh). ECDSA P-256 keys throughout: they are made in milliseconds.
#
#   ca                      the cluster CA (also signs CSRs: controller-manager)
#   apiserver               serving, SAN the node IP (where it listens), 127.0.0.1,
#                           10.96.0.1 (the kubernetes Service), kubernetes.default...
#   apiserver-kubelet-client  apiserver -> kubelet (logs, exec), O=system:masters
#   kubelet                 the kubelet's serving cert, SAN the node IP
#   node                    the kubelet's client, system:node:<host> O=system:nodes
#   admin                   O=system:masters
#   controller-manager      system:kube-controller-manager
#   scheduler               system:kube-scheduler
#   kube-proxy              system:kube-proxy (bound to system:node-proxier)
#   coredns                 summa:coredns (ClusterRole of hack/cluster/dns.yaml)
#   sa.key / sa.pub         service-account token signing keypair

# new_key FILE makes an ECDSA P-256 private key.
new_key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
	chmod 600 "$1"
}

# issue NAME SUBJECT USAGE [SAN] signs $PKI/NAME.crt with the CA.
# USAGE is clientAuth, serverAuth or both.
issue() {
	local name="$1" subj="$2" usage="$3" san="${4:-}" ext
	new_key "$PKI/$name.key"
	ext="$PKI/$name.ext"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usage"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$ext"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 365 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$ext"
}

# make_pki creates every key and certificate, unless all exist already.
make_pki() {
	# The node's name is in two certificates: a new host name needs a new
	# PKI; so does one made before the kube-proxy and coredns certificates.
	local stamp="$NODE_NAME kube-proxy coredns"
	if [ "$(cat "$PKI/done" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	rm -rf "$PKI"
	mkdir -p "$PKI"
	new_key "$PKI/ca.key"
	openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=summa-local-ca" -days 3650 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "$PKI/ca.crt" 2>/dev/null
	issue apiserver "/CN=kube-apiserver" serverAuth \
		"IP:127.0.0.1,IP:$NODE_IP,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	issue kubelet "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
	issue node "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
	issue admin "/O=system:masters/CN=kubernetes-admin" clientAuth
	issue controller-manager "/CN=system:kube-controller-manager" clientAuth
	issue scheduler "/CN=system:kube-scheduler" clientAuth
	issue kube-proxy "/CN=system:kube-proxy" clientAuth
	issue coredns "/CN=summa:coredns" clientAuth
	new_key "$PKI/sa.key"
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	echo "$stamp" >"$PKI/done"
	log "PKI made in $PKI"
}

# kubeconfig FILE CERT-NAME writes a kubeconfig for the client cert
# $PKI/CERT-NAME.{crt,key}, with everything embedded (copyable).
kubeconfig() {
	local file="$1" who="$2" b64="base64 -w0"
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: summa-local
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority-data: $($b64 "$PKI/ca.crt")
users:
- name: $who
  user:
    client-certificate-data: $($b64 "$PKI/$who.crt")
    client-key-data: $($b64 "$PKI/$who.key")
contexts:
- name: summa-local
  context:
    cluster: summa-local
    user: $who
current-context: summa-local
EOF
	chmod 600 "$file"
}

# make_kubeconfigs writes the admin's and each component's kubeconfig.
make_kubeconfigs() {
	kubeconfig "$ADMIN_KUBECONFIG" admin
	kubeconfig "$RUN_DIR/controller-manager.kubeconfig" controller-manager
	kubeconfig "$RUN_DIR/scheduler.kubeconfig" scheduler
	kubeconfig "$RUN_DIR/kubelet.kubeconfig" node
	kubeconfig "$RUN_DIR/kube-proxy.kubeconfig" kube-proxy
	kubeconfig "$RUN_DIR/coredns.kubeconfig" coredns
}
