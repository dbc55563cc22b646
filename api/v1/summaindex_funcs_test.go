package v1

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNames(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "articles"}}
	for _, c := range []struct{ got, want string }{
		{x.DataClaimName(), "articles-data"},
		{x.ServiceName(), "articles"},
		{x.BackupClaimName("r1"), "articles-backup-r1"},
		{x.DoctorJobName("r1"), "articles-doctor-r1"},
		{x.Labels()[LabelManagedBy], "summa-operator"},
		{x.Labels()[LabelIndex], "articles"},
		{Finalizer, "summa.dev/deletion"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestDoctorJobNameFitsALabel(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 63)}}
	a, b := x.DoctorJobName("first"), x.DoctorJobName("second")
	if len(a) > 63 || len(b) > 63 {
		t.Fatalf("names too long: %d, %d", len(a), len(b))
	}
	if a == b {
		t.Fatalf("two requests share the Job name %q", a)
	}
	if a != x.DoctorJobName("first") {
		t.Fatal("the Job name is not stable")
	}
}

func TestDefaultsWithoutTheAPIServer(t *testing.T) {
	var spec SummaIndexSpec
	if got := spec.Storage.EffectiveReclaimPolicy(); got != ReclaimRetain {
		t.Errorf("reclaim policy %q", got)
	}
	if got := spec.Doctor.EffectiveBackup(); got != BackupCopy {
		t.Errorf("backup %q", got)
	}
	if lo, hi := spec.Lifecycle.GraceBounds(); lo != 30 || hi != 1800 {
		t.Errorf("grace bounds %d, %d", lo, hi)
	}
	if got := spec.Lifecycle.DrainTimeout(); got != 600*time.Second {
		t.Errorf("drain timeout %v", got)
	}
}

func TestConditions(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	if x.IsReady() {
		t.Fatal("ready without a condition")
	}
	if !x.SetCondition(ConditionReady, metav1.ConditionTrue, "EngineReady", "") {
		t.Fatal("setting a new condition reported no change")
	}
	if x.SetCondition(ConditionReady, metav1.ConditionTrue, "EngineReady", "") {
		t.Fatal("setting the same condition reported a change")
	}
	if !x.IsReady() || x.GetCondition(ConditionReady).ObservedGeneration != 4 {
		t.Fatalf("condition %+v", x.GetCondition(ConditionReady))
	}
	if !x.RemoveCondition(ConditionReady) || x.GetCondition(ConditionReady) != nil {
		t.Fatal("condition not removed")
	}
}

func TestEngineArgs(t *testing.T) {
	if args := (&EngineSpec{}).Args(); len(args) != 0 {
		t.Fatalf("unset tunables gave flags %v", args)
	}
	e := EngineSpec{
		OptimizerThreads:             ptr.To[int32](0),
		OptimizerScanIntervalSeconds: ptr.To[int32](90),
		BPTimeBudgetSeconds:          ptr.To[int32](60),
		BPMemoryBudgetMB:             ptr.To[int32](512),
		AutocommitIntervalSeconds:    ptr.To[int32](0),
		MaxRequestBytes:              ptr.To(resource.MustParse("16Mi")),
		LogLevel:                     "debug",
	}
	want := []string{
		"--optimizer-threads=0",
		"--optimizer-scan-interval=1m30s",
		"--bp-time-budget=1m0s",
		"--bp-memory-budget-mb=512",
		"--autocommit-interval=0s",
		"--max-request-bytes=16777216",
		"--log-level=debug",
	}
	if got := e.Args(); !slices.Equal(got, want) {
		t.Fatalf("args\n got %v\nwant %v", got, want)
	}
}
