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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/defaults"
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
	defaults.Set(&o.DefaultImage, DefaultEngineImage)
	defaults.Set(&o.ResyncPeriod, DefaultResyncPeriod)
	defaults.Set(&o.EngineTimeout, defaultEngineTimeout)
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
	defaults.Set(&o.DrainBackoff, drainBackoffMin)
	defaults.Set(&o.ClusterDomain, DefaultClusterDomain)
	defaults.Set(&o.CertificateValidity, DefaultCertificateValidity)
	defaults.Set(&o.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles)
	defaults.Set(&o.PodTemplatePolicy, DefaultPodTemplatePolicy)
	defaults.Set(&o.RestartProgressDeadline, DefaultRestartProgressDeadline)
	defaults.Set(&o.MaxConcurrentRestarts, DefaultMaxConcurrentRestarts)
	if r.restarts == nil {
		r.restarts = newRestartBudget(1024)
	}
	r.clients.wrap = o.engineTransport
	defaults.Set(&o.MaxStatusWatches, DefaultMaxStatusWatches)
	if r.watches == nil {
		r.watches = newStatusWatches(o.MaxStatusWatches, ctrl.Log.WithName("status-watch"), r.Client, r.APIReader, o.Now)
	}
}

// image is index's engine image.
func (r *SummaIndexReconciler) image(index *summav1.SummaIndex) string {
	if index.Spec.Image != "" {
		return index.Spec.Image
	}
	return r.Options.DefaultImage
}

// Reconcile runs one pass for a SummaIndex and writes its status once, at
// the end, if it changed.
func (r *SummaIndexReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	index := &summav1.SummaIndex{}
	if err := r.Get(ctx, req.NamespacedName, index); err != nil {
		if apierrors.IsNotFound(err) {
			forgetIndexMetrics(req.Namespace, req.Name)
			r.warnings.forgetName(req.NamespacedName)
			r.restarts.settle(req.NamespacedName, false, false, r.Options.MaxConcurrentRestarts)
			r.unreachable.reset(req.NamespacedName)
			r.watches.stop(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	sw := newStatusWriter(r.Client, index)
	start := time.Now()
	r.watches.begin(req.NamespacedName)
	res, err := r.reconcile(ctx, index, sw)
	r.watches.finish(req.NamespacedName)
	if res.RequeueAfter == r.Options.ResyncPeriod {
		// The next refresh is a period after this one began, not after
		// it ended: status is never older than the period.
		res.RequeueAfter = max(pollInterval, res.RequeueAfter-time.Since(start))
	}
	if err != nil {
		reconcileErrorsTotal.WithLabelValues(string(index.Status.Phase)).Inc()
	} else {
		// Every step of this generation was decided (a step that failed
		// says so in Degraded): status tells of this spec.
		index.Status.ObservedGeneration = index.Generation
	}
	queued := index.GetCondition(summav1.ConditionProgressing)
	r.restarts.settle(req.NamespacedName, holdsRestartSlot(index, r.Options.Now(), r.Options.RestartProgressDeadline),
		queued != nil && queued.Status == metav1.ConditionTrue && queued.Reason == ReasonRestartQueued, r.Options.MaxConcurrentRestarts)
	if index.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(index, summav1.Finalizer) {
		forgetIndexMetrics(index.Namespace, index.Name)
		r.warnings.forgetName(req.NamespacedName)
		return res, err // gone once the finalizer left
	}
	summarize(index)
	recordIndexMetrics(index)
	if werr := sw.write(ctx, index); werr != nil {
		if apierrors.IsConflict(werr) || apierrors.IsNotFound(werr) {
			return reconcile.Result{Requeue: true}, err
		}
		return res, errors.Join(err, werr)
	}
	return res, err
}

// enginePod returns index's engine pod, or nil when there is none.
func (r *SummaIndexReconciler) enginePod(ctx context.Context, index *summav1.SummaIndex) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.EnginePodName()}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get engine pod: %w", err)
	}
	if metav1.IsControlledBy(pod, index) {
		return pod, nil
	}
	if !isOrphanOf(index, pod) {
		return nil, fmt.Errorf("pod %s exists and is not controlled by SummaIndex %s", pod.Name, index.Name)
	}
	// An engine pod left by a SummaIndex of this name deleted with orphan
	// propagation (or orphaned while index itself is deleted that way): index stops
	// it when deleting, and adopts it otherwise.
	if index.DeletionTimestamp == nil {
		if err := r.adoptOrphan(ctx, index, pod); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// reconcileSuspend drains and stops the engine pod, keeping the volume.
func (r *SummaIndexReconciler) reconcileSuspend(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (reconcile.Result, error) {
	if pod != nil {
		if pod.DeletionTimestamp == nil {
			return r.replacePod(ctx, index, pod, purposeSuspend)
		}
		notReady(index, summav1.PhaseSuspended, "Suspending", "waiting for the engine pod to stop", true)
		return reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	// The engine is stopped: drains that timed out on the way are over,
	// and Degraded=DrainTimeout with them.
	index.Status.DrainFailures, index.Status.LastDrainFailureTime, index.Status.DrainStartTime = 0, nil, nil
	if index.Status.Phase != summav1.PhaseSuspended {
		r.event(index, nil, corev1.EventTypeNormal, "Suspended", "engine stopped; volume %s kept", index.DataClaimName())
	}
	index.Status.PodName, index.Status.PodUID = "", ""
	notReady(index, summav1.PhaseSuspended, "Suspended", "spec.suspend is set: the engine is stopped, the volume kept", false)
	return reconcile.Result{}, nil
}

// event records a lifecycle event about index (and related, when set).
func (r *SummaIndexReconciler) event(index *summav1.SummaIndex, related runtime.Object, eventType, reason, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	if related != nil {
		if p, ok := related.(*corev1.Pod); ok && p == nil {
			related = nil
		}
	}
	r.Recorder.Eventf(index, related, eventType, reason, reason, note, args...)
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
		// The operator's own status writes (a pass's, a status watch's)
		// wake no pass: only what a person or another controller changes.
		For(&summav1.SummaIndex{}, builder.WithPredicates(specOrMetadataChanged())).
		Owns(&corev1.Pod{}).
		// A volume of reclaimPolicy Retain has no owner reference
		// (summaindex_claims.go): volumes map to their index by label.
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(indexOfLabelled)).
		Owns(&corev1.Service{}).
		// A doctor run's Job of a retained volume is owned by the volume
		// (summaindex_doctor.go): Jobs map to their index by label.
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

// specOrMetadataChanged lets through the SummaIndex updates a pass has to
// act on: spec (metadata.generation), labels, annotations, finalizers or
// the deletion timestamp; a change of status alone is the operator's own
// write and wakes nothing. Creations, deletions and the resync pass.
func specOrMetadataChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{}, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return true
			}
			return !equality.Semantic.DeepEqual(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers()) ||
				!equality.Semantic.DeepEqual(e.ObjectOld.GetDeletionTimestamp(), e.ObjectNew.GetDeletionTimestamp()) ||
				!equality.Semantic.DeepEqual(e.ObjectOld.GetOwnerReferences(), e.ObjectNew.GetOwnerReferences())
		}})
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
