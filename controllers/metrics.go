package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
