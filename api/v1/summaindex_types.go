package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FieldType is the value type of a schema field.
// +kubebuilder:validation:Enum=text;keyword;u64;i64;f64;dense_vector;sparse_vector
// +kubebuilder:validation:MaxLength=16
type FieldType string

// The field types of the engine schema.
const (
	// FieldTypeText is tokenized text scored with BM25.
	FieldTypeText FieldType = "text"
	// FieldTypeKeyword is an exact, untokenized string.
	FieldTypeKeyword FieldType = "keyword"
	// FieldTypeU64 is an unsigned 64-bit integer.
	FieldTypeU64 FieldType = "u64"
	// FieldTypeI64 is a signed 64-bit integer.
	FieldTypeI64 FieldType = "i64"
	// FieldTypeF64 is a 64-bit float.
	FieldTypeF64 FieldType = "f64"
	// FieldTypeDenseVector is a dense vector of Dims float32 values.
	FieldTypeDenseVector FieldType = "dense_vector"
	// FieldTypeSparseVector is a sparse vector of named dimensions.
	FieldTypeSparseVector FieldType = "sparse_vector"
)

// SchemaField is one field of the engine schema, exactly as the engine's
// `PUT /v1/indexes/{index}` takes it. The rules below mirror the engine's
// own schema validation, so that a schema the engine would refuse is
// refused when the SummaIndex is created (the schema is immutable
// afterwards).
//
// +kubebuilder:validation:XValidation:rule="self.type == 'dense_vector' ? has(self.dims) : !has(self.dims)",message="dims is required for a dense_vector field and allowed only there"
// +kubebuilder:validation:XValidation:rule="!has(self.binary) || !self.binary || self.type == 'dense_vector'",message="binary applies only to dense_vector fields"
// +kubebuilder:validation:XValidation:rule="!has(self.reorder) || !self.reorder || self.type == 'text'",message="reorder applies only to text fields"
// +kubebuilder:validation:XValidation:rule="!has(self.multi) || !self.multi || !(self.type in ['dense_vector', 'sparse_vector'])",message="a vector field cannot be multi-valued"
// +kubebuilder:validation:XValidation:rule="!has(self.primary) || !self.primary || self.type in ['text', 'keyword', 'u64', 'i64']",message="a primary field must be text, keyword, u64 or i64"
// +kubebuilder:validation:XValidation:rule="!has(self.primary) || !self.primary || ((!has(self.multi) || !self.multi) && (!has(self.indexed) || self.indexed) && (!has(self.reorder) || !self.reorder))",message="a primary field must be indexed, single-valued and not a reorder field"
type SchemaField struct {
	// Name of the field in documents: letters, digits, '_', '.', '-',
	// starting with a letter or '_'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.-]*$`
	Name string `json:"name"`

	// Type of the field's values.
	// +required
	Type FieldType `json:"type"`

	// Indexed makes the field searchable (engine default: true).
	// +optional
	Indexed *bool `json:"indexed,omitempty"`

	// Stored keeps the value in stored documents (engine default: true for
	// scalars and text).
	// +optional
	Stored *bool `json:"stored,omitempty"`

	// Primary marks the primary key used for upserts and deletions; at most
	// one field of a schema.
	// +optional
	Primary bool `json:"primary,omitempty"`

	// Reorder makes BP document reordering use this text field.
	// +optional
	Reorder bool `json:"reorder,omitempty"`

	// Multi accepts a JSON array of values for the field.
	// +optional
	Multi bool `json:"multi,omitempty"`

	// Dims is the dimension count of a dense_vector field (required there,
	// refused elsewhere).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Dims *int32 `json:"dims,omitempty"`

	// Binary asks for binary quantisation of a dense_vector field.
	// +optional
	Binary bool `json:"binary,omitempty"`
}

// Schema is the engine schema of the index.
type Schema struct {
	// Fields of the index, in order; names are unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.filter(f, has(f.primary) && f.primary).size() <= 1",message="at most one field may be primary"
	Fields []SchemaField `json:"fields"`
}

// ReclaimPolicy says what happens to the data volume when its SummaIndex is
// deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimRetain stops the engine and keeps the volume, without an owner
	// reference, for a later SummaIndex of the same name or for inspection.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the index in the engine, then the pod and the
	// volume.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// StorageSpec is the data volume of the index, mounted at /data.
//
// +kubebuilder:validation:XValidation:rule="quantity(string(self.size)).isGreaterThan(quantity('0'))",message="storage.size must be positive"
// +kubebuilder:validation:XValidation:rule="quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="storage.size may grow but never shrink"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storage.storageClassName is immutable"
type StorageSpec struct {
	// Size of the volume. It may grow (when the storage class allows volume
	// expansion) but never shrink.
	// +required
	Size resource.Quantity `json:"size"`

	// StorageClassName of the volume; the cluster default when empty.
	// Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// ReclaimPolicy decides the volume's fate when the SummaIndex is
	// deleted: Retain (default) keeps it, Delete removes the index and the
	// volume.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// AutoGrow lets the operator grow the volume past Size, up to
	// autoGrow.maxSize, when the engine reports it nearly full.
	// +optional
	AutoGrow *AutoGrow `json:"autoGrow,omitempty"`
}

// LogLevel is the engine's log level.
// +kubebuilder:validation:Enum=info;debug;trace
type LogLevel string

// EngineSpec holds the engine's optimizer and indexing tunables. Each one
// set here becomes the summa-server flag of the same name; an unset one
// keeps the engine's default. A change restarts the engine (after a drain).
//
// +kubebuilder:validation:XValidation:rule="!has(self.optimizerBackoffMinSeconds) || !has(self.optimizerBackoffMaxSeconds) || self.optimizerBackoffMinSeconds <= self.optimizerBackoffMaxSeconds",message="optimizerBackoffMinSeconds must not exceed optimizerBackoffMaxSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.maxRequestBytes) || quantity(string(self.maxRequestBytes)).isGreaterThan(quantity('0'))",message="maxRequestBytes must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.maxDocumentBytes) || quantity(string(self.maxDocumentBytes)).isGreaterThan(quantity('0'))",message="maxDocumentBytes must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.maxDocumentBytes) || !has(self.maxRequestBytes) || quantity(string(self.maxDocumentBytes)).compareTo(quantity(string(self.maxRequestBytes))) <= 0",message="maxDocumentBytes must not exceed maxRequestBytes"
type EngineSpec struct {
	// OptimizerThreads is the width of background maintenance (merges and
	// BP reordering); 0 turns it off (--optimizer-threads).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	OptimizerThreads *int32 `json:"optimizerThreads,omitempty"`

	// OptimizerScanIntervalSeconds is the time between optimizer scans
	// (--optimizer-scan-interval).
	// +optional
	// +kubebuilder:validation:Minimum=1
	OptimizerScanIntervalSeconds *int32 `json:"optimizerScanIntervalSeconds,omitempty"`

	// OptimizerBackoffMinSeconds is the first backoff after a failed
	// maintenance task (--optimizer-backoff-min).
	// +optional
	// +kubebuilder:validation:Minimum=1
	OptimizerBackoffMinSeconds *int32 `json:"optimizerBackoffMinSeconds,omitempty"`

	// OptimizerBackoffMaxSeconds is the largest backoff after failed
	// maintenance tasks (--optimizer-backoff-max).
	// +optional
	// +kubebuilder:validation:Minimum=1
	OptimizerBackoffMaxSeconds *int32 `json:"optimizerBackoffMaxSeconds,omitempty"`

	// OptimizerMaxUnconvergedPasses bounds successive budget-truncated BP
	// passes of one segment lineage (--optimizer-max-unconverged-passes).
	// +optional
	// +kubebuilder:validation:Minimum=0
	OptimizerMaxUnconvergedPasses *int32 `json:"optimizerMaxUnconvergedPasses,omitempty"`

	// BPTimeBudgetSeconds bounds the time of one BP pass (--bp-time-budget).
	// +optional
	// +kubebuilder:validation:Minimum=1
	BPTimeBudgetSeconds *int32 `json:"bpTimeBudgetSeconds,omitempty"`

	// BPMemoryBudgetMB bounds the memory of one BP pass, in MiB
	// (--bp-memory-budget-mb).
	// +optional
	// +kubebuilder:validation:Minimum=1
	BPMemoryBudgetMB *int32 `json:"bpMemoryBudgetMB,omitempty"`

	// IndexingWorkers is the number of indexing workers per index; 0 lets
	// the engine choose (--indexing-workers).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	IndexingWorkers *int32 `json:"indexingWorkers,omitempty"`

	// CommitFlushTimeoutSeconds bounds a commit's wait for the indexing
	// workers' flush (--commit-flush-timeout).
	// +optional
	// +kubebuilder:validation:Minimum=1
	CommitFlushTimeoutSeconds *int32 `json:"commitFlushTimeoutSeconds,omitempty"`

	// AutocommitIntervalSeconds commits every index with uncommitted
	// documents at this interval; 0 (the engine default) turns it off
	// (--autocommit-interval).
	// +optional
	// +kubebuilder:validation:Minimum=0
	AutocommitIntervalSeconds *int32 `json:"autocommitIntervalSeconds,omitempty"`

	// MaxRequestBytes bounds a request body; larger ones get 413
	// (--max-request-bytes, engine default 64Mi).
	// +optional
	MaxRequestBytes *resource.Quantity `json:"maxRequestBytes,omitempty"`

	// MaxDocumentBytes bounds one NDJSON document; at most MaxRequestBytes
	// (--max-document-bytes, engine default 1Mi).
	// +optional
	MaxDocumentBytes *resource.Quantity `json:"maxDocumentBytes,omitempty"`

	// MinFreeBytes is the free space of the data volume below which the
	// engine refuses ingestion and commits with 507 StorageFull
	// (--min-free-bytes; 0: none; engine default 3% of the volume, at
	// least 64Mi, at most half of it).
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`

	// LogLevel of the engine (--log-level).
	// +optional
	LogLevel LogLevel `json:"logLevel,omitempty"`
}

// GracePeriodBounds clamp the engine pod's terminationGracePeriodSeconds,
// which the operator sizes from the engine's drain estimate.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minSeconds) || !has(self.maxSeconds) || self.minSeconds <= self.maxSeconds",message="terminationGracePeriod.minSeconds must not exceed maxSeconds"
type GracePeriodBounds struct {
	// MinSeconds is the smallest grace period given to the engine pod.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	MinSeconds int32 `json:"minSeconds,omitempty"`

	// MaxSeconds is the largest grace period given to the engine pod.
	// +optional
	// +kubebuilder:default=1800
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	MaxSeconds int32 `json:"maxSeconds,omitempty"`
}

// LifecycleSpec bounds how long the engine gets to stop and to drain.
//
// +kubebuilder:validation:XValidation:rule="!has(self.appShutdownSeconds) || !has(self.terminationGracePeriod) || !has(self.terminationGracePeriod.maxSeconds) || self.appShutdownSeconds < self.terminationGracePeriod.maxSeconds",message="appShutdownSeconds must be shorter than terminationGracePeriod.maxSeconds: the engine stops after the apps, within the same grace period"
type LifecycleSpec struct {
	// TerminationGracePeriod bounds the sized grace period of the engine pod.
	// +optional
	// +kubebuilder:default={}
	TerminationGracePeriod GracePeriodBounds `json:"terminationGracePeriod,omitempty"`

	// DrainTimeoutSeconds bounds the wait for a drain before a restart; a
	// drain that takes longer leaves the pod running and the index Degraded.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	DrainTimeoutSeconds int32 `json:"drainTimeoutSeconds,omitempty"`

	// DeletionTimeoutSeconds bounds how long a deletion waits for the
	// engine (to delete the index with reclaimPolicy Delete, and to drain).
	// Past it, an engine that cannot be reached (wedged, a wrong token or
	// CA, a NetworkPolicy that shuts the operator out) is not asked: its pod
	// is deleted anyway (the engine still drains in its SIGTERM handler),
	// then the volumes as reclaimPolicy says, with a Warning event.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	DeletionTimeoutSeconds int32 `json:"deletionTimeoutSeconds,omitempty"`

	// AppShutdownSeconds is the time the app containers of spec.podTemplate
	// may take to stop (their preStop hooks and their exit after SIGTERM).
	// With app containers the engine is a native sidecar: the kubelet
	// sends it SIGTERM only once they exited, within the same grace
	// period. So this time is added to the sized grace period and taken
	// from the engine's own shutdown deadline. Unset, it is 10 s plus the
	// longest preStop sleep of the app containers when there are any, and
	// 0 without app containers (where it is ignored).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	AppShutdownSeconds *int32 `json:"appShutdownSeconds,omitempty"`
}

// BackupMode says whether a doctor run first copies the data volume.
// +kubebuilder:validation:Enum=Copy;None
type BackupMode string

const (
	// BackupCopy copies the volume to <name>-backup-<requestId> before the
	// doctor touches it.
	BackupCopy BackupMode = "Copy"
	// BackupNone runs the doctor without a copy.
	BackupNone BackupMode = "None"
)

// DoctorSpec asks for an offline repair of the data directory.
type DoctorSpec struct {
	// RequestID starts one doctor run each time it is set to a new value;
	// a value runs at most once. It is part of the backup volume's name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	RequestID string `json:"requestId,omitempty"`

	// Backup says whether the volume is copied first: Copy (default) or
	// None.
	// +optional
	// +kubebuilder:default=Copy
	Backup BackupMode `json:"backup,omitempty"`

	// KeepBackups is how many backup volumes of doctor runs
	// (<name>-backup-<requestId>) are kept: when a run ends, the oldest
	// ones beyond this count are deleted. The backup of the run that just
	// ended is never deleted by this rule, so 0 keeps only the latest
	// run's. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	KeepBackups *int32 `json:"keepBackups,omitempty"`

	// ActiveDeadlineSeconds bounds each backup and doctor Job (the Job's
	// activeDeadlineSeconds): a Job that runs longer fails the run and the
	// engine is started again. Default 21600 (6 hours).
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// StartTimeoutSeconds bounds how long a Job's pod may stay without any
	// container started (its image cannot be pulled, or it cannot be
	// scheduled) before the run fails and the engine is started again.
	// An image that can never be pulled (InvalidImageName) fails the run
	// at once. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	StartTimeoutSeconds *int32 `json:"startTimeoutSeconds,omitempty"`
}

// SummaIndexSpec is the desired state of a SummaIndex.
// +kubebuilder:validation:XValidation:rule="!has(self.restore) || has(self.restore.s3) || has(self.backup)",message="spec.restore needs spec.restore.s3 or spec.backup.s3"
type SummaIndexSpec struct {
	// Image of the engine (summa-server); the operator's default when
	// empty.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`

	// Schema of the index, as the engine takes it. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="schema is immutable"
	Schema Schema `json:"schema"`

	// Storage is the data volume.
	// +required
	Storage StorageSpec `json:"storage"`

	// Resources of the engine container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Engine holds optimizer and indexing tunables, passed as flags.
	// +optional
	Engine EngineSpec `json:"engine,omitempty"`

	// Lifecycle bounds grace periods and drains.
	// +optional
	// +kubebuilder:default={}
	Lifecycle LifecycleSpec `json:"lifecycle,omitempty"`

	// Doctor asks for offline repairs.
	// +optional
	// +kubebuilder:default={}
	Doctor DoctorSpec `json:"doctor,omitempty"`

	// PodTemplate adds application containers (and pod settings) to the
	// engine pod; with containers, the engine runs as a native sidecar that
	// starts first and stops last. It has the schema of a pod template
	// (field descriptions trimmed: see the PodTemplateSpec of Kubernetes);
	// what the operator puts into the engine pod is refused: containers
	// named engine or volume-permissions, volumes named summa-*, the
	// engine's port 8082 on another container, ephemeral containers, a
	// terminationGracePeriodSeconds (the operator sizes it), a restartPolicy
	// other than Always, and the label keys summa.dev/index,
	// summa.dev/component and app.kubernetes.io/managed-by. The operator also checks the whole pod
	// (with a dry run) before it creates or replaces the engine pod, and
	// shows a refusal as Degraded with reason InvalidPodTemplate. By default
	// (--pod-template-policy=baseline) it refuses what Pod Security baseline
	// forbids (privileged, host namespaces, hostPath, added capabilities,
	// host ports, unsafe sysctls, ...) and a serviceAccountName other than
	// default unless that ServiceAccount is annotated
	// summa.dev/allowed-for-podtemplate: "true".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.containers) || self.spec.containers.all(c, !(c.name in ['engine', 'volume-permissions']))",fieldPath=".spec.containers",message="the container names engine and volume-permissions are reserved for the operator's containers"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.initContainers) || self.spec.initContainers.all(c, !(c.name in ['engine', 'volume-permissions']))",fieldPath=".spec.initContainers",message="the container names engine and volume-permissions are reserved for the operator's containers"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.volumes) || self.spec.volumes.all(v, !v.name.startsWith('summa-'))",fieldPath=".spec.volumes",message="volume names starting with summa- are reserved for the operator's volumes (summa-data, summa-tmp, summa-credentials, summa-tls, summa-client-token, summa-client-ca)"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.containers) || self.spec.containers.all(c, !has(c.ports) || c.ports.all(p, p.containerPort != 8082))",fieldPath=".spec.containers",message="port 8082 is the engine's: app containers reach it at localhost:8082 and cannot listen on it"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.initContainers) || self.spec.initContainers.all(c, !has(c.ports) || c.ports.all(p, p.containerPort != 8082))",fieldPath=".spec.initContainers",message="port 8082 is the engine's: app containers reach it at localhost:8082 and cannot listen on it"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.ephemeralContainers)",fieldPath=".spec.ephemeralContainers",message="ephemeral containers cannot be part of a pod template (add them to the running pod with kubectl debug)"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.terminationGracePeriodSeconds)",fieldPath=".spec.terminationGracePeriodSeconds",message="the operator sizes the engine pod's grace period: bound it with spec.lifecycle.terminationGracePeriod (and spec.lifecycle.appShutdownSeconds for the apps)"
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.restartPolicy) || self.spec.restartPolicy == 'Always'",fieldPath=".spec.restartPolicy",message="the engine pod's restartPolicy is Always"
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.labels) || !('summa.dev/index' in self.metadata.labels || 'summa.dev/component' in self.metadata.labels || 'app.kubernetes.io/managed-by' in self.metadata.labels)",fieldPath=".metadata.labels",message="the label keys summa.dev/index, summa.dev/component and app.kubernetes.io/managed-by are the operator's"
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`

	// Suspend stops the engine pod (after a drain) and keeps the volume;
	// setting it back to false starts the engine again.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Access is the engine's credentials, TLS and network policy.
	// +optional
	// +kubebuilder:default={}
	Access AccessSpec `json:"access,omitempty"`

	// Replicas is the number of read followers (pods <name>-r<k> on their
	// own volumes, following the leader; see summaindex_replicas_types.go).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	Replicas *int32 `json:"replicas,omitempty"`
	// Backup configures online backups to object storage
	// (summaindex_backup_types.go).
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// Restore fills the new index's empty volume from a backup before the
	// engine starts; ignored once the volume holds the index.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// Phase is the coarse state of a SummaIndex.
// +kubebuilder:validation:Enum=Pending;Running;Draining;Restarting;Repairing;Suspended;Deleting;Failed
type Phase string

const (
	// PhasePending: the volume, pod or index is being created.
	PhasePending Phase = "Pending"
	// PhaseRunning: the engine serves the index.
	PhaseRunning Phase = "Running"
	// PhaseDraining: the engine is draining before a restart, suspension
	// or deletion.
	PhaseDraining Phase = "Draining"
	// PhaseRestarting: the old pod is stopping or the new one is starting.
	PhaseRestarting Phase = "Restarting"
	// PhaseRepairing: a doctor run is in progress.
	PhaseRepairing Phase = "Repairing"
	// PhaseSuspended: the engine is stopped on purpose; the volume is kept.
	PhaseSuspended Phase = "Suspended"
	// PhaseDeleting: the SummaIndex is being deleted.
	PhaseDeleting Phase = "Deleting"
	// PhaseFailed: the operator cannot make progress without help; the
	// conditions say why.
	PhaseFailed Phase = "Failed"
)

// Condition types of a SummaIndex.
const (
	// ConditionReady is True when the engine answers and the index is open.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the operator moves the index to a
	// new desired state (creation, restart, repair, deletion).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs attention, for example
	// a drain that timed out or durability the engine reports degraded.
	ConditionDegraded = "Degraded"
	// ConditionDoctorRequired is True when the engine reports quarantined
	// segments: set spec.doctor.requestId to repair them.
	ConditionDoctorRequired = "DoctorRequired"
	// ConditionReconciling is kstatus' standard condition (the one Flux
	// and every tool built on sigs.k8s.io/cli-utils read): True while the
	// operator works toward the spec (creating, waiting for the engine,
	// draining, restarting, suspending, resizing, a doctor run, a transient
	// failure it retries). Never True together with Stalled.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is kstatus' standard condition: True when progress
	// is blocked until a person acts (the Degraded causes that waiting
	// does not clear: an invalid pod, a refused expansion, a drain timeout,
	// a failed doctor run...). Its reason is the Degraded cause's.
	ConditionStalled = "Stalled"
)

// QuarantinedSegment is a segment the engine could not open.
type QuarantinedSegment struct {
	// ID of the segment, in lowercase hex.
	ID string `json:"id"`
	// Reason the engine gave.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Doctor run phases recorded in status.doctor.phase.
const (
	// DoctorPhasePending: the run was requested and nothing was done yet.
	DoctorPhasePending = "Pending"
	// DoctorPhaseBackingUp: the volume is being copied.
	DoctorPhaseBackingUp = "BackingUp"
	// DoctorPhaseDraining: the engine is draining and stopping.
	DoctorPhaseDraining = "Draining"
	// DoctorPhaseRunning: the doctor Job runs.
	DoctorPhaseRunning = "Running"
	// DoctorPhaseRestarting: the Job is done and the engine starts again.
	DoctorPhaseRestarting = "Restarting"
	// DoctorPhaseSucceeded: the run finished and its report is recorded.
	DoctorPhaseSucceeded = "Succeeded"
	// DoctorPhaseFailed: the run failed; the message says why.
	DoctorPhaseFailed = "Failed"
)

// DoctorStatus records the last doctor run.
type DoctorStatus struct {
	// RequestID of the run; a requestId recorded here never runs again.
	// +optional
	RequestID string `json:"requestId,omitempty"`
	// Phase of the run (Pending, BackingUp, Draining, Running, Restarting,
	// Succeeded, Failed).
	// +optional
	Phase string `json:"phase,omitempty"`
	// JobName of the doctor Job.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// BackupClaimName of the copy of the volume, when one was made.
	// +optional
	BackupClaimName string `json:"backupClaimName,omitempty"`
	// RemovedSegments are the IDs of the segments the doctor removed: the
	// first MaxRemovedSegments of them (RemovedSegmentCount is the exact
	// number; the full list is in the engine's report, ReportPath). The
	// bound is kept by the operator, not the schema, so that a status
	// written by an older operator stays valid.
	// +optional
	// +listType=atomic
	RemovedSegments []string `json:"removedSegments,omitempty"`
	// RemovedSegmentCount is the exact number of segments removed.
	// +optional
	RemovedSegmentCount int64 `json:"removedSegmentCount,omitempty"`
	// RemovedDocuments counts the documents lost with them.
	// +optional
	RemovedDocuments int64 `json:"removedDocuments,omitempty"`
	// CheckedSegments counts the segments the doctor validated.
	// +optional
	CheckedSegments int64 `json:"checkedSegments,omitempty"`
	// ReportPath is where the engine serves the run's full report (every
	// removed segment and why), with an admin token:
	// GET <ReportPath> on the engine's port.
	// +optional
	ReportPath string `json:"reportPath,omitempty"`
	// Message explains a failure.
	// +optional
	Message string `json:"message,omitempty"`
	// StartTime of the run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// History lists the last MaxDoctorHistory finished runs, newest last
	// (this one included once it ended): a requestId listed here, or the
	// one above, never runs again.
	// +optional
	// +listType=atomic
	History []DoctorRun `json:"history,omitempty"`
}

// MaxDoctorHistory bounds status.doctor.history.
const MaxDoctorHistory = 10

// MaxRemovedSegments bounds status.doctor.removedSegments.
const MaxRemovedSegments = 100

// MaxQuarantinedSegments bounds status.quarantinedSegments.
const MaxQuarantinedSegments = 100

// MaxQuarantineReasonLength bounds the reason of one status.quarantinedSegments entry.
const MaxQuarantineReasonLength = 256

// DoctorRun is one finished doctor run.
type DoctorRun struct {
	// RequestID of the run.
	RequestID string `json:"requestId"`
	// Phase it ended in: Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// RemovedSegmentCount is the number of segments it removed.
	// +optional
	RemovedSegmentCount int64 `json:"removedSegmentCount,omitempty"`
	// RemovedDocuments counts the documents lost with them.
	// +optional
	RemovedDocuments int64 `json:"removedDocuments,omitempty"`
	// BackupClaimName of its copy of the volume, when one was made.
	// +optional
	BackupClaimName string `json:"backupClaimName,omitempty"`
	// CompletionTime of the run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// SummaIndexStatus is the observed state of a SummaIndex.
type SummaIndexStatus struct {
	// Phase is the coarse state; the conditions are the source of truth.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// ObservedGeneration is the spec generation the status reflects. It
	// reads 0 until the operator's first pass (a default of the schema,
	// so that an index nobody reconciled yet never reads as done to a
	// GitOps tool: metadata.generation is at least 1).
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Message is one short line on what needs attention: the Degraded
	// condition's reason and message when it is True, else why the index
	// is not Ready; empty when all is well.
	// +optional
	Message string `json:"message,omitempty"`

	// Conditions: Ready, Progressing, Degraded, DoctorRequired, and
	// kstatus' Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Documents counts live, committed, searchable documents.
	// +optional
	Documents int64 `json:"documents,omitempty"`

	// Segments counts the live segments.
	// +optional
	Segments int64 `json:"segments,omitempty"`

	// Generation is the engine's commit generation of the index.
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// UncommittedDocuments counts accepted documents not yet committed.
	// +optional
	UncommittedDocuments int64 `json:"uncommittedDocuments,omitempty"`

	// LastObservedTime is when the operator read from the engine the
	// figures status shows (documents, segments, generation,
	// uncommittedDocuments, quarantinedSegments, durabilityDegraded). It
	// moves when they change, not at every read, so that an index at rest
	// costs no API writes: while Ready is True the operator long-polls the
	// engine, and these figures follow a commit within about two seconds
	// however old this time is.
	// +optional
	LastObservedTime *metav1.Time `json:"lastObservedTime,omitempty"`

	// QuarantinedSegments are the segments the engine could not open: the
	// first MaxQuarantinedSegments of them by ID, each reason cut to
	// MaxQuarantineReasonLength, so that a badly damaged index cannot push
	// the object past etcd's size limit (QuarantinedSegmentCount is exact).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	QuarantinedSegments []QuarantinedSegment `json:"quarantinedSegments,omitempty"`

	// QuarantinedSegmentCount is the number of quarantined segments.
	// +optional
	QuarantinedSegmentCount int64 `json:"quarantinedSegmentCount,omitempty"`

	// DurabilityDegraded is true when the engine reports that it could not
	// make its data durable.
	// +optional
	DurabilityDegraded bool `json:"durabilityDegraded,omitempty"`

	// Storage is the engine's data volume while the engine refuses writes
	// for lack of space (Degraded=StorageFull); absent otherwise.
	// +optional
	Storage *EngineStorage `json:"storage,omitempty"`

	// TerminationGracePeriodSeconds is the grace period given to the engine
	// pod, sized from DrainEstimateSeconds and clamped to the spec's bounds.
	// +optional
	TerminationGracePeriodSeconds int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// NextTerminationGracePeriodSeconds is the grace the next engine pod
	// gets when the drain estimate asks for another one than the running
	// pod has: a grace change never restarts the engine, it waits for the
	// next restart that happens anyway (a spec change, an upgrade, an
	// eviction). Absent when it equals the running pod's.
	// +optional
	NextTerminationGracePeriodSeconds int64 `json:"nextTerminationGracePeriodSeconds,omitempty"`

	// ShutdownDeadlineSeconds is the engine's own --shutdown-deadline,
	// a margin shorter than the grace period.
	// +optional
	ShutdownDeadlineSeconds int64 `json:"shutdownDeadlineSeconds,omitempty"`

	// DrainEstimateSeconds is the engine's estimate of the time a drain
	// takes now.
	// +optional
	// +kubebuilder:validation:Type=number
	// +kubebuilder:validation:Minimum=0
	DrainEstimateSeconds *float64 `json:"drainEstimateSeconds,omitempty"`

	// PodName of the engine pod.
	// +optional
	PodName string `json:"podName,omitempty"`

	// PodUID of the engine pod: the operator deletes it only with this UID
	// as a precondition.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`

	// CurrentRevision is the revision hash of the running engine pod.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the revision hash of the desired engine pod; it
	// differs from CurrentRevision while a restart is pending.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// DrainStartTime is when the current drain began; empty when no drain
	// is in progress.
	// +optional
	DrainStartTime *metav1.Time `json:"drainStartTime,omitempty"`

	// DrainFailures counts the drains in a row that did not finish within
	// spec.lifecycle.drainTimeoutSeconds; the next attempt waits an
	// exponential backoff after LastDrainFailureTime. Reset by a drain that
	// finishes.
	// +optional
	DrainFailures int32 `json:"drainFailures,omitempty"`

	// LastDrainFailureTime is when the last drain timed out.
	// +optional
	LastDrainFailureTime *metav1.Time `json:"lastDrainFailureTime,omitempty"`

	// Doctor records the last doctor run.
	// +optional
	Doctor *DoctorStatus `json:"doctor,omitempty"`

	// Access records the credentials and certificate the engine uses.
	// +optional
	Access *AccessStatus `json:"access,omitempty"`

	// Volume is the data volume's size and any resize in progress.
	// +optional
	Volume *VolumeStatus `json:"volume,omitempty"`

	// Replicas shows the read followers.
	// +optional
	Replicas *ReplicasStatus `json:"replicas,omitempty"`
	// LastBackup is the newest completed backup of the index.
	// +optional
	LastBackup *LastBackup `json:"lastBackup,omitempty"`

	// Restore records the restore of spec.restore.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`
}

// SummaIndex is one search index: a summa-server pod, the volume holding
// its data and a Service in front of it, managed by the Summa operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="summa.dev/crd-revision=6"
// +kubebuilder:resource:path=summaindexes,singular=summaindex,scope=Namespaced,shortName=sidx,categories=summa
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Documents",type=integer,JSONPath=`.status.documents`
// +kubebuilder:printcolumn:name="Segments",type=integer,JSONPath=`.status.segments`
// +kubebuilder:printcolumn:name="Replicas",type=string,JSONPath=`.status.replicas.summary`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
// +kubebuilder:printcolumn:name="Grace",type=integer,JSONPath=`.status.terminationGracePeriodSeconds`,priority=1
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.podName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, at most 63 characters): it names the engine Service"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.replicas) || self.spec.replicas == 0 || size(self.metadata.name) <= 58",message="with spec.replicas, metadata.name has at most 58 characters: it names the read Service <name>-read"
type SummaIndex struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec SummaIndexSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	// +kubebuilder:default={}
	Status SummaIndexStatus `json:"status,omitempty"`
}

// SummaIndexList is a list of SummaIndex.
//
// +kubebuilder:object:root=true
type SummaIndexList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SummaIndexes.
	Items []SummaIndex `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SummaIndex{}, &SummaIndexList{})
}
