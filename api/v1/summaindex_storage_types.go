package v1

import "k8s.io/apimachinery/pkg/api/resource"

// EngineStorage is the engine's data volume as the engine reported it
// (GET /v1/indexes/{index}, "storage") while it refuses writes for lack
// of space: ingestion and commits answer 507 StorageFull until space is
// freed or the volume grows.
type EngineStorage struct {
	// FreeBytes is the free space the engine may still use.
	FreeBytes int64 `json:"freeBytes"`
	// UsedBytes is the space in use on the volume.
	UsedBytes int64 `json:"usedBytes"`
	// Full is true while the engine refuses writes.
	// +optional
	Full bool `json:"full,omitempty"`
}

// AutoGrow lets the operator grow the data volume by itself when the
// engine reports it nearly full, up to MaxSize, when the storage class
// allows volume expansion (spec.storage.autoGrow).
type AutoGrow struct {
	// MaxSize is the largest size the operator grows the volume to.
	// +required
	MaxSize resource.Quantity `json:"maxSize"`
	// ThresholdPercent is the share of the volume in use, as the engine
	// reports it, from which the volume grows (and always while the
	// engine refuses writes for lack of space). Default 90.
	// +optional
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=99
	ThresholdPercent *int32 `json:"thresholdPercent,omitempty"`
}

// DefaultAutoGrowThresholdPercent is AutoGrow.ThresholdPercent's default.
const DefaultAutoGrowThresholdPercent = 90

// Threshold returns ThresholdPercent or its default.
func (a *AutoGrow) Threshold() int32 {
	if a.ThresholdPercent == nil {
		return DefaultAutoGrowThresholdPercent
	}
	return *a.ThresholdPercent
}
