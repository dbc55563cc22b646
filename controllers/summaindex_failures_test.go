package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

func TestFailedRefinesTheAPIServersRefusals(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	quota := apierrors.NewForbidden(gr, "x-engine", errors.New("exceeded quota: compute, requested: cpu=2, used: cpu=1, limited: cpu=2"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x-engine", field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "bad")})
	for _, c := range []struct {
		reason string
		err    error
		want   string
	}{
		{ReasonPodFailed, quota, ReasonQuotaExceeded},
		{ReasonVolumeFailed, quota, ReasonQuotaExceeded},
		{ReasonPodFailed, invalid, ReasonPodInvalid},
		{ReasonServiceFailed, invalid, ReasonServiceFailed},
		{ReasonPodFailed, errors.New("boom"), ReasonPodFailed},
	} {
		err := failed(c.reason, fmt.Errorf("create: %w", c.err))
		if got := failureReason(err); got != c.want {
			t.Errorf("%s of %v: reason %s, want %s", c.reason, c.err, got, c.want)
		}
		if returned(err) != nil {
			t.Errorf("a step's failure went to the error path: %v", err)
		}
	}
	if failed(ReasonPodFailed, nil) != nil {
		t.Error("failed(nil) is not nil")
	}
	plain := errors.New("unclassified")
	if failureReason(plain) != ReasonReconcileError || returned(plain) == nil {
		t.Error("an unclassified error is not a ReconcileError on the error path")
	}
}

func TestWarningLimiterRecordsAStartAChangeAndThenRarely(t *testing.T) {
	var l warningLimiter
	x := &summav1.SummaIndex{}
	x.UID = "u1"
	if !l.due(x, "PodInvalid", "m1") {
		t.Fatal("the first failure is not recorded")
	}
	if l.due(x, "PodInvalid", "m1") {
		t.Error("the same failure is recorded again at once")
	}
	if !l.due(x, "PodInvalid", "m2") {
		t.Error("a changed message is not recorded")
	}
	if !l.due(x, "QuotaExceeded", "m2") {
		t.Error("another reason is not recorded")
	}
	l.forget(x)
	if !l.due(x, "PodInvalid", "m2") {
		t.Error("after forget, the failure is not recorded again")
	}
}

// Once an index is gone the limiter keeps nothing of it, whatever its UID
// was; another index's entries stay.
func TestWarningLimiterForgetsDeletedIndexes(t *testing.T) {
	var l warningLimiter
	for i := range 100 {
		x := &summav1.SummaIndex{}
		x.Namespace, x.Name, x.UID = "ns", "gone", types.UID(fmt.Sprint("u", i))
		l.due(x, "PodInvalid", "m")
	}
	kept := &summav1.SummaIndex{}
	kept.Namespace, kept.Name, kept.UID = "ns", "gone-too-not", "k"
	l.due(kept, "PodInvalid", "m")
	l.forgetName(client.ObjectKey{Namespace: "ns", Name: "gone"})
	if len(l.last) != 1 {
		t.Fatalf("%d entries left after the index was deleted, want 1 (the other index)", len(l.last))
	}
	if l.due(kept, "PodInvalid", "m") {
		t.Error("forgetting one index forgot another")
	}
}

// An optimistic-lock conflict of a step is normal under concurrent writers:
// it is dropped from the pass's failures (no event, no Degraded), the
// others stay.
func TestConflictsAreNotFailures(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	conflict := failed(ReasonPodFailed, fmt.Errorf("update pod: %w", apierrors.NewConflict(gr, "x-engine", errors.New("modified"))))
	other := failed(ReasonServiceFailed, errors.New("boom"))
	f := failures{conflict, other, apierrors.NewConflict(gr, "y", errors.New("modified"))}
	if !f.dropConflicts() {
		t.Fatal("no conflict seen")
	}
	if len(f) != 1 || f[0] != other {
		t.Fatalf("left %v, want only the other failure", f)
	}
	if f.dropConflicts() {
		t.Error("a conflict seen where none is left")
	}
	rec := events.NewFakeRecorder(10)
	r := &SummaIndexReconciler{Recorder: rec}
	x := &summav1.SummaIndex{}
	x.UID = "u"
	g := failures{conflict}
	g.dropConflicts()
	r.report(context.Background(), x, g)
	if len(rec.Events) != 0 {
		t.Errorf("event for a conflict: %s", <-rec.Events)
	}
	if x.IsConditionTrue(summav1.ConditionDegraded) {
		t.Errorf("Degraded for a conflict: %+v", x.GetCondition(summav1.ConditionDegraded))
	}
}

func TestSummarizeTellsWhatNeedsAttention(t *testing.T) {
	x := &summav1.SummaIndex{}
	setCondition(x, summav1.ConditionReady, true, "EngineReady", "ok")
	setCondition(x, summav1.ConditionDegraded, false, "Healthy", "")
	summarize(x)
	if x.Status.Message != "" {
		t.Errorf("healthy index has message %q", x.Status.Message)
	}
	setCondition(x, summav1.ConditionDegraded, true, ReasonVolumeExpansionRefused, strings.Repeat("long message ", 40))
	summarize(x)
	if !strings.HasPrefix(x.Status.Message, ReasonVolumeExpansionRefused+": long message") || len(x.Status.Message) > messageLength {
		t.Errorf("message %q", x.Status.Message)
	}
	setCondition(x, summav1.ConditionDegraded, false, "Recovered", "")
	setCondition(x, summav1.ConditionReady, false, "PodNotReady", "the engine pod x-engine is not ready")
	summarize(x)
	if x.Status.Message != "the engine pod x-engine is not ready" {
		t.Errorf("message %q", x.Status.Message)
	}
}
