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

// Descriptions of the volume's state, collected at scrape time.
var (
	descStorageFree = newDesc("summa_storage_free_bytes",
		"Free bytes of the data directory's volume that writes may use.")
	descStorageUsed = newDesc("summa_storage_used_bytes",
		"Used bytes of the data directory's volume.")
	descStorageReserve = newDesc("summa_storage_reserve_bytes",
		"Free space below which writes are refused (--min-free-bytes).")
	descStorageFull = newDesc("summa_storage_full",
		"1 while ingestion, commits and maintenance are refused for lack of space (507 StorageFull).")
)

// storageCollector reads the volume at scrape time.
type storageCollector struct {
	// r is the observed registry.
	r *registry.Registry
}

// Describe sends every description.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStorageFree, descStorageUsed, descStorageReserve, descStorageFull} {
		ch <- d
	}
}

// Collect sends the volume's figures; none when statfs failed.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.r.Storage()
	if err != nil {
		return // the data directory is not on the operating system's filesystem
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{descStorageFree, float64(st.FreeBytes)}, {descStorageUsed, float64(st.UsedBytes)},
		{descStorageReserve, float64(st.ReserveBytes)}, {descStorageFull, boolValue(st.Full)}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v)
	}
}
