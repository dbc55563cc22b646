package controllers

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

func degradedOf(x *summav1.SummaIndex) (bool, string) {
	c := x.GetCondition(summav1.ConditionDegraded)
	if c == nil {
		return false, ""
	}
	return c.Status == metav1.ConditionTrue, c.Reason
}

func TestDegradedClearsWhenARestartIsNoLongerPending(t *testing.T) {
	x := podTestIndex()
	x.Status.DrainFailures = 2
	x.Status.LastDrainFailureTime = &metav1.Time{Time: time.Now()}
	setDegraded(x, degradedCauses(x, nil))
	if on, reason := degradedOf(x); !on || reason != ReasonDrainTimeout {
		t.Fatalf("timed-out drains: Degraded %v %s", on, reason)
	}
	// The spec went back (reconcileEngine forgets the drain failures when
	// no restart is pending): nothing holds any more.
	x.Status.DrainFailures, x.Status.LastDrainFailureTime = 0, nil
	if was := setDegraded(x, degradedCauses(x, nil)); was != ReasonDrainTimeout {
		t.Errorf("recovery from %q reported, want DrainTimeout", was)
	}
	if on, reason := degradedOf(x); on || reason != "Recovered" {
		t.Fatalf("Degraded sticks: %v %s", on, reason)
	}
}

func TestAnOldDoctorFailureDoesNotKeepTheIndexDegraded(t *testing.T) {
	x := podTestIndex()
	x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1", Phase: summav1.DoctorPhaseFailed, Message: "job failed"}
	setCondition(x, summav1.ConditionReady, false, "PodCreated", "")
	setDegraded(x, degradedCauses(x, nil))
	if on, reason := degradedOf(x); !on || reason != ReasonDoctorFailed {
		t.Fatalf("a failed run with the engine not back: Degraded %v %s", on, reason)
	}
	// The engine serves again and nothing is quarantined.
	setCondition(x, summav1.ConditionReady, true, "EngineReady", "")
	setCondition(x, summav1.ConditionDoctorRequired, false, "NoQuarantine", "")
	setDegraded(x, degradedCauses(x, nil))
	if on, _ := degradedOf(x); on {
		t.Fatal("an old doctor failure keeps Degraded on a serving, healthy index")
	}
	// Quarantined segments remain: the failure still matters.
	setCondition(x, summav1.ConditionDoctorRequired, true, "SegmentsQuarantined", "")
	setDegraded(x, degradedCauses(x, nil))
	if on, reason := degradedOf(x); !on || reason != ReasonDoctorFailed {
		t.Fatalf("a failed run with quarantine left: Degraded %v %s", on, reason)
	}
}

func TestDegradedNamesThePassesFailureFirstAndEveryCause(t *testing.T) {
	x := podTestIndex()
	x.Status.DurabilityDegraded = true
	f := failures{failed(ReasonServiceFailed, errors.New("service refused"))}
	setDegraded(x, degradedCauses(x, f))
	c := x.GetCondition(summav1.ConditionDegraded)
	if c.Reason != ReasonServiceFailed || c.Message != "ServiceFailed: service refused; DurabilityDegraded: a directory fsync failed after a commit; the engine's disk needs attention" {
		t.Fatalf("Degraded %s: %s", c.Reason, c.Message)
	}
	x.Status.DurabilityDegraded = false
	setDegraded(x, degradedCauses(x, nil))
	if on, _ := degradedOf(x); on {
		t.Fatal("Degraded sticks after every cause went")
	}
}

func TestUnreachableEnginesBackOffExponentiallyToTheCap(t *testing.T) {
	var b backoffs
	k := key("a")
	var got []time.Duration
	for range 7 {
		got = append(got, b.next(k, 30*time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v s", got, want)
		}
	}
	b.reset(k)
	if w := b.next(k, 30*time.Second); w != time.Second {
		t.Fatalf("after an answer the wait is %v, want 1s", w)
	}
}

func TestResizeStateReadsTheClaim(t *testing.T) {
	pvc := func(req, capacity string, conds ...corev1.PersistentVolumeClaimConditionType) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{}
		p.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(req)}
		p.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
		for _, c := range conds {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return p
	}
	for _, c := range []struct {
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{pvc("1Gi", "1Gi"), summav1.VolumeResizeNone},
		{pvc("2Gi", "1Gi"), summav1.VolumeResizePending},
		{pvc("2Gi", "1Gi", corev1.PersistentVolumeClaimResizing), summav1.VolumeResizeInProgress},
		{pvc("2Gi", "1Gi", corev1.PersistentVolumeClaimFileSystemResizePending), summav1.VolumeResizeFileSystemPending},
		{pvc("2Gi", "1Gi", corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimControllerResizeError), summav1.VolumeResizeFailed},
		{pvc("2Gi", "1Gi", corev1.PersistentVolumeClaimNodeResizeError), summav1.VolumeResizeFailed},
	} {
		if got, _ := resizeState(c.claim); got != c.want {
			t.Errorf("claim %+v: %q, want %q", c.claim.Status, got, c.want)
		}
	}
	infeasible := pvc("2Gi", "1Gi")
	infeasible.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
	if got, _ := resizeState(infeasible); got != summav1.VolumeResizeFailed {
		t.Errorf("infeasible: %q", got)
	}
	x := podTestIndex()
	recordVolume(x, pvc("2Gi", "1Gi", corev1.PersistentVolumeClaimNodeResizeError), nil)
	setDegraded(x, degradedCauses(x, nil))
	if on, reason := degradedOf(x); !on || reason != ReasonVolumeExpansionFailed {
		t.Fatalf("a failed expansion: Degraded %v %s", on, reason)
	}
}
