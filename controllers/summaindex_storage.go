package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// A full engine volume: the engine refuses ingestion and commits with 507
// StorageFull while its data volume has less free space than its reserve
// (--min-free-bytes) or a write met ENOSPC, and reports the volume in
// GET /v1/indexes/{index} as "storage". The operator keeps the figures in
// status.storage while the engine refuses writes and sets
// Degraded=StorageFull from them (degradedCauses); a Warning event marks
// the moment the volume filled, and the usual Recovered event the moment
// Degraded clears.

// ReasonStorageFull: the engine's data volume is full; ingestion and
// commits answer 507 StorageFull.
const ReasonStorageFull = "StorageFull"

// observeStorage copies the engine's storage report into index's status: the
// figures while the engine refuses writes, nothing otherwise; and grows
// the volume when spec.storage.autoGrow asks for it (autoGrow).
func (r *SummaIndexReconciler) observeStorage(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, st *client.StorageStatus) {
	r.autoGrow(ctx, index, st)
	if st == nil || !st.Full {
		index.Status.Storage = nil
		return
	}
	was := index.Status.Storage
	index.Status.Storage = &summav1.EngineStorage{FreeBytes: st.FreeBytes, UsedBytes: st.UsedBytes, Full: true}
	if was == nil {
		r.event(index, pod, corev1.EventTypeWarning, ReasonStorageFull, "%s", storageMessage(index.Status.Storage))
	}
}

// storageCauses is Degraded=StorageFull while status.storage says the
// engine refuses writes.
func storageCauses(index *summav1.SummaIndex) []cause {
	st := index.Status.Storage
	if st == nil || !st.Full {
		return nil
	}
	return []cause{{ReasonStorageFull, storageMessage(st)}}
}

// storageMessage says how full the volume is and what to do.
func storageMessage(st *summav1.EngineStorage) string {
	return fmt.Sprintf("the engine's data volume is full: %s free, %s used; ingestion and commits answer "+
		"507 StorageFull (nothing acknowledged is lost) until space is freed or spec.storage.size grows",
		bytesString(st.FreeBytes), bytesString(st.UsedBytes))
}

// bytesString formats n bytes as a binary quantity (e.g. 12Mi, 1536Ki).
func bytesString(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
