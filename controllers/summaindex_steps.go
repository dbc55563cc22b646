package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// A pass is a list of steps of one shape (as CloudNativePG's
// sub-reconcilers): each reads and updates the pass state and returns its
// failure, which the pass records and shows as Degraded at its end, while
// the next steps still run. A step lives in the file of its work, as a
// method named ...Step; adding one is that method and one line in steps.

// pass is the state of one reconcile pass of an index that its steps
// share.
type pass struct {
	// index is the SummaIndex reconciled; its status is what the pass
	// writes at the end.
	index *summav1.SummaIndex
	// status writes the status (the doctor step writes its own
	// transitions through it before acting).
	status *statusWriter
	// access is what the access step decided (known is false when it
	// failed: then no pod is created or replaced).
	access access
	// failures are the failed steps of the pass.
	failures failures
	// result is the soonest requeue a step asked for.
	result reconcile.Result
	// err is the engine pod step's error: the one the controller's error
	// path sees when it is not a step failure (returned).
	err error
}

// step is one step of a pass.
type step func(ctx context.Context, p *pass) error

// requeue asks for the next pass at res, unless a step asked for a sooner
// one.
func (p *pass) requeue(res reconcile.Result) {
	p.result = sooner(p.result, res)
}

// steps are the steps of a pass, in order: the objects the engine pod
// needs, the pod, then what follows it.
func (r *SummaIndexReconciler) steps() []step {
	return []step{
		r.claimStep,             // summaindex_resources.go
		r.serviceStep,           // summaindex_resources.go
		r.accessStep,            // summaindex_access.go
		r.readServiceStep,       // summaindex_pdb.go
		r.pdbStep,               // summaindex_pdb.go
		r.backupCredentialsStep, // summaindex_backup_schedule.go
		r.podStep,               // below
		r.replicasStep,          // summaindex_rolling.go
		r.backupsStep,           // summaindex_backup_schedule.go
	}
}

// reconcile runs a pass: the deletion, or every step. Every step runs
// whatever another one met: a volume that cannot grow must not stop a
// suspend, a doctor run or a restart. What failed is shown as Degraded at
// the end of the pass.
func (r *SummaIndexReconciler) reconcile(ctx context.Context, index *summav1.SummaIndex, sw *statusWriter) (reconcile.Result, error) {
	if index.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, index, sw)
	}
	if !controllerutil.ContainsFinalizer(index, summav1.Finalizer) {
		if err := addFinalizer(ctx, r.Client, index); err != nil {
			return reconcile.Result{}, err
		}
		sw.last = *index.Status.DeepCopy()
	}
	if index.Status.Phase == "" {
		index.Status.Phase = summav1.PhasePending
	}
	p := &pass{index: index, status: sw}
	for _, s := range r.steps() {
		p.failures.add(s(ctx, p))
	}
	res, err := p.result, p.err
	if p.failures.dropConflicts() {
		// Another writer changed an object since this pass read it: normal
		// under concurrent updates, so no event and no Degraded; the next
		// pass, soon, reads the new version.
		res = reconcile.Result{RequeueAfter: conflictRetry}
		if apierrors.IsConflict(err) {
			err = nil
		}
	}
	r.report(ctx, index, p.failures)
	err = returned(err)
	if err == nil && len(p.failures) > 0 {
		reconcileErrorsTotal.WithLabelValues(string(index.Status.Phase)).Inc()
		if res.RequeueAfter == 0 || res.RequeueAfter > failureRetry {
			// A failure of a step that did not stop the pass is retried soon.
			res.RequeueAfter = failureRetry
		}
	}
	return res, err
}

// podStep is the pass step of the engine pod (reconcilePod); a refused
// admin token at its end is told apart from a rotation under way.
func (r *SummaIndexReconciler) podStep(ctx context.Context, p *pass) error {
	res, err := r.reconcilePod(ctx, p.index, p.access, p.status)
	res, err = r.refusedToken(ctx, p.index, res, err)
	p.requeue(res)
	p.err = err
	return err
}

// reconcilePod is the part of a pass that acts on the engine pod: the
// doctor, suspend, or keeping the engine at its desired revision. With the
// reconcile annotation at "paused", the pod is only observed. acc is what
// the access step decided (not known when it failed: then no pod is
// created or replaced).
func (r *SummaIndexReconciler) reconcilePod(ctx context.Context, index *summav1.SummaIndex, acc access, sw *statusWriter) (reconcile.Result, error) {
	pod, err := r.enginePod(ctx, index)
	if err != nil {
		return reconcile.Result{}, failed(ReasonPodFailed, err)
	}
	switch {
	case paused(index):
		return r.reconcilePaused(ctx, index, pod)
	case doctorActive(index):
		return r.reconcileDoctor(ctx, index, pod, acc, sw)
	case index.Spec.Suspend:
		return r.reconcileSuspend(ctx, index, pod)
	}
	if hold, res, err := r.restoreGate(ctx, index, pod); hold || err != nil {
		return res, err
	}
	return r.reconcileEngine(ctx, index, pod, acc)
}
