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
	drainsTotal = newCounterVec("summa_operator_drains_total",
		"Engine drains started by the operator, by purpose (restart, suspend, doctor, delete) and result (drained, timeout).",
		"purpose", "result")
	// drainSeconds observes how long drains took.
	drainSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "summa_operator_drain_duration_seconds",
		Help:    "Time from POST /v1/admin/drain to drained (or to the timeout), by purpose.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	}, []string{"purpose"})
	// restartsTotal counts engine pods the operator deleted to replace.
	restartsTotal = newCounterVec("summa_operator_pod_restarts_total",
		"Engine pods deleted by the operator, by purpose (restart, suspend, doctor, delete).", "purpose")
	// doctorRunsTotal counts finished doctor runs.
	doctorRunsTotal = newCounterVec("summa_operator_doctor_runs_total",
		"Doctor runs finished, by result (succeeded, failed).", "result")
	// reconcileErrorsTotal counts reconciles that returned an error.
	reconcileErrorsTotal = newCounterVec("summa_operator_reconcile_errors_total",
		"SummaIndex reconciles that failed, by the phase the index was in.", "phase")
)

func init() {
	metrics.Registry.MustRegister(drainsTotal, drainSeconds, restartsTotal, doctorRunsTotal, reconcileErrorsTotal)
}

// indexLabels are the labels of the per-index series.
var indexLabels = []string{"namespace", "index"}

// indexGauge is a per-index gauge, set from each SummaIndex's status at
// the end of every reconcile pass (recordIndexMetrics) and deleted with
// the index (forgetIndexMetrics): its vector (labels indexLabels) and how
// its value is read from the index; ok false deletes the index's series
// (the status has no such value).
type indexGauge struct {
	vec   *prometheus.GaugeVec
	value func(x *summav1.SummaIndex) (v float64, ok bool)
}

// indexGauges are the per-index gauges keyed by namespace and index only:
// the conditions, then the figures of status.
var indexGauges = []indexGauge{
	{newIndexGauge("summa_index_ready", "1 while the SummaIndex's Ready condition is True, else 0."),
		conditionValue(summav1.ConditionReady)},
	{newIndexGauge("summa_index_degraded", "1 while the SummaIndex's Degraded condition is True, else 0 (the reason is on summa_index_info)."),
		conditionValue(summav1.ConditionDegraded)},
	{newIndexGauge("summa_index_doctor_required", "1 while the SummaIndex's DoctorRequired condition is True: the engine refused to open the index and waits for a doctor run."),
		conditionValue(summav1.ConditionDoctorRequired)},
	{newIndexGauge("summa_index_documents", "Live, committed, searchable documents (status.documents)."),
		func(x *summav1.SummaIndex) (float64, bool) { return float64(x.Status.Documents), true }},
	{newIndexGauge("summa_index_segments", "Metadata-live segments (status.segments)."),
		func(x *summav1.SummaIndex) (float64, bool) { return float64(x.Status.Segments), true }},
	{newIndexGauge("summa_index_uncommitted_documents", "Accepted operations not yet committed (status.uncommittedDocuments)."),
		func(x *summav1.SummaIndex) (float64, bool) { return float64(x.Status.UncommittedDocuments), true }},
	{newIndexGauge("summa_index_quarantined_segments", "Segments excluded from search because they failed to open (status.quarantinedSegments)."),
		quarantinedCount},
	{newIndexGauge("summa_index_durability_degraded", "1 when a directory fsync after a commit failed: crash durability is degraded (status.durabilityDegraded)."),
		func(x *summav1.SummaIndex) (float64, bool) { return boolGauge(x.Status.DurabilityDegraded), true }},
	{newIndexGauge("summa_index_drain_estimate_seconds", "How long a drain of the engine would take now (status.drainEstimateSeconds; absent when unknown)."),
		drainEstimate},
}

// quarantinedCount is the number of quarantined segments: the exact count
// when status keeps one, else the length of its bounded list.
func quarantinedCount(x *summav1.SummaIndex) (float64, bool) {
	return float64(max(x.Status.QuarantinedSegmentCount, int64(len(x.Status.QuarantinedSegments)))), true
}

// drainEstimate is status.drainEstimateSeconds, absent when unknown.
func drainEstimate(x *summav1.SummaIndex) (float64, bool) {
	if e := x.Status.DrainEstimateSeconds; e != nil {
		return *e, true
	}
	return 0, false
}

// indexInfo is always 1; its labels carry the phase and the reasons of
// the Ready and Degraded conditions.
var indexInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "summa_index_info",
	Help: "Always 1: the SummaIndex's phase and the reasons of its Ready and Degraded conditions (empty when absent).",
}, []string{"namespace", "index", "phase", "ready_reason", "degraded_reason"})

func init() {
	for _, g := range indexGauges {
		metrics.Registry.MustRegister(g.vec)
	}
	metrics.Registry.MustRegister(indexInfo)
}

// conditionGauge returns 1 when index's condition t is True, else 0, and
// its reason (empty when it is absent).
func conditionGauge(x *summav1.SummaIndex, t string) (float64, string) {
	c := meta.FindStatusCondition(x.Status.Conditions, t)
	if c == nil {
		return 0, ""
	}
	if c.Status == metav1.ConditionTrue {
		return 1, c.Reason
	}
	return 0, c.Reason
}

// conditionValue reads 1 while condition t is True, else 0.
func conditionValue(t string) func(*summav1.SummaIndex) (float64, bool) {
	return func(x *summav1.SummaIndex) (float64, bool) {
		v, _ := conditionGauge(x, t)
		return v, true
	}
}

// recordIndexMetrics sets the per-index gauges from index's status.
func recordIndexMetrics(index *summav1.SummaIndex) {
	ns, name := index.Namespace, index.Name
	for _, g := range indexGauges {
		if v, ok := g.value(index); ok {
			g.vec.WithLabelValues(ns, name).Set(v)
		} else {
			g.vec.DeleteLabelValues(ns, name)
		}
	}
	_, readyReason := conditionGauge(index, summav1.ConditionReady)
	degraded, degradedReason := conditionGauge(index, summav1.ConditionDegraded)
	if degraded == 0 {
		degradedReason = ""
	}
	// One info series per index: the old one goes when a label changes.
	indexInfo.DeletePartialMatch(prometheus.Labels{"namespace": ns, "index": name})
	indexInfo.WithLabelValues(ns, name, string(index.Status.Phase), readyReason, degradedReason).Set(1)
}

// forgetIndexMetrics deletes the per-index series of a deleted index.
func forgetIndexMetrics(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "index": name}
	for _, g := range indexGauges {
		g.vec.DeletePartialMatch(l)
	}
	indexInfo.DeletePartialMatch(l)
	forgetBackupMetrics(namespace, name)
}

// newIndexGauge is a gauge vector keyed by namespace and index.
func newIndexGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, indexLabels)
}

// newCounterVec is a counter of the given variable labels.
func newCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// boolGauge is 1 for true, else 0.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
