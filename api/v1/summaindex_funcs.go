package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer holds a SummaIndex until the operator has handled its volume
// according to the reclaim policy.
const Finalizer = "summa.dev/deletion"

// Labels carried by every object the operator creates.
const (
	// LabelManagedBy is the standard label naming the managing tool.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "summa-operator"
	// LabelIndex names the SummaIndex an object belongs to.
	LabelIndex = "summa.dev/index"
)

// Defaults of the spec, the same as the CRD's defaulting markers. They are
// applied by the API server; the accessors below also apply them, for
// objects that never went through it (unit tests, fake clients).
const (
	// DefaultMinGraceSeconds is spec.lifecycle.terminationGracePeriod.minSeconds.
	DefaultMinGraceSeconds int32 = 30
	// DefaultMaxGraceSeconds is spec.lifecycle.terminationGracePeriod.maxSeconds.
	DefaultMaxGraceSeconds int32 = 1800
	// DefaultDrainTimeoutSeconds is spec.lifecycle.drainTimeoutSeconds.
	DefaultDrainTimeoutSeconds int32 = 600
	// DefaultDeletionTimeoutSeconds is spec.lifecycle.deletionTimeoutSeconds.
	DefaultDeletionTimeoutSeconds int32 = 300
)

// maxJobNameLength bounds a Job's name (it becomes a label value).
const maxJobNameLength = 63

// Labels returns the labels of every object the operator creates for x.
func (x *SummaIndex) Labels() map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelIndex:     x.Name,
	}
}

// DataClaimName is the name of the data volume's PersistentVolumeClaim.
func (x *SummaIndex) DataClaimName() string { return x.Name + "-data" }

// ServiceName is the name of the Service in front of the engine.
func (x *SummaIndex) ServiceName() string { return x.Name }

// BackupClaimName is the name of the volume copy made before the doctor run
// requestID.
func (x *SummaIndex) BackupClaimName(requestID string) string {
	return x.Name + "-backup-" + requestID
}

// EnginePodName is the name of the engine pod. A replacement is created
// only once the previous pod is gone, so the name is stable.
func (x *SummaIndex) EnginePodName() string { return x.Name + "-engine" }

// BackupJobName is the name of the Job that copies the data volume before
// the doctor run requestID (shortened like DoctorJobName).
func (x *SummaIndex) BackupJobName(requestID string) string {
	return shortName(x.Name + "-backup-" + requestID)
}

// DoctorJobName is the name of the Job of the doctor run requestID:
// <name>-doctor-<requestId>, shortened with a hash suffix when that would
// exceed 63 characters. The same inputs always give the same name, so a
// restarted operator finds the Job again.
func (x *SummaIndex) DoctorJobName(requestID string) string {
	return shortName(x.Name + "-doctor-" + requestID)
}

// shortName returns name, or a prefix of it with a hash suffix when it is
// longer than a label value may be.
func shortName(name string) string {
	if len(name) <= maxJobNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	return name[:maxJobNameLength-len(suffix)] + suffix
}

// GetCondition returns the condition of type t, or nil.
func (x *SummaIndex) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(x.Status.Conditions, t)
}

// IsConditionTrue reports whether the condition of type t is True.
func (x *SummaIndex) IsConditionTrue(t string) bool {
	return meta.IsStatusConditionTrue(x.Status.Conditions, t)
}

// IsReady reports whether the Ready condition is True.
func (x *SummaIndex) IsReady() bool { return x.IsConditionTrue(ConditionReady) }

// SetCondition sets a condition, stamping it with the object's generation
// and keeping its transition time when the status did not change. It
// reports whether anything changed.
func (x *SummaIndex) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&x.Status.Conditions, metav1.Condition{
		Type:               t,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: x.Generation,
	})
}

// RemoveCondition removes the condition of type t and reports whether it
// was there.
func (x *SummaIndex) RemoveCondition(t string) bool {
	return meta.RemoveStatusCondition(&x.Status.Conditions, t)
}

// EffectiveReclaimPolicy is the reclaim policy, Retain when unset.
func (s *StorageSpec) EffectiveReclaimPolicy() ReclaimPolicy {
	if s.ReclaimPolicy == "" {
		return ReclaimRetain
	}
	return s.ReclaimPolicy
}

// EffectiveBackup is the backup mode, Copy when unset.
func (d *DoctorSpec) EffectiveBackup() BackupMode {
	if d.Backup == "" {
		return BackupCopy
	}
	return d.Backup
}

// Defaults of spec.doctor's Job bounds.
const (
	// DefaultKeepBackups is spec.doctor.keepBackups when unset.
	DefaultKeepBackups = 3
	// DefaultDoctorActiveDeadlineSeconds is spec.doctor.activeDeadlineSeconds
	// when unset.
	DefaultDoctorActiveDeadlineSeconds = 6 * 3600
	// DefaultDoctorStartTimeoutSeconds is spec.doctor.startTimeoutSeconds
	// when unset.
	DefaultDoctorStartTimeoutSeconds = 300
)

// EffectiveKeepBackups is keepBackups, DefaultKeepBackups when unset.
func (d *DoctorSpec) EffectiveKeepBackups() int {
	if d.KeepBackups == nil {
		return DefaultKeepBackups
	}
	return int(max(*d.KeepBackups, 0))
}

// EffectiveActiveDeadlineSeconds is activeDeadlineSeconds, the default
// when unset.
func (d *DoctorSpec) EffectiveActiveDeadlineSeconds() int64 {
	if d.ActiveDeadlineSeconds == nil {
		return DefaultDoctorActiveDeadlineSeconds
	}
	return *d.ActiveDeadlineSeconds
}

// StartTimeout is startTimeoutSeconds as a duration, the default when
// unset.
func (d *DoctorSpec) StartTimeout() time.Duration {
	if d.StartTimeoutSeconds == nil {
		return DefaultDoctorStartTimeoutSeconds * time.Second
	}
	return time.Duration(*d.StartTimeoutSeconds) * time.Second
}

// Ran reports whether the doctor run requestID was recorded: the last run
// or one of its history. Such a requestId never runs again.
func (d *DoctorStatus) Ran(requestID string) bool {
	if d == nil {
		return false
	}
	if d.RequestID == requestID {
		return true
	}
	for _, h := range d.History {
		if h.RequestID == requestID {
			return true
		}
	}
	return false
}

// GraceBounds returns the grace period's bounds in seconds, with the
// defaults for unset values.
func (l *LifecycleSpec) GraceBounds() (minSeconds, maxSeconds int32) {
	minSeconds, maxSeconds = l.TerminationGracePeriod.MinSeconds, l.TerminationGracePeriod.MaxSeconds
	if minSeconds <= 0 {
		minSeconds = DefaultMinGraceSeconds
	}
	if maxSeconds <= 0 {
		maxSeconds = DefaultMaxGraceSeconds
	}
	return minSeconds, maxSeconds
}

// DrainTimeout is the drain timeout, with the default when unset.
func (l *LifecycleSpec) DrainTimeout() time.Duration {
	s := l.DrainTimeoutSeconds
	if s <= 0 {
		s = DefaultDrainTimeoutSeconds
	}
	return time.Duration(s) * time.Second
}

// DeletionTimeout is the deletion timeout, with the default when unset.
func (l *LifecycleSpec) DeletionTimeout() time.Duration {
	s := l.DeletionTimeoutSeconds
	if s <= 0 {
		s = DefaultDeletionTimeoutSeconds
	}
	return time.Duration(s) * time.Second
}

// Args returns the summa-server flags of the tunables that are set, in a
// fixed order (it feeds the pod's revision hash).
func (e *EngineSpec) Args() []string {
	var args []string
	num := func(flag string, v *int32) {
		if v != nil {
			args = append(args, "--"+flag+"="+strconv.FormatInt(int64(*v), 10))
		}
	}
	seconds := func(flag string, v *int32) {
		if v != nil {
			args = append(args, "--"+flag+"="+(time.Duration(*v)*time.Second).String())
		}
	}
	num("optimizer-threads", e.OptimizerThreads)
	seconds("optimizer-scan-interval", e.OptimizerScanIntervalSeconds)
	seconds("optimizer-backoff-min", e.OptimizerBackoffMinSeconds)
	seconds("optimizer-backoff-max", e.OptimizerBackoffMaxSeconds)
	num("optimizer-max-unconverged-passes", e.OptimizerMaxUnconvergedPasses)
	seconds("bp-time-budget", e.BPTimeBudgetSeconds)
	num("bp-memory-budget-mb", e.BPMemoryBudgetMB)
	num("indexing-workers", e.IndexingWorkers)
	seconds("commit-flush-timeout", e.CommitFlushTimeoutSeconds)
	seconds("autocommit-interval", e.AutocommitIntervalSeconds)
	if e.MaxRequestBytes != nil {
		args = append(args, "--max-request-bytes="+strconv.FormatInt(e.MaxRequestBytes.Value(), 10))
	}
	if e.MaxDocumentBytes != nil {
		args = append(args, "--max-document-bytes="+strconv.FormatInt(e.MaxDocumentBytes.Value(), 10))
	}
	if e.MinFreeBytes != nil {
		args = append(args, "--min-free-bytes="+strconv.FormatInt(e.MinFreeBytes.Value(), 10))
	}
	if e.LogLevel != "" {
		args = append(args, "--log-level="+string(e.LogLevel))
	}
	return args
}

// LabelClient on a pod of the index's namespace, with the index's name as
// value, admits the pod to the engine's port through the NetworkPolicy.
const LabelClient = "summa.dev/client"

// Keys of the credentials Secret (one or more bearer tokens each, one per
// line).
const (
	// AdminTokenKey holds the admin-scope tokens; the operator uses the
	// first one.
	AdminTokenKey = "admin-token"
	// WriteTokenKey holds the write-scope tokens; app containers get the
	// first one as SUMMA_TOKEN.
	WriteTokenKey = "write-token"
	// ReadTokenKey holds the read-scope tokens.
	ReadTokenKey = "read-token"
)

// TokenKeys are the keys of a credentials Secret, from the widest scope
// to the narrowest.
var TokenKeys = []string{AdminTokenKey, WriteTokenKey, ReadTokenKey}

// Keys of a TLS Secret.
const (
	// CACertKey holds the PEM certificates that verify the engine.
	CACertKey = "ca.crt"
	// CAKeyKey holds the operator's CA private key, in a Secret of its own
	// (<name>-ca) that no pod mounts, never in the TLS Secret clients read.
	CAKeyKey = "ca.key"
	// TLSCertKey holds the engine's certificate chain (PEM).
	TLSCertKey = "tls.crt"
	// TLSKeyKey holds the engine's private key (PEM).
	TLSKeyKey = "tls.key"
)

// CredentialsSecretName is the Secret of the engine's tokens:
// spec.access.credentialsSecret, or <name>-credentials which the operator
// creates.
func (x *SummaIndex) CredentialsSecretName() string {
	if s := x.Spec.Access.CredentialsSecret; s != "" {
		return s
	}
	return x.GeneratedCredentialsSecretName()
}

// GeneratedCredentialsSecretName is the name of the credentials Secret the
// operator creates when spec.access.credentialsSecret is empty.
func (x *SummaIndex) GeneratedCredentialsSecretName() string { return x.Name + "-credentials" }

// GeneratesCredentials reports whether the operator makes the tokens.
func (x *SummaIndex) GeneratesCredentials() bool { return x.Spec.Access.CredentialsSecret == "" }

// TLSEnabled reports whether the engine serves HTTPS (the default).
func (x *SummaIndex) TLSEnabled() bool { return x.Spec.Access.TLS.Mode != TLSDisabled }

// IssuesCertificate reports whether the operator issues the engine's
// certificate (TLS on, no secretName).
func (x *SummaIndex) IssuesCertificate() bool {
	return x.TLSEnabled() && x.Spec.Access.TLS.SecretName == ""
}

// TLSSecretName is the Secret of the engine's certificate:
// spec.access.tls.secretName, or <name>-tls which the operator keeps; ""
// with TLS disabled.
func (x *SummaIndex) TLSSecretName() string {
	switch {
	case !x.TLSEnabled():
		return ""
	case x.Spec.Access.TLS.SecretName != "":
		return x.Spec.Access.TLS.SecretName
	}
	return x.IssuedTLSSecretName()
}

// IssuedTLSSecretName is the name of the Secret holding the operator's CA
// and the certificate it issues.
func (x *SummaIndex) IssuedTLSSecretName() string { return x.Name + "-tls" }

// NetworkPolicyEnabled reports whether the operator manages the index's
// NetworkPolicies (the default).
func (x *SummaIndex) NetworkPolicyEnabled() bool {
	return x.Spec.Access.NetworkPolicy != NetworkPolicyDisabled
}

// NetworkPolicyName is the NetworkPolicy of the engine's port.
func (x *SummaIndex) NetworkPolicyName() string { return x.Name }

// JobsNetworkPolicyName is the NetworkPolicy that leaves the doctor and
// backup Jobs without network: <name>.jobs. The dot keeps it apart from
// the engine NetworkPolicy of every other index (whose name, a DNS-1035
// label, has none); <name>-jobs would be the one of an index so named.
func (x *SummaIndex) JobsNetworkPolicyName() string { return x.Name + ".jobs" }

// ServiceHost is the name the operator verifies in the engine's
// certificate: <service>.<namespace>.svc.
func (x *SummaIndex) ServiceHost() string {
	return x.ServiceName() + "." + x.Namespace + ".svc"
}

// ServiceDNSNames are the DNS names of the engine's Service, shortest
// first, for a cluster domain such as cluster.local.
func (x *SummaIndex) ServiceDNSNames(clusterDomain string) []string {
	svc := x.ServiceName()
	names := []string{svc, svc + "." + x.Namespace, x.ServiceHost()}
	if clusterDomain != "" {
		names = append(names, x.ServiceHost()+"."+clusterDomain)
	}
	return names
}
