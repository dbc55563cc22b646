package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// Defaults of the reconciler's options (cmd/manager flags).
const (
	// DefaultEngineImage is the engine image when spec.image is empty.
	DefaultEngineImage = "summa-server:latest"
	// DefaultResyncPeriod is how often a running index's status is
	// refreshed from its engine.
	DefaultResyncPeriod = 30 * time.Second
	// defaultEngineTimeout bounds one call to the engine's API.
	defaultEngineTimeout = 5 * time.Second
	// pollInterval is the requeue while something is in motion.
	pollInterval = time.Second
	// notReadyPoll is the fallback requeue of a pod that is not ready yet
	// (its readiness changing wakes a pass anyway).
	notReadyPoll = 5 * time.Second
	// terminatingPoll is the fallback requeue while a pod terminates: its
	// deletion wakes a pass through the pod watch, so this only covers a
	// pod the watch does not map to its index (one orphaned by
	// --cascade=orphan), not a poll every second for the whole grace.
	terminatingPoll = 5 * time.Second
)

// Options tune the SummaIndex reconciler.
type Options struct {
	// DefaultImage is the engine image of indexes without spec.image.
	DefaultImage string
	// ResyncPeriod is the status refresh period of a running index.
	ResyncPeriod time.Duration
	// EngineTimeout bounds each call to an engine.
	EngineTimeout time.Duration
	// HTTPClient talks to the engines; nil means a default one.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BackupClock is the clock of spec.backup.schedule; nil means Now
	// (tests move it alone, certificates keep the real time).
	BackupClock func() time.Time
	// DrainBackoff is the first wait after a timed-out drain (doubling up
	// to 30 min); zero means 30 s.
	DrainBackoff time.Duration
	// VolumePermissions adds an init container that hands each volume to
	// the engine's non-root user (for hostPath-like storage that ignores
	// fsGroup).
	VolumePermissions bool
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// OperatorNamespace is the namespace of the operator's own pods, which
	// the engines' NetworkPolicies admit (from the POD_NAMESPACE
	// environment variable); empty when the operator runs outside the
	// cluster, so that no operator pod is admitted.
	OperatorNamespace string
	// ClusterDomain is the cluster's DNS domain, for the engine
	// certificate's names; empty means cluster.local.
	ClusterDomain string
	// CertificateValidity is the lifetime of the engine certificates the
	// operator issues (renewed two thirds into it); zero means one year.
	CertificateValidity time.Duration
	// OperatorVersion is recorded on the engine pods the operator makes.
	OperatorVersion string
	// EngineShutdownDelay is the longest --shutdown-delay of the engines
	// (half their shutdown deadline at most; 0: none): after SIGTERM an
	// engine keeps answering, unready, this long, while kube-proxy drops
	// its endpoint (the manager's default is DefaultEngineShutdownDelay).
	EngineShutdownDelay time.Duration
	// MaxConcurrentRestarts bounds how many engines restart at once for a
	// new revision (a spec change or an operator upgrade that needs one);
	// zero means DefaultMaxConcurrentRestarts.
	MaxConcurrentRestarts int
	// RestartProgressDeadline is how long a restart may stay without a
	// Ready pod before it no longer holds a restart slot
	// (summaindex_restarts.go); zero means DefaultRestartProgressDeadline.
	RestartProgressDeadline time.Duration
	// afterEngineCall, when set, runs after each engine call that changes
	// the engine, before anything records it (tests kill the operator
	// there).
	afterEngineCall func(ctx context.Context, call string)
	// engineTransport, when set, wraps the transport of every engine
	// client (tests put an engine stand-in there that refuses calls).
	engineTransport func(http.RoundTripper) http.RoundTripper
	// MaxConcurrentReconciles is how many indexes are reconciled at once,
	// so that one slow engine does not hold up the others; zero means
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// MaxStatusWatches bounds the status long polls open at once (one per
	// running engine, summaindex_statuswatch.go); past it, watches take
	// turns; zero means DefaultMaxStatusWatches.
	MaxStatusWatches int
	// PodTemplatePolicy is what spec.podTemplate may ask of the engine
	// pod (summaindex_podsecurity.go); empty means
	// DefaultPodTemplatePolicy.
	PodTemplatePolicy PodTemplatePolicy
}

// DefaultMaxConcurrentReconciles is the default of
// Options.MaxConcurrentReconciles.
const DefaultMaxConcurrentReconciles = 4

// DefaultClusterDomain is the cluster's DNS domain unless told otherwise.
const DefaultClusterDomain = "cluster.local"

// SummaIndexReconciler reconciles SummaIndex objects into an engine pod,
// its data volume, a Service and doctor Jobs. It is re-entrant: every step
// is decided from what the API server and the engine report, and the few
// facts that cannot be observed (a drain's start, a doctor run's phase)
// are kept in status and written before acting on them.
type SummaIndexReconciler struct {
	// Client reads and writes the API server (the manager's cached client).
	client.Client
	// Scheme knows the API types (owner references).
	Scheme *runtime.Scheme
	// Recorder emits an Event for every lifecycle step.
	Recorder events.EventRecorder
	// APIReader reads what the cache does not hold (it holds only the
	// operator's own, labelled objects): a Secret a person made, or an
	// object of a name the operator uses that someone else made (getLive);
	// nil means the cache alone.
	APIReader client.Reader
	// Options tune the reconciler.
	Options Options
	// warnings rate-limits the Warning events of failing steps.
	warnings warningLimiter
	// clients are the HTTPS clients of the engines.
	clients engineClients
	// restarts is the restart budget.
	restarts *restartBudget
	// unreachable backs off the polls of engines that do not answer.
	unreachable backoffs
	// watches long-poll the running engines, so that status follows a
	// commit within seconds rather than at the next resync.
	watches *statusWatches
}

// defaults fills unset options.
func (r *SummaIndexReconciler) defaults() {
	o := &r.Options
	if o.DefaultImage == "" {
		o.DefaultImage = DefaultEngineImage
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.EngineTimeout <= 0 {
		o.EngineTimeout = defaultEngineTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.EngineTimeout}
		if o.engineTransport != nil {
			o.HTTPClient.Transport = o.engineTransport(http.DefaultTransport)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BackupClock == nil {
		o.BackupClock = o.Now
	}
	if o.DrainBackoff <= 0 {
		o.DrainBackoff = drainBackoffMin
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	if o.CertificateValidity <= 0 {
		o.CertificateValidity = DefaultCertificateValidity
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.PodTemplatePolicy == "" {
		o.PodTemplatePolicy = DefaultPodTemplatePolicy
	}
	if o.RestartProgressDeadline <= 0 {
		o.RestartProgressDeadline = DefaultRestartProgressDeadline
	}
	if o.MaxConcurrentRestarts <= 0 {
		o.MaxConcurrentRestarts = DefaultMaxConcurrentRestarts
	}
	if r.restarts == nil {
		r.restarts = newRestartBudget(1024)
	}
	r.clients.wrap = o.engineTransport
	if o.MaxStatusWatches <= 0 {
		o.MaxStatusWatches = DefaultMaxStatusWatches
	}
	if r.watches == nil {
		r.watches = newStatusWatches(o.MaxStatusWatches, ctrl.Log.WithName("status-watch"))
	}
}

// image is x's engine image.
func (r *SummaIndexReconciler) image(x *summav1.SummaIndex) string {
	if x.Spec.Image != "" {
		return x.Spec.Image
	}
	return r.Options.DefaultImage
}

// Reconcile runs one pass for a SummaIndex and writes its status once, at
// the end, if it changed.
func (r *SummaIndexReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	x := &summav1.SummaIndex{}
	if err := r.Get(ctx, req.NamespacedName, x); err != nil {
		if apierrors.IsNotFound(err) {
			forgetIndexMetrics(req.Namespace, req.Name)
			r.warnings.forgetName(req.NamespacedName)
			r.restarts.settle(req.NamespacedName, false, false, r.Options.MaxConcurrentRestarts)
			r.unreachable.reset(req.NamespacedName)
			r.watches.stop(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	sw := newStatusWriter(r.Client, x)
	start := time.Now()
	r.watches.begin(req.NamespacedName)
	res, err := r.reconcile(ctx, x, sw)
	r.watches.finish(req.NamespacedName)
	if res.RequeueAfter == r.Options.ResyncPeriod {
		// The next refresh is a period after this one began, not after
		// it ended: status is never older than the period.
		res.RequeueAfter = max(pollInterval, res.RequeueAfter-time.Since(start))
	}
	if err != nil {
		reconcileErrorsTotal.WithLabelValues(string(x.Status.Phase)).Inc()
	} else {
		// Every step of this generation was decided (a step that failed
		// says so in Degraded): status tells of this spec.
		x.Status.ObservedGeneration = x.Generation
	}
	queued := x.GetCondition(summav1.ConditionProgressing)
	r.restarts.settle(req.NamespacedName, holdsRestartSlot(x, r.Options.Now(), r.Options.RestartProgressDeadline),
		queued != nil && queued.Status == metav1.ConditionTrue && queued.Reason == ReasonRestartQueued, r.Options.MaxConcurrentRestarts)
	if x.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(x, summav1.Finalizer) {
		forgetIndexMetrics(x.Namespace, x.Name)
		r.warnings.forgetName(req.NamespacedName)
		return res, err // gone once the finalizer left
	}
	summarize(x)
	recordIndexMetrics(x)
	if werr := sw.write(ctx, x); werr != nil {
		if apierrors.IsConflict(werr) || apierrors.IsNotFound(werr) {
			return reconcile.Result{Requeue: true}, err
		}
		return res, errors.Join(err, werr)
	}
	return res, err
}

// reconcile walks the phases. Each returns early with a requeue while it
// waits for something.
func (r *SummaIndexReconciler) reconcile(ctx context.Context, x *summav1.SummaIndex, sw *statusWriter) (reconcile.Result, error) {
	if x.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, x, sw)
	}
	if !controllerutil.ContainsFinalizer(x, summav1.Finalizer) {
		if err := addFinalizer(ctx, r.Client, x); err != nil {
			return reconcile.Result{}, err
		}
		sw.last = *x.Status.DeepCopy()
	}
	if x.Status.Phase == "" {
		x.Status.Phase = summav1.PhasePending
	}
	// Every step runs whatever another one met: a volume that cannot grow
	// must not stop a suspend, a doctor run or a restart. What failed is
	// shown as Degraded at the end of the pass.
	var f failures
	f.add(r.ensureDataClaim(ctx, x))
	f.add(failed(ReasonServiceFailed, r.ensureService(ctx, x)))
	acc, err := r.reconcileAccess(ctx, x)
	f.add(err)
	f.add(failed(ReasonServiceFailed, r.ensureReadService(ctx, x)))
	f.add(failed(ReasonPodFailed, r.ensurePDB(ctx, x)))
	f.add(r.ensureBackupCredentials(ctx, x))
	res, err := r.reconcilePod(ctx, x, acc, sw)
	if res, err = r.refusedToken(ctx, x, res, err); err != nil {
		f.add(err)
	}
	if leader, lerr := r.enginePod(ctx, x); lerr != nil {
		f.add(failed(ReasonPodFailed, lerr))
	} else {
		res = sooner(res, r.reconcileReplicas(ctx, x, acc, leader, &f))
	}
	wait, berr := r.reconcileBackups(ctx, x)
	f.add(berr)
	res = sooner(res, reconcile.Result{RequeueAfter: wait})
	if f.dropConflicts() {
		// Another writer changed an object since this pass read it: normal
		// under concurrent updates, so no event and no Degraded; the next
		// pass, soon, reads the new version.
		res = reconcile.Result{RequeueAfter: conflictRetry}
		if apierrors.IsConflict(err) {
			err = nil
		}
	}
	r.report(ctx, x, f)
	err = returned(err)
	if err == nil && len(f) > 0 {
		reconcileErrorsTotal.WithLabelValues(string(x.Status.Phase)).Inc()
		if res.RequeueAfter == 0 || res.RequeueAfter > failureRetry {
			// A failure of a step that did not stop the pass is retried soon.
			res.RequeueAfter = failureRetry
		}
	}
	return res, err
}

// reconcilePod is the part of a pass that acts on the engine pod: the
// doctor, suspend, or keeping the engine at its desired revision. With the
// reconcile annotation at "paused", the pod is only observed. acc is what
// the access step decided (not known when it failed: then no pod is
// created or replaced).
func (r *SummaIndexReconciler) reconcilePod(ctx context.Context, x *summav1.SummaIndex, acc access, sw *statusWriter) (reconcile.Result, error) {
	pod, err := r.enginePod(ctx, x)
	if err != nil {
		return reconcile.Result{}, failed(ReasonPodFailed, err)
	}
	switch {
	case paused(x):
		return r.reconcilePaused(ctx, x, pod)
	case doctorActive(x):
		return r.reconcileDoctor(ctx, x, pod, acc, sw)
	case x.Spec.Suspend:
		return r.reconcileSuspend(ctx, x, pod)
	}
	if hold, res, err := r.restoreGate(ctx, x, pod); hold || err != nil {
		return res, err
	}
	return r.reconcileEngine(ctx, x, pod, acc)
}

// enginePod returns x's engine pod, or nil when there is none.
func (r *SummaIndexReconciler) enginePod(ctx context.Context, x *summav1.SummaIndex) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: x.Namespace, Name: x.EnginePodName()}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get engine pod: %w", err)
	}
	if metav1.IsControlledBy(pod, x) {
		return pod, nil
	}
	if !isOrphanOf(x, pod) {
		return nil, fmt.Errorf("pod %s exists and is not controlled by SummaIndex %s", pod.Name, x.Name)
	}
	// An engine pod left by a SummaIndex of this name deleted with orphan
	// propagation (or orphaned while x itself is deleted that way): x stops
	// it when deleting, and adopts it otherwise.
	if x.DeletionTimestamp == nil {
		if err := r.adoptOrphan(ctx, x, pod); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// reconcileEngine keeps the engine pod at the desired revision and the
// status current: create the pod, wait for Ready, create the index, read
// the engine's status, size the grace, and drain before any restart.
func (r *SummaIndexReconciler) reconcileEngine(ctx context.Context, x *summav1.SummaIndex, pod *corev1.Pod, acc access) (reconcile.Result, error) {
	if pod == nil {
		if !acc.known {
			// The access step failed (and says why): no pod without its
			// Secrets.
			return reconcile.Result{RequeueAfter: failureRetry}, nil
		}
		return r.createPod(ctx, x, acc)
	}
	if pod.DeletionTimestamp != nil {
		notReady(x, summav1.PhaseRestarting, "PodTerminating", "waiting for the previous engine pod to stop", true)
		return reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	if err := r.syncAccessAnnotation(ctx, x, pod, acc); err != nil {
		return reconcile.Result{}, failed(ReasonPodFailed, err)
	}
	x.Status.PodName, x.Status.PodUID = pod.Name, pod.UID
	x.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	engineUp := false
	var engineErr error
	if engineReady(pod) {
		err := r.observeEngine(ctx, x, pod)
		var conflict *errSchemaConflict
		switch {
		case r.rotationInFlight(x, err):
			// The rotated admin token has not reached the engine yet:
			// asked again shortly, nothing else decided meanwhile.
			return reconcile.Result{RequeueAfter: unauthorizedRetry}, nil
		case errors.As(err, &conflict):
			x.Status.Phase = summav1.PhaseFailed
			setCondition(x, summav1.ConditionReady, false, ReasonSchemaConflict, err.Error())
			return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, failed(ReasonSchemaConflict, err)
		case engineclient.IsCode(err, engineclient.CodeUnauthorized):
			engineErr = failed(ReasonUnauthorized, unauthorized(x, err))
		case err != nil:
			engineErr = failed(ReasonEngineUnreachable, fmt.Errorf("engine pod %s is ready but its engine does not answer: %w", pod.Name, err))
		default:
			engineUp = true
		}
	}
	// Status shows the running pod's grace. The grace the estimate asks
	// for is not part of the revision (summaindex_grace.go): the desired
	// pod carries it, and it reaches the next pod made anyway.
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		x.Status.TerminationGracePeriodSeconds = *g
	}
	x.Status.ShutdownDeadlineSeconds = engineShutdownDeadline(x, x.Status.TerminationGracePeriodSeconds)
	if !acc.known {
		// Without the access step's decisions the desired pod is unknown:
		// keep the running one.
		markRunning(x, engineUp, pod)
		return reconcile.Result{RequeueAfter: failureRetry}, engineErr
	}
	in := r.podInputs(x, nextGrace(x, x.Status.TerminationGracePeriodSeconds, x.Status.DrainEstimateSeconds), acc)
	desired := desiredPod(x, in)
	if adopted, err := r.adoptLegacyRevision(ctx, x, pod, desired, in); err != nil {
		return reconcile.Result{}, failed(ReasonPodFailed, err)
	} else if adopted {
		x.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	}
	x.Status.UpdateRevision = desired.Annotations[AnnotationRevision]
	if x.Status.UpdateRevision == x.Status.CurrentRevision {
		if x.Status.DrainStartTime != nil {
			// A drain for a restart that is no longer wanted (the spec
			// went back): admit writes again rather than leave the engine
			// drained.
			if err := r.resumeEngine(ctx, x, pod); err != nil {
				return reconcile.Result{}, err
			}
		}
		// No restart is pending: drains that timed out for one are over.
		x.Status.DrainFailures, x.Status.LastDrainFailureTime = 0, nil
	}
	if x.Status.UpdateRevision != x.Status.CurrentRevision {
		if wait, ok := r.drainBackoff(x); !ok {
			// The last drain timed out: the pod keeps running, taking
			// writes, until the next attempt. An engine found draining
			// meanwhile is resumed, with backoff until that holds.
			if !engineReady(pod) {
				if _, _, err := r.resumeStrayDrain(ctx, x, pod); err != nil {
					markRunning(x, engineUp, pod)
					return reconcile.Result{RequeueAfter: min(wait, r.unreachable.next(client.ObjectKeyFromObject(x), r.Options.ResyncPeriod))},
						failed(ReasonEngineUnreachable, err)
				}
			}
			markRunning(x, engineUp, pod)
			setCondition(x, summav1.ConditionProgressing, true, "RestartPending", "a restart waits for the drain backoff")
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		if x.Status.DrainStartTime == nil && engineUp {
			// Followers restart first, the leader last (summaindex_rolling.go).
			if ok, why, err := r.followersSettled(ctx, x, x.Status.UpdateRevision); !ok {
				markRunning(x, engineUp, pod)
				setCondition(x, summav1.ConditionProgressing, true, ReasonRollingFollowers, why)
				return reconcile.Result{RequeueAfter: pollInterval}, err
			}
		}
		if err := r.holdInvalidRestart(ctx, x, pod, desired, engineUp); err != nil {
			return reconcile.Result{RequeueAfter: failureRetry}, err
		}
		if x.Status.DrainStartTime == nil && engineUp {
			// An engine that serves restarts under the budget; one that
			// does not restarts at once.
			ok, why, err := r.admitRestart(ctx, x)
			if err != nil {
				return reconcile.Result{}, err
			}
			if !ok {
				markRunning(x, engineUp, pod)
				setCondition(x, summav1.ConditionProgressing, true, ReasonRestartQueued, why)
				return reconcile.Result{RequeueAfter: restartQueueRetry}, nil
			}
		}
		return r.replacePod(ctx, x, pod, purposeRestart)
	}
	key := client.ObjectKeyFromObject(x)
	if !engineUp && engineErr == nil && !engineReady(pod) {
		resumed, silent, err := r.resumeStrayDrain(ctx, x, pod)
		switch {
		case err != nil:
			engineErr = failed(ReasonEngineUnreachable, err)
		case resumed:
			return reconcile.Result{RequeueAfter: pollInterval}, nil
		case silent:
			// Not answering, and not ready: asked again with backoff (its
			// readiness changing wakes a pass at once).
			markRunning(x, false, pod)
			return reconcile.Result{RequeueAfter: r.unreachable.next(key, r.Options.ResyncPeriod)}, nil
		}
	}
	markRunning(x, engineUp, pod)
	if engineErr != nil {
		// Shown as Degraded and a Warning by report; asked again with
		// exponential backoff (a pod or Secret change still wakes it at
		// once), not through the error path.
		setCondition(x, summav1.ConditionReady, false, ReasonEngineUnreachable, engineErr.Error())
		return reconcile.Result{RequeueAfter: r.unreachable.next(key, r.Options.ResyncPeriod)}, engineErr
	}
	r.unreachable.reset(key)
	if !engineUp {
		// The pod's own changes (readiness) wake the next pass; this is
		// the fallback.
		return reconcile.Result{RequeueAfter: notReadyPoll}, nil
	}
	return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
}

// markRunning sets phase and conditions of a pod at its desired revision
// (or waiting for a restart).
func markRunning(x *summav1.SummaIndex, engineUp bool, pod *corev1.Pod) {
	if !engineUp {
		reason, msg := "PodNotReady", "the engine pod "+pod.Name+" is not ready"
		phase := summav1.PhasePending
		if x.Status.Phase == summav1.PhaseRestarting || x.Status.Phase == summav1.PhaseDraining {
			phase = summav1.PhaseRestarting
		}
		if x.Status.Phase == summav1.PhaseRunning {
			phase = summav1.PhaseRunning
		}
		notReady(x, phase, reason, msg, phase != summav1.PhaseRunning)
		return
	}
	x.Status.Phase = summav1.PhaseRunning
	setCondition(x, summav1.ConditionReady, true, "EngineReady", "the engine serves index "+x.Name)
	setCondition(x, summav1.ConditionProgressing, false, "Stable", "the engine pod runs the desired revision")
}

// podInputs are the operator's decisions for x's pod.
func (r *SummaIndexReconciler) podInputs(x *summav1.SummaIndex, grace int64, acc access) podInputs {
	return podInputs{image: r.image(x), grace: grace, volumePermissions: r.Options.VolumePermissions, access: acc,
		operatorVersion: r.Options.OperatorVersion, shutdownDelay: int64(r.Options.EngineShutdownDelay / time.Second)}
}

// createPod creates the engine pod at the desired revision, with the grace
// the last estimate asks for (nextGrace from the previous pod's grace,
// kept in status).
func (r *SummaIndexReconciler) createPod(ctx context.Context, x *summav1.SummaIndex, acc access) (reconcile.Result, error) {
	grace := nextGrace(x, x.Status.TerminationGracePeriodSeconds, x.Status.DrainEstimateSeconds)
	pod := desiredPod(x, r.podInputs(x, grace, acc))
	if err := controllerutil.SetControllerReference(x, pod, r.Scheme); err != nil {
		return reconcile.Result{}, fmt.Errorf("owner reference on pod: %w", err)
	}
	if err := r.checkDesiredPod(ctx, x, pod); err != nil {
		notReady(x, x.Status.Phase, failureReason(err), "the engine pod cannot be created: "+err.Error(), false)
		return reconcile.Result{RequeueAfter: failureRetry}, err
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, failed(ReasonPodFailed, fmt.Errorf("create engine pod %s: %w", pod.Name, err))
	}
	x.Status.PodName, x.Status.PodUID = pod.Name, pod.UID
	if prev := x.Status.TerminationGracePeriodSeconds; prev > 0 && prev != grace {
		r.event(x, pod, corev1.EventTypeNormal, "GraceResized", "termination grace %ds -> %ds (drain estimate %s)",
			prev, grace, fmtEstimate(x.Status.DrainEstimateSeconds))
	}
	x.Status.TerminationGracePeriodSeconds = grace
	x.Status.ShutdownDeadlineSeconds = engineShutdownDeadline(x, grace)
	x.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	x.Status.UpdateRevision = x.Status.CurrentRevision
	if acc.hash != "" {
		r.recordAccessSync(x, acc.hash)
	}
	phase := summav1.PhasePending
	if x.Status.Phase != summav1.PhasePending {
		phase = summav1.PhaseRestarting
	}
	notReady(x, phase, "PodCreated", "engine pod "+pod.Name+" created; waiting for it to be ready", true)
	r.event(x, pod, corev1.EventTypeNormal, "PodCreated", "engine pod %s created (revision %s, grace %ds)",
		pod.Name, x.Status.CurrentRevision, grace)
	return reconcile.Result{RequeueAfter: pollInterval}, nil
}

// reconcileSuspend drains and stops the engine pod, keeping the volume.
func (r *SummaIndexReconciler) reconcileSuspend(ctx context.Context, x *summav1.SummaIndex, pod *corev1.Pod) (reconcile.Result, error) {
	if pod != nil {
		if pod.DeletionTimestamp == nil {
			return r.replacePod(ctx, x, pod, purposeSuspend)
		}
		notReady(x, summav1.PhaseSuspended, "Suspending", "waiting for the engine pod to stop", true)
		return reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	// The engine is stopped: drains that timed out on the way are over,
	// and Degraded=DrainTimeout with them.
	x.Status.DrainFailures, x.Status.LastDrainFailureTime, x.Status.DrainStartTime = 0, nil, nil
	if x.Status.Phase != summav1.PhaseSuspended {
		r.event(x, nil, corev1.EventTypeNormal, "Suspended", "engine stopped; volume %s kept", x.DataClaimName())
	}
	x.Status.PodName, x.Status.PodUID = "", ""
	notReady(x, summav1.PhaseSuspended, "Suspended", "spec.suspend is set: the engine is stopped, the volume kept", false)
	return reconcile.Result{}, nil
}

// event records a lifecycle event about x (and related, when set).
func (r *SummaIndexReconciler) event(x *summav1.SummaIndex, related runtime.Object, eventType, reason, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	if related != nil {
		if p, ok := related.(*corev1.Pod); ok && p == nil {
			related = nil
		}
	}
	r.Recorder.Eventf(x, related, eventType, reason, reason, note, args...)
}

// fmtEstimate formats an optional estimate.
func fmtEstimate(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1fs", *f)
}

// SetupWithManager registers the reconciler: SummaIndex and everything it
// owns (pods, volumes, Services, Jobs, Secrets, NetworkPolicies) trigger a
// reconcile. Give the manager CacheByObject's cache options, so that it
// caches only the operator's own Secrets.
func (r *SummaIndexReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.defaults()
	if err := mgr.Add(r.watches); err != nil {
		return fmt.Errorf("add the status watches: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&summav1.SummaIndex{}).
		Owns(&corev1.Pod{}).
		// A volume of reclaimPolicy Retain has no owner reference
		// (summaindex_claims.go): volumes map to their index by label.
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(indexOfLabelled)).
		Owns(&corev1.Service{}).
		// A doctor run's Job of a retained volume is owned by the volume
		// (summaindex_doctor_delete.go): Jobs map to their index by label.
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(indexOfLabelled)).
		Owns(&corev1.Secret{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&summav1.SummaIndexBackup{}, handler.EnqueueRequestsFromMapFunc(indexOfBackup)).
		WatchesRawSource(source.Channel(r.restarts.wake, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(r.watches.wake, &handler.EnqueueRequestForObject{})).
		Named("summaindex").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(r.Options.SkipNameValidation),
			MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
}

// indexOfLabelled maps an object the operator made to the SummaIndex its
// summa.dev/index label names, in its namespace.
func indexOfLabelled(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[summav1.LabelIndex]
	if name == "" || obj.GetLabels()[summav1.LabelManagedBy] != summav1.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// CacheByObject are the manager's cache options for what the operator
// watches with a label selector: only the Pods, volumes, Services, Jobs,
// Secrets and NetworkPolicies it made (labelled
// app.kubernetes.io/managed-by=summa-operator, which the Jobs' pods and a
// retained volume keep) are cached, not every pod or Secret of the cluster,
// so the operator's memory follows its indexes, not the cluster. Secrets
// made by people (named in spec.access), and a pod of the engine's name
// the operator did not make, are read from the API server
// (SummaIndexReconciler.APIReader).
func CacheByObject() map[client.Object]cache.ByObject {
	managed := labels.SelectorFromSet(labels.Set{summav1.LabelManagedBy: summav1.ManagedByValue})
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Label: managed},
		&corev1.PersistentVolumeClaim{}: {Label: managed},
		&corev1.Service{}:               {Label: managed},
		&batchv1.Job{}:                  {Label: managed},
		&corev1.Secret{}:                {Label: managed},
		&networkingv1.NetworkPolicy{}:   {Label: managed},
		&policyv1.PodDisruptionBudget{}: {Label: managed},
	}
}
