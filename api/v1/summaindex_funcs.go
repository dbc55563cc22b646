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
	if e.LogLevel != "" {
		args = append(args, "--log-level="+string(e.LogLevel))
	}
	return args
}
