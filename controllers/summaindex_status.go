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

// newStatusWriter starts tracking index's status as read.
func newStatusWriter(c client.Client, index *summav1.SummaIndex) *statusWriter {
	return &statusWriter{c: c, last: *index.Status.DeepCopy()}
}

// write stores index's status if it differs from the last one written, with
// kstatus' Reconciling condition decided from it first, so that no write
// (the end of a pass or a step recorded before it acts) shows
// Reconciling out of step with the other conditions.
func (w *statusWriter) write(ctx context.Context, index *summav1.SummaIndex) error {
	setReconciling(index)
	if equality.Semantic.DeepEqual(w.last, index.Status) {
		return nil
	}
	if err := w.c.Status().Update(ctx, index); err != nil {
		return fmt.Errorf("update status of %s/%s: %w", index.Namespace, index.Name, err)
	}
	w.last = *index.Status.DeepCopy()
	return nil
}

// setCondition sets condition t on index.
func setCondition(index *summav1.SummaIndex, t string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	index.SetCondition(t, status, reason, message)
}

// notReady marks index not ready, and progressing when progressing is set.
func notReady(index *summav1.SummaIndex, phase summav1.Phase, reason, message string, progressing bool) {
	index.Status.Phase = phase
	setCondition(index, summav1.ConditionReady, false, reason, message)
	if progressing {
		setCondition(index, summav1.ConditionProgressing, true, reason, message)
	} else {
		setCondition(index, summav1.ConditionProgressing, false, reason, message)
	}
}
