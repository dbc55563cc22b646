package v1

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSMode says whether the engine serves HTTPS.
// +kubebuilder:validation:Enum=Enabled;Disabled
type TLSMode string

const (
	// TLSEnabled: the engine serves HTTPS only, with the operator's
	// certificate or the one of spec.access.tls.secretName.
	TLSEnabled TLSMode = "Enabled"
	// TLSDisabled: the engine serves plain HTTP.
	TLSDisabled TLSMode = "Disabled"
)

// NetworkPolicyMode says whether the operator manages NetworkPolicies for
// the index.
// +kubebuilder:validation:Enum=Enabled;Disabled
type NetworkPolicyMode string

const (
	// NetworkPolicyEnabled: the engine port admits only the operator, the
	// index's labelled clients and spec.access.allowFrom; doctor and backup
	// Jobs get no network.
	NetworkPolicyEnabled NetworkPolicyMode = "Enabled"
	// NetworkPolicyDisabled: the operator creates no NetworkPolicy (and
	// deletes the ones it made).
	NetworkPolicyDisabled NetworkPolicyMode = "Disabled"
)

// TLSSpec says how the engine serves HTTPS.
//
// +kubebuilder:validation:XValidation:rule="!has(self.secretName) || !has(self.mode) || self.mode == 'Enabled'",message="tls.secretName applies only with tls.mode Enabled"
type TLSSpec struct {
	// Mode is Enabled (default: HTTPS only) or Disabled (plain HTTP).
	// +optional
	// +kubebuilder:default=Enabled
	Mode TLSMode `json:"mode,omitempty"`

	// SecretName names a kubernetes.io/tls Secret of the namespace made by
	// someone else (cert-manager, say) whose tls.crt and tls.key the engine
	// serves; its ca.crt, when present, is what the operator and app
	// containers verify the engine with (the system roots otherwise). The
	// certificate must name the Service (<name>.<namespace>.svc or another
	// of its DNS names). Empty: the operator issues and renews the
	// certificate itself, from a CA it keeps in <name>-tls.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`
}

// AccessSpec is who may talk to the engine, and how.
type AccessSpec struct {
	// CredentialsSecret names an existing Secret of the namespace with the
	// keys admin-token, write-token and read-token (one or more tokens per
	// key, one per line). Empty: the operator creates <name>-credentials
	// with random tokens. Editing the Secret's values rotates the tokens
	// without restarting the engine.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// TLS of the engine's port.
	// +optional
	// +kubebuilder:default={}
	TLS TLSSpec `json:"tls,omitempty"`

	// NetworkPolicy is Enabled (default) or Disabled.
	// +optional
	// +kubebuilder:default=Enabled
	NetworkPolicy NetworkPolicyMode `json:"networkPolicy,omitempty"`

	// AllowFrom are further peers admitted to the engine's port, besides
	// the operator and the pods of the namespace labelled
	// summa.dev/client=<name>.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	AllowFrom []networkingv1.NetworkPolicyPeer `json:"allowFrom,omitempty"`
}

// AccessStatus records the credentials and certificate the engine uses.
type AccessStatus struct {
	// CredentialsSecret names the Secret of the engine's tokens.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// TLSSecret names the Secret of the engine's certificate (and of the
	// ca.crt that verifies it); empty with TLS disabled.
	// +optional
	TLSSecret string `json:"tlsSecret,omitempty"`

	// CertificateNotAfter is when the engine's certificate expires.
	// +optional
	CertificateNotAfter *metav1.Time `json:"certificateNotAfter,omitempty"`

	// CertificateRenewalTime is when the operator renews the certificate it
	// issued (two thirds into its lifetime); empty for a certificate made
	// by someone else.
	// +optional
	CertificateRenewalTime *metav1.Time `json:"certificateRenewalTime,omitempty"`

	// SyncedHash is a hash of the tokens and certificate that the engine
	// pod was last told about (its annotation summa.dev/access-hash, whose
	// change makes the kubelet refresh the mounted files at once).
	// +optional
	SyncedHash string `json:"syncedHash,omitempty"`

	// SyncTime is when the engine pod was last told; a token the engine
	// refuses within a while after it is a rotation still in flight, not a
	// failure.
	// +optional
	SyncTime *metav1.Time `json:"syncTime,omitempty"`
}
