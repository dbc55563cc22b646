package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// statusWriter is the one way the reconciler writes status: it remembers
// the status as last read or written and writes only when it changed, with
// the object's resourceVersion (optimistic locking: a conflict means
// somebody else moved first, and the reconcile starts over).
type statusWriter struct {
	c    client.Client
	last summav1.SummaIndexStatus
}

// newStatusWriter starts tracking x's status as read.
func newStatusWriter(c client.Client, x *summav1.SummaIndex) *statusWriter {
	return &statusWriter{c: c, last: *x.Status.DeepCopy()}
}

// write stores x's status if it differs from the last one written, with
// kstatus' Reconciling condition decided from it first, so that no write
// (the end of a pass or a step recorded before it acts) shows
// Reconciling out of step with the other conditions.
func (w *statusWriter) write(ctx context.Context, x *summav1.SummaIndex) error {
	setReconciling(x)
	if equality.Semantic.DeepEqual(w.last, x.Status) {
		return nil
	}
	if err := w.c.Status().Update(ctx, x); err != nil {
		return fmt.Errorf("update status of %s/%s: %w", x.Namespace, x.Name, err)
	}
	w.last = *x.Status.DeepCopy()
	return nil
}

// setCondition sets condition t on x.
func setCondition(x *summav1.SummaIndex, t string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	x.SetCondition(t, status, reason, message)
}

// notReady marks x not ready, and progressing when progressing is set.
func notReady(x *summav1.SummaIndex, phase summav1.Phase, reason, message string, progressing bool) {
	x.Status.Phase = phase
	setCondition(x, summav1.ConditionReady, false, reason, message)
	if progressing {
		setCondition(x, summav1.ConditionProgressing, true, reason, message)
	} else {
		setCondition(x, summav1.ConditionProgressing, false, reason, message)
	}
}
