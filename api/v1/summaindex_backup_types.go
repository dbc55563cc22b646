package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys of the Secrets named in spec.backup.s3.
const (
	// S3AccessKeyIDKey is the access key ID in the credentials Secret.
	S3AccessKeyIDKey = "accessKeyId"
	// S3SecretAccessKeyKey is the secret access key in the credentials
	// Secret.
	S3SecretAccessKeyKey = "secretAccessKey"
	// DefaultBackupKeep is spec.backup.keep when unset.
	DefaultBackupKeep = 7
	// RestoreLatest as spec.restore.backupId restores the newest backup.
	RestoreLatest = "latest"
)

// S3Spec locates an S3-compatible object store and the credentials the
// engine uses there (the engine's --s3-* flags).
type S3Spec struct {
	// Endpoint is the store's URL, http://HOST:PORT or https://HOST:PORT
	// (a bare HOST:PORT means https); path-style addressing.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(https?://)?[A-Za-z0-9.\-\[\]:]+(:[0-9]+)?/?$`
	Endpoint string `json:"endpoint"`

	// Bucket holds the backups; a backup creates it when missing.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`

	// Prefix is prepended to every object key; may be empty.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`

	// Region of the bucket (the engine's default us-east-1 when empty).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// CredentialsSecret names a Secret of the index's namespace with the
	// keys accessKeyId and secretAccessKey. A changed value is used from
	// the next backup on, without a restart.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret"`

	// CASecret optionally names a Secret whose key ca.crt verifies the
	// store's certificate (default: the system roots).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CASecret string `json:"caSecret,omitempty"`
}

// BackupSpec configures online backups of the index to object storage.
type BackupSpec struct {
	// S3 is the object store, given to the leader engine.
	// +required
	S3 S3Spec `json:"s3"`

	// Schedule is a cron expression, in UTC, of scheduled backups (five
	// fields, or a descriptor such as @daily); empty means backups only
	// when a SummaIndexBackup asks for one.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})?$`
	Schedule string `json:"schedule,omitempty"`

	// Keep is how many backups of the index are kept in the bucket: older
	// ones are pruned after each successful backup. Default 7.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Keep *int32 `json:"keep,omitempty"`
}

// RestoreSpec fills the new index's empty volume from a backup before its
// engine starts. It is ignored once the volume holds the index. The
// backup restored is one of the index named by index (this SummaIndex's
// name by default) in the bucket; it is restored under this SummaIndex's
// name.
type RestoreSpec struct {
	// BackupID is the backup to restore, or "latest" for the newest backup
	// of the backed-up index in the bucket.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(latest|[0-9]{8}T[0-9]{6}(\.[0-9]+)?Z-[0-9a-f]+)$`
	BackupID string `json:"backupId"`

	// Index is the backed-up index: the name of the SummaIndex whose
	// backups (in the bucket and prefix of s3) are restored. Default:
	// this SummaIndex's name; set it to restore an index's backups into a
	// SummaIndex of another name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Index string `json:"index,omitempty"`

	// S3 is the object store to restore from; spec.backup.s3 when unset.
	// +optional
	S3 *S3Spec `json:"s3,omitempty"`
}

// RestoreSourceIndex is the backed-up index spec.restore reads the
// backups of: spec.restore.index, else the SummaIndex's own name.
func (x *SummaIndex) RestoreSourceIndex() string {
	if r := x.Spec.Restore; r != nil && r.Index != "" {
		return r.Index
	}
	return x.Name
}

// LastBackup is the newest completed backup of the index.
type LastBackup struct {
	// ID of the backup in the bucket.
	ID string `json:"id"`
	// Generation is the backed-up commit generation.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// CompletedAt is when it completed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// Restore phases.
const (
	// RestorePhaseRunning: the restore Job runs.
	RestorePhaseRunning = "Running"
	// RestorePhaseSucceeded: the volume holds the restored index.
	RestorePhaseSucceeded = "Succeeded"
	// RestorePhaseFailed: the restore Job failed; nothing is served.
	RestorePhaseFailed = "Failed"
)

// RestoreStatus records the restore of spec.restore.
type RestoreStatus struct {
	// Phase is Running, Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// JobName is the restore Job.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// BackupID is the backup asked for.
	// +optional
	BackupID string `json:"backupId,omitempty"`
	// Message says what happened.
	// +optional
	Message string `json:"message,omitempty"`
	// CompletedAt is when the Job ended.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// BackupKeep is spec.backup.keep with its default.
func (b *BackupSpec) BackupKeep() int {
	if b == nil || b.Keep == nil {
		return DefaultBackupKeep
	}
	return int(*b.Keep)
}

// RestoreS3 is the object store spec.restore reads from: its own, else
// spec.backup.s3; nil when neither is set.
func (x *SummaIndex) RestoreS3() *S3Spec {
	if r := x.Spec.Restore; r != nil && r.S3 != nil {
		return r.S3
	}
	if x.Spec.Backup != nil {
		return &x.Spec.Backup.S3
	}
	return nil
}

// RestoreJobName is the Job restoring the volume from object storage
// (shortened like DoctorJobName).
func (x *SummaIndex) RestoreJobName() string { return shortName(x.Name + "-restore") }

// BackupPruneJobName is the Job pruning the index's backups in the bucket
// (shortened like DoctorJobName).
func (x *SummaIndex) BackupPruneJobName() string { return shortName(x.Name + "-s3-prune") }

// S3CredentialsSecretName is the Secret the operator derives from
// spec.backup.s3.credentialsSecret, holding the engine's credentials file.
func (x *SummaIndex) S3CredentialsSecretName() string { return x.Name + "-s3-credentials" }

// RestoreS3CredentialsSecretName is the derived credentials file of the
// restore's object store.
func (x *SummaIndex) RestoreS3CredentialsSecretName() string {
	return x.Name + "-restore-s3-credentials"
}

// ObjectStoreJobsNetworkPolicyName is the NetworkPolicy of the restore and
// prune Jobs, which reach the object store only.
func (x *SummaIndex) ObjectStoreJobsNetworkPolicyName() string { return x.Name + ".s3-jobs" }
