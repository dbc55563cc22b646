package controllers

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	summav1 "github.com/summadev/summa/api/v1"
)

// kstatusOf runs the real kstatus library on x as a GitOps tool reads it
// (unstructured, observedGeneration present as the CRD defaults it).
func kstatusOf(t *testing.T, x *summav1.SummaIndex) kstatus.Status {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(summav1.GroupVersion.WithKind("SummaIndex"))
	if err := unstructured.SetNestedField(u.Object, x.Status.ObservedGeneration, "status", "observedGeneration"); err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// TestKstatusAtEachStep sets the conditions as a pass leaves them at each
// step (report, then the status write) and checks what kstatus and Argo CD
// make of them: the steps envtest cannot reach cheaply (a drain timeout, a
// refused expansion, a failed doctor run, a queued restart, a resize, an
// engine that does not answer, a paused index) included.
func TestKstatusAtEachStep(t *testing.T) {
	script := argoScript()
	for _, c := range kstatusCases() {
		t.Run(c.name, func(t *testing.T) { checkKstatusCase(t, script, c) })
	}
}

// kstatusCase is a status a pass leaves, and what kstatus and Argo CD
// should make of it.
type kstatusCase struct {
	name   string
	set    func(x *summav1.SummaIndex)
	f      failures
	want   kstatus.Status
	argo   string
	reason string // Reconciling's, or Stalled's when it is True
}

// kstatusReady is the status of a pass that found the engine serving.
func kstatusReady(x *summav1.SummaIndex) {
	x.Status.Phase = summav1.PhaseRunning
	markRunning(x, true, nil)
	x.Status.CurrentRevision, x.Status.UpdateRevision = "r1", "r1"
}

// kstatusCases are the cases of TestKstatusAtEachStep.
func kstatusCases() []kstatusCase {
	ready := kstatusReady
	return []kstatusCase{
		{"first pass, pod created", func(x *summav1.SummaIndex) {
			notReady(x, summav1.PhasePending, "PodCreated", "engine pod created", true)
		}, nil, kstatus.InProgressStatus, "Progressing", "PodCreated"},
		{"ready", ready, nil, kstatus.CurrentStatus, "Healthy", ReasonReconciled},
		{"restart queued by the budget while the old engine serves", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.UpdateRevision = "r2"
			setCondition(x, summav1.ConditionProgressing, true, ReasonRestartQueued, "waits for a slot")
		}, nil, kstatus.InProgressStatus, "Progressing", ReasonRestartQueued},
		{"restart pending, nothing said yet", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.UpdateRevision = "r2"
		}, nil, kstatus.InProgressStatus, "Progressing", ReasonRestartPending},
		{"volume growing", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.Volume = &summav1.VolumeStatus{ClaimName: "articles-data", Resize: summav1.VolumeResizeInProgress}
		}, nil, kstatus.InProgressStatus, "Progressing", ReasonVolumeResizing},
		{"volume expansion refused", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.Volume = &summav1.VolumeStatus{ClaimName: "articles-data", Resize: summav1.VolumeResizeRefused}
		}, failures{failed(ReasonVolumeExpansionRefused, errors.New("the class does not allow volume expansion"))},
			kstatus.FailedStatus, "Degraded", ReasonVolumeExpansionRefused},
		{"volume expansion failed in the storage", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.Volume = &summav1.VolumeStatus{ClaimName: "articles-data", Resize: summav1.VolumeResizeFailed, Message: "no space"}
		}, nil, kstatus.FailedStatus, "Degraded", ReasonVolumeExpansionFailed},
		{"drain timed out, restart waits for its backoff", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.UpdateRevision = "r2"
			x.Status.DrainFailures = 1
			x.Status.LastDrainFailureTime = &metav1.Time{Time: time.Now()}
			setCondition(x, summav1.ConditionProgressing, true, "RestartPending", "a restart waits for the drain backoff")
		}, nil, kstatus.FailedStatus, "Degraded", ReasonDrainTimeout},
		{"doctor run failed, engine not back", func(x *summav1.SummaIndex) {
			x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1", Phase: summav1.DoctorPhaseFailed, Message: "job failed"}
			x.Spec.Doctor.RequestID = "r1"
			notReady(x, summav1.PhasePending, "PodNotReady", "not ready", true)
		}, nil, kstatus.FailedStatus, "Degraded", ReasonDoctorFailed},
		{"doctor running", func(x *summav1.SummaIndex) {
			x.Spec.Doctor.RequestID = "r2"
			x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r2", Phase: summav1.DoctorPhaseRunning}
			notReady(x, summav1.PhaseRepairing, "DoctorRunning", "doctor run r2: Running", true)
		}, nil, kstatus.InProgressStatus, "Progressing", "DoctorRunning"},
		{"engine does not answer (retried)", func(x *summav1.SummaIndex) {
			ready(x)
			setCondition(x, summav1.ConditionReady, false, ReasonEngineUnreachable, "no answer")
		}, failures{failed(ReasonEngineUnreachable, errors.New("no answer"))}, kstatus.InProgressStatus, "Progressing", ReasonEngineUnreachable},
		{"credentials Secret not there yet (retried)", func(x *summav1.SummaIndex) {
			notReady(x, summav1.PhasePending, "PodNotReady", "no pod", true)
		}, failures{failed(ReasonCredentialsSecretMissing, errors.New("no Secret"))}, kstatus.InProgressStatus, "Progressing", "PodNotReady"},
		{"schema conflict", func(x *summav1.SummaIndex) {
			x.Status.Phase = summav1.PhaseFailed
			setCondition(x, summav1.ConditionReady, false, ReasonSchemaConflict, "another schema")
		}, failures{failed(ReasonSchemaConflict, errors.New("another schema"))}, kstatus.FailedStatus, "Degraded", ReasonSchemaConflict},
		{"durability degraded", func(x *summav1.SummaIndex) {
			ready(x)
			x.Status.DurabilityDegraded = true
		}, nil, kstatus.FailedStatus, "Degraded", ReasonDurabilityDegraded},
		{"suspended", func(x *summav1.SummaIndex) {
			x.Spec.Suspend = true
			notReady(x, summav1.PhaseSuspended, "Suspended", "stopped", false)
		}, nil, kstatus.InProgressStatus, "Suspended", "Suspended"},
		{"suspended with a resize that finishes at the next mount", func(x *summav1.SummaIndex) {
			x.Spec.Suspend = true
			notReady(x, summav1.PhaseSuspended, "Suspended", "stopped", false)
			x.Status.Volume = &summav1.VolumeStatus{ClaimName: "articles-data", Resize: summav1.VolumeResizeFileSystemPending}
		}, nil, kstatus.InProgressStatus, "Suspended", "Suspended"},
		{"paused and serving", func(x *summav1.SummaIndex) {
			ready(x)
			x.Annotations = map[string]string{AnnotationReconcile: ReconcilePaused}
			setCondition(x, summav1.ConditionProgressing, false, ReasonPaused, "paused")
		}, nil, kstatus.CurrentStatus, "Healthy", ReasonPaused},
	}
}

// checkKstatusCase sets the conditions of c as report and the status
// write leave them, and checks kstatus and Argo CD.
func checkKstatusCase(t *testing.T, script string, c kstatusCase) {
	x := podTestIndex()
	x.Generation = 3
	c.set(x)
	setStalled(x, degradedCauses(x, c.f))
	setDegraded(x, degradedCauses(x, c.f))
	x.Status.ObservedGeneration = x.Generation
	setReconciling(x)
	if got := kstatusOf(t, x); got != c.want {
		t.Errorf("kstatus %s, want %s (%s)", got, c.want, conditionsLine(x))
	}
	rec, stalled := x.GetCondition(summav1.ConditionReconciling), x.GetCondition(summav1.ConditionStalled)
	if rec.Status == metav1.ConditionTrue && stalled.Status == metav1.ConditionTrue {
		t.Errorf("Reconciling and Stalled both True")
	}
	reason := rec.Reason
	if stalled.Status == metav1.ConditionTrue {
		reason = stalled.Reason
		if !x.IsConditionTrue(summav1.ConditionDegraded) {
			t.Errorf("Stalled without Degraded")
		}
	}
	if reason != c.reason {
		t.Errorf("reason %s, want %s (%s)", reason, c.reason, conditionsLine(x))
	}
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
	_ = unstructured.SetNestedField(obj, x.Generation, "metadata", "generation")
	_ = unstructured.SetNestedField(obj, x.Status.ObservedGeneration, "status", "observedGeneration")
	h, err := runArgoHealth(script, obj)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != c.argo {
		t.Errorf("Argo CD %s (%s), want %s", h.Status, h.Message, c.argo)
	}
	if err := agree(c.want, h, obj); err != nil {
		t.Error(err)
	}
	// Before the pass of a new generation, whatever the rest says,
	// both read it as in progress.
	x.Generation++
	if got := kstatusOf(t, x); got != kstatus.InProgressStatus {
		t.Errorf("unobserved generation: kstatus %s", got)
	}
}

// TestObservedGenerationIsNeverAheadOfReconciling checks the first status
// write: observedGeneration and Reconciling=True come together.
func TestObservedGenerationIsNeverAheadOfReconciling(t *testing.T) {
	x := podTestIndex()
	x.Generation = 1
	x.Status.Phase = summav1.PhasePending
	setStalled(x, nil)
	setDegraded(x, nil)
	x.Status.ObservedGeneration = x.Generation
	setReconciling(x)
	if !x.IsConditionTrue(summav1.ConditionReconciling) {
		t.Fatalf("first pass without Reconciling=True: %s", conditionsLine(x))
	}
	if got := kstatusOf(t, x); got != kstatus.InProgressStatus {
		t.Errorf("first pass reads %s", got)
	}
}
