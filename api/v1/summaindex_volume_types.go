package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Volume resize states shown in status.volume.resize.
const (
	// VolumeResizeNone: the volume has the size it asks for.
	VolumeResizeNone = ""
	// VolumeResizePending: a larger size was asked for and the storage
	// has not started on it yet.
	VolumeResizePending = "Pending"
	// VolumeResizeInProgress: the storage grows the volume (the claim's
	// Resizing condition).
	VolumeResizeInProgress = "Resizing"
	// VolumeResizeFileSystemPending: the volume grew and its file system
	// grows when the kubelet next mounts it (FileSystemResizePending).
	VolumeResizeFileSystemPending = "FileSystemResizePending"
	// VolumeResizeFailed: the storage reported a failed expansion.
	VolumeResizeFailed = "Failed"
	// VolumeResizeRefused: the storage class does not allow expansion.
	VolumeResizeRefused = "Refused"
)

// VolumeStatus is the data volume as the cluster reports it.
type VolumeStatus struct {
	// ClaimName is the PersistentVolumeClaim of the data.
	// +optional
	ClaimName string `json:"claimName,omitempty"`

	// Requested is the size the claim asks for.
	// +optional
	Requested *resource.Quantity `json:"requested,omitempty"`

	// Capacity is the size the volume has (the claim's status.capacity).
	// +optional
	Capacity *resource.Quantity `json:"capacity,omitempty"`

	// Resize is where a growth of the volume stands: empty, Pending,
	// Resizing, FileSystemResizePending, Failed or Refused.
	// +optional
	Resize string `json:"resize,omitempty"`

	// Message says what the storage reported about the resize.
	// +optional
	Message string `json:"message,omitempty"`
}
