package v1

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
