package controllers

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	summav1 "github.com/summadev/summa/api/v1"
)

// metricsIndex is a SummaIndex whose status has every field the per-index
// gauges read.
func metricsIndex(ns, name string) *summav1.SummaIndex {
	est := 2.5
	x := &summav1.SummaIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	x.Status = summav1.SummaIndexStatus{
		Phase:                summav1.PhaseRunning,
		Documents:            1200,
		Segments:             7,
		UncommittedDocuments: 30,
		QuarantinedSegments:  []summav1.QuarantinedSegment{{}, {}},
		DurabilityDegraded:   true,
		DrainEstimateSeconds: &est,
		Conditions: []metav1.Condition{
			{Type: summav1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running"},
			{Type: summav1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonVolumeExpansionRefused},
			{Type: summav1.ConditionDoctorRequired, Status: metav1.ConditionFalse, Reason: "Healthy"},
		},
	}
	return x
}

// TestIndexMetricsSetAndForgotten checks that recordIndexMetrics sets every
// per-index gauge from the status, follows a change of the reasons with
// one info series, and that forgetIndexMetrics removes them all.
func TestIndexMetricsSetAndForgotten(t *testing.T) {
	const ns, name = "metrics-test", "books"
	x := metricsIndex(ns, name)
	recordIndexMetrics(x)
	for metric, want := range map[string]float64{
		"summa_index_ready": 1, "summa_index_documents": 1200, "summa_index_segments": 7,
		"summa_index_quarantined_segments": 2, "summa_index_uncommitted_documents": 30,
		"summa_index_durability_degraded": 1, "summa_index_drain_estimate_seconds": 2.5,
		"summa_index_degraded": 1, "summa_index_doctor_required": 0,
	} {
		if got := testutil.ToFloat64(indexGaugeNamed(t, metric).WithLabelValues(ns, name)); got != want {
			t.Errorf("%s: %v, want %v", metric, got, want)
		}
	}
	if got := testutil.ToFloat64(indexInfo.WithLabelValues(ns, name, "Running", "Running", ReasonVolumeExpansionRefused)); got != 1 {
		t.Errorf("summa_index_info: %v", got)
	}

	// Not ready, no longer degraded, no drain estimate.
	x.Status.Conditions[0] = metav1.Condition{Type: summav1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonEngineUnreachable}
	x.Status.Conditions[1].Status = metav1.ConditionFalse
	x.Status.DrainEstimateSeconds = nil
	recordIndexMetrics(x)
	if got := testutil.ToFloat64(indexGaugeNamed(t, "summa_index_ready").WithLabelValues(ns, name)); got != 0 {
		t.Errorf("summa_index_ready after the engine became unreachable: %v", got)
	}
	if n := countSeries(t, indexInfo, ns, name); n != 1 {
		t.Errorf("%d summa_index_info series, want 1", n)
	}
	if got := testutil.ToFloat64(indexInfo.WithLabelValues(ns, name, "Running", ReasonEngineUnreachable, "")); got != 1 {
		t.Errorf("summa_index_info with ready_reason EngineUnreachable: %v", got)
	}
	if n := countSeries(t, indexGaugeNamed(t, "summa_index_drain_estimate_seconds"), ns, name); n != 0 {
		t.Errorf("summa_index_drain_estimate_seconds kept without an estimate")
	}

	// Another index is left alone by the deletion.
	recordIndexMetrics(metricsIndex(ns, "other"))
	forgetIndexMetrics(ns, name)
	for _, g := range indexGauges {
		if n := countSeries(t, g.vec, ns, name); n != 0 {
			t.Errorf("%d series of the deleted index left in %v", n, g.vec)
		}
	}
	if n := countSeries(t, indexInfo, ns, name); n != 0 {
		t.Errorf("%d summa_index_info series of the deleted index left", n)
	}
	if n := countSeries(t, indexGaugeNamed(t, "summa_index_documents"), ns, "other"); n != 1 {
		t.Errorf("the other index's series were deleted too")
	}
	forgetIndexMetrics(ns, "other")
}

// indexGaugeNamed returns the per-index gauge vector of metric.
func indexGaugeNamed(t *testing.T, metric string) *prometheus.GaugeVec {
	t.Helper()
	for _, g := range indexGauges {
		ch := make(chan *prometheus.Desc, 1)
		g.vec.Describe(ch)
		if strings.Contains((<-ch).String(), `fqName: "`+metric+`"`) {
			return g.vec
		}
	}
	t.Fatalf("no per-index gauge %s", metric)
	return nil
}

// countSeries counts the series of c labelled namespace ns and index name.
func countSeries(t *testing.T, c prometheus.Collector, ns, name string) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == ns && l["index"] == name {
				n++
			}
		}
	}
	return n
}

// TestOperatorMetricsExposition writes the text exposition of the
// operator's metrics registry (controller-runtime's metrics and ours, one
// index recorded, one drain and one error counted) to $SUMMA_METRICS_OUT,
// for `make check-monitoring` to lint with `promtool check metrics`.
// Without the variable it only checks that the registry gathers.
func TestOperatorMetricsExposition(t *testing.T) {
	x := metricsIndex("exposition", "books")
	recordIndexMetrics(x)
	defer forgetIndexMetrics("exposition", "books")
	drainsTotal.WithLabelValues("restart", "drained").Add(0)
	drainSeconds.WithLabelValues("restart")
	restartsTotal.WithLabelValues("restart").Add(0)
	doctorRunsTotal.WithLabelValues("succeeded").Add(0)
	reconcileErrorsTotal.WithLabelValues("Running").Add(0)
	backupsTotal.WithLabelValues("exposition", "books", "Completed").Add(0)
	backupSchedulePeriod.WithLabelValues("exposition", "books").Set(3600)
	lastBackupSuccess.WithLabelValues("exposition", "books").Set(1.7e9)
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(b.String(), `summa_index_documents{index="books",namespace="exposition"} 1200`) {
		t.Errorf("the exposition lacks the per-index gauges:\n%s", b.String())
	}
	if out := os.Getenv("SUMMA_METRICS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
