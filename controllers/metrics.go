package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	summav1 "github.com/summadev/summa/api/v1"
)

// The operator's Prometheus metrics, served with controller-runtime's on
// the manager's metrics endpoint.
var (
	// drainsTotal counts finished drains by purpose and result.
	drainsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "summa_operator_drains_total",
		Help: "Engine drains started by the operator, by purpose (restart, suspend, doctor, delete) and result (drained, timeout).",
	}, []string{"purpose", "result"})
	// drainSeconds observes how long drains took.
	drainSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "summa_operator_drain_duration_seconds",
		Help:    "Time from POST /v1/admin/drain to drained (or to the timeout), by purpose.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	}, []string{"purpose"})
	// restartsTotal counts engine pods the operator deleted to replace.
	restartsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "summa_operator_pod_restarts_total",
		Help: "Engine pods deleted by the operator, by purpose (restart, suspend, doctor, delete).",
	}, []string{"purpose"})
	// doctorRunsTotal counts finished doctor runs.
	doctorRunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "summa_operator_doctor_runs_total",
		Help: "Doctor runs finished, by result (succeeded, failed).",
	}, []string{"result"})
	// reconcileErrorsTotal counts reconciles that returned an error.
	reconcileErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "summa_operator_reconcile_errors_total",
		Help: "SummaIndex reconciles that failed, by the phase the index was in.",
	}, []string{"phase"})
)

func init() {
	metrics.Registry.MustRegister(drainsTotal, drainSeconds, restartsTotal, doctorRunsTotal, reconcileErrorsTotal)
}

// Per-index gauges, set from each SummaIndex's status at the end of every
// reconcile pass (recordIndexMetrics) and deleted with the index
// (forgetIndexMetrics). Labels: namespace and index.
var (
	indexLabels = []string{"namespace", "index"}
	// indexReady is 1 while the Ready condition is True.
	indexReady = indexGauge("summa_index_ready",
		"1 while the SummaIndex's Ready condition is True, else 0.")
	// indexDocuments is status.documents.
	indexDocuments = indexGauge("summa_index_documents",
		"Live, committed, searchable documents (status.documents).")
	// indexSegments is status.segments.
	indexSegments = indexGauge("summa_index_segments",
		"Metadata-live segments (status.segments).")
	// indexQuarantined counts status.quarantinedSegments.
	indexQuarantined = indexGauge("summa_index_quarantined_segments",
		"Segments excluded from search because they failed to open (status.quarantinedSegments).")
	// indexUncommitted is status.uncommittedDocuments.
	indexUncommitted = indexGauge("summa_index_uncommitted_documents",
		"Accepted operations not yet committed (status.uncommittedDocuments).")
	// indexDurabilityDegraded is status.durabilityDegraded.
	indexDurabilityDegraded = indexGauge("summa_index_durability_degraded",
		"1 when a directory fsync after a commit failed: crash durability is degraded (status.durabilityDegraded).")
	// indexDrainEstimate is status.drainEstimateSeconds (absent when the
	// status has none).
	indexDrainEstimate = indexGauge("summa_index_drain_estimate_seconds",
		"How long a drain of the engine would take now (status.drainEstimateSeconds; absent when unknown).")
	// indexDegraded is 1 while the Degraded condition is True.
	indexDegraded = indexGauge("summa_index_degraded",
		"1 while the SummaIndex's Degraded condition is True, else 0 (the reason is on summa_index_info).")
	// indexDoctorRequired is 1 while the DoctorRequired condition is True.
	indexDoctorRequired = indexGauge("summa_index_doctor_required",
		"1 while the SummaIndex's DoctorRequired condition is True: the engine refused to open the index and waits for a doctor run.")
	// indexInfo is always 1; its labels carry the phase and the reasons of
	// the Ready and Degraded conditions.
	indexInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "summa_index_info",
		Help: "Always 1: the SummaIndex's phase and the reasons of its Ready and Degraded conditions (empty when absent).",
	}, []string{"namespace", "index", "phase", "ready_reason", "degraded_reason"})

	// indexGauges are the vectors keyed by namespace and index only.
	indexGauges = []*prometheus.GaugeVec{indexReady, indexDocuments, indexSegments, indexQuarantined,
		indexUncommitted, indexDurabilityDegraded, indexDrainEstimate, indexDegraded, indexDoctorRequired}
)

func init() {
	for _, g := range indexGauges {
		metrics.Registry.MustRegister(g)
	}
	metrics.Registry.MustRegister(indexInfo)
}

// recordIndexMetrics sets the per-index gauges from index's status.
func recordIndexMetrics(index *summav1.SummaIndex) {
	ns, name := index.Namespace, index.Name
	st := &index.Status
	cond := func(t string) (float64, string) {
		c := meta.FindStatusCondition(st.Conditions, t)
		if c == nil {
			return 0, ""
		}
		if c.Status == metav1.ConditionTrue {
			return 1, c.Reason
		}
		return 0, c.Reason
	}
	ready, readyReason := cond(summav1.ConditionReady)
	degraded, degradedReason := cond(summav1.ConditionDegraded)
	doctor, _ := cond(summav1.ConditionDoctorRequired)
	if degraded == 0 {
		degradedReason = ""
	}
	indexReady.WithLabelValues(ns, name).Set(ready)
	indexDocuments.WithLabelValues(ns, name).Set(float64(st.Documents))
	indexSegments.WithLabelValues(ns, name).Set(float64(st.Segments))
	indexQuarantined.WithLabelValues(ns, name).Set(float64(max(st.QuarantinedSegmentCount, int64(len(st.QuarantinedSegments)))))
	indexUncommitted.WithLabelValues(ns, name).Set(float64(st.UncommittedDocuments))
	indexDurabilityDegraded.WithLabelValues(ns, name).Set(boolGauge(st.DurabilityDegraded))
	if st.DrainEstimateSeconds != nil {
		indexDrainEstimate.WithLabelValues(ns, name).Set(*st.DrainEstimateSeconds)
	} else {
		indexDrainEstimate.DeleteLabelValues(ns, name)
	}
	indexDegraded.WithLabelValues(ns, name).Set(degraded)
	indexDoctorRequired.WithLabelValues(ns, name).Set(doctor)
	// One info series per index: the old one goes when a label changes.
	indexInfo.DeletePartialMatch(prometheus.Labels{"namespace": ns, "index": name})
	indexInfo.WithLabelValues(ns, name, string(st.Phase), readyReason, degradedReason).Set(1)
}

// forgetIndexMetrics deletes the per-index series of a deleted index.
func forgetIndexMetrics(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "index": name}
	for _, g := range indexGauges {
		g.DeletePartialMatch(l)
	}
	indexInfo.DeletePartialMatch(l)
	forgetBackupMetrics(namespace, name)
}

// indexGauge is a gauge vector keyed by namespace and index.
func indexGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, indexLabels)
}

// boolGauge is 1 for true, else 0.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
