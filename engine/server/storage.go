package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/registry"
)

// retryStorageFull is the Retry-After of a 507 StorageFull: space returns
// by an operator's action, not within a second.
const retryStorageFull = 10 * time.Second

// storageFull is the answer to a write the volume cannot take: 507
// StorageFull, retryable.
func storageFull(err error) *apiError {
	e := newError(http.StatusInsufficientStorage, CodeStorageFull,
		"%v; nothing acknowledged changed: retry once space returns", err)
	e.retryable, e.retryAfter, e.cause = true, retryStorageFull, err
	return e
}

// toStorageStatus is the STATUS "storage" object of a volume state.
func toStorageStatus(st *diskspace.State) *client.StorageStatus {
	if st == nil {
		return nil
	}
	return &client.StorageStatus{FreeBytes: st.FreeBytes, UsedBytes: st.UsedBytes, Full: st.Full}
}

// storageGauges are the volume's figures.
var storageGauges = []gauge[diskspace.State]{
	{newDesc("summa_storage_free_bytes", "Free bytes of the data directory's volume that writes may use."),
		func(st diskspace.State) float64 { return float64(st.FreeBytes) }},
	{newDesc("summa_storage_used_bytes", "Used bytes of the data directory's volume."),
		func(st diskspace.State) float64 { return float64(st.UsedBytes) }},
	{newDesc("summa_storage_reserve_bytes", "Free space below which writes are refused (--min-free-bytes)."),
		func(st diskspace.State) float64 { return float64(st.ReserveBytes) }},
	{newDesc("summa_storage_full", "1 while ingestion, commits and maintenance are refused for lack of space (507 StorageFull)."),
		func(st diskspace.State) float64 { return boolValue(st.Full) }},
}

// storageCollector reads the volume at scrape time.
type storageCollector struct {
	// r is the observed registry.
	r *registry.Registry
}

// Describe sends every description.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	describeGauges(ch, storageGauges)
}

// Collect sends the volume's figures; none when statfs failed.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.r.Storage()
	if err != nil {
		return // the data directory is not on the operating system's filesystem
	}
	collectGauges(ch, storageGauges, st)
}
