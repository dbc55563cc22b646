package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupPhase is the phase of one SummaIndexBackup.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

// The phases of a SummaIndexBackup.
const (
	// BackupPhasePending: not started on the engine yet.
	BackupPhasePending BackupPhase = "Pending"
	// BackupPhaseRunning: the engine uploads it.
	BackupPhaseRunning BackupPhase = "Running"
	// BackupPhaseCompleted: its manifest is in the bucket.
	BackupPhaseCompleted BackupPhase = "Completed"
	// BackupPhaseFailed: it failed; nothing of it is a backup.
	BackupPhaseFailed BackupPhase = "Failed"
)

// Labels and annotations of SummaIndexBackups.
const (
	// AnnotationScheduledAt is the schedule time (RFC 3339, UTC) of a
	// backup created by spec.backup.schedule.
	AnnotationScheduledAt = "summa.dev/scheduled-at"
)

// SummaIndexBackupSpec asks for one online backup.
type SummaIndexBackupSpec struct {
	// Index is the SummaIndex of the same namespace to back up.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.index is immutable"
	Index string `json:"index"`
}

// SummaIndexBackupStatus is the backup's progress and result.
type SummaIndexBackupStatus struct {
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// BackupID is the engine's ID of the backup (its manifest's name).
	// +optional
	BackupID string `json:"backupId,omitempty"`
	// Generation is the backed-up commit generation.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Documents counts the generation's live documents.
	// +optional
	Documents int64 `json:"documents,omitempty"`
	// Bytes is what the backup uploaded (the rest was in the bucket).
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// ReusedBytes is what was in the bucket already and not uploaded.
	// +optional
	ReusedBytes int64 `json:"reusedBytes,omitempty"`
	// StartedAt is when the engine started it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when it completed or failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Message says what happens or went wrong.
	// +optional
	Message string `json:"message,omitempty"`
}

// SummaIndexBackup is one online backup of a SummaIndex to the object
// store of its spec.backup.s3.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="summa.dev/crd-revision=6"
// +kubebuilder:resource:path=summaindexbackups,singular=summaindexbackup,scope=Namespaced,shortName=sidxb,categories=summa
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.spec.index`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backupId`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.status.generation`
// +kubebuilder:printcolumn:name="Documents",type=integer,JSONPath=`.status.documents`
// +kubebuilder:printcolumn:name="Bytes",type=integer,JSONPath=`.status.bytes`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SummaIndexBackup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the index.
	// +required
	Spec SummaIndexBackupSpec `json:"spec"`

	// Status is the backup's progress.
	// +optional
	Status SummaIndexBackupStatus `json:"status,omitempty"`
}

// Finished reports whether the backup completed or failed.
func (b *SummaIndexBackup) Finished() bool {
	return b.Status.Phase == BackupPhaseCompleted || b.Status.Phase == BackupPhaseFailed
}

// SummaIndexBackupList is a list of SummaIndexBackup.
//
// +kubebuilder:object:root=true
type SummaIndexBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the backups.
	Items []SummaIndexBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SummaIndexBackup{}, &SummaIndexBackupList{})
}
