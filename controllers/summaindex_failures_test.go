package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
