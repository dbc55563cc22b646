// Command manager runs the Summa operator: the SummaIndex controller, with
// leader election, health probes and Prometheus metrics.
//
//	manager [--leader-elect] [--engine-image IMAGE] [--resync-period 30s] [--volume-permissions]
//	        [--operator-namespace NS] [--cluster-domain cluster.local] [--certificate-validity 8760h]
//	        [--metrics-secure=true] [--metrics-bind-address :8443] [--enable-http2]
//	        [--health-probe-bind-address :8081] [--max-status-watches 1024]
//
// Metrics are served as kubebuilder v4 scaffolds them: over HTTPS on :8443
// (a self-signed certificate unless --metrics-cert-dir holds tls.crt and
// tls.key), each scrape authenticated with a TokenReview and authorized with
// a SubjectAccessReview (get on the non-resource URL /metrics: the
// metrics-reader ClusterRole). --metrics-secure=false serves plain HTTP on
// :8080 without either.
//
// It finds the cluster from KUBECONFIG or the in-cluster service account.
// `manager version` prints the build's version.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/controllers"
)

// leaderElectionID names the Lease the replicas compete for.
const leaderElectionID = "summa-operator.summa.dev"

// Set at build time (Dockerfile, Makefile) with
// -ldflags "-X main.version=v0.2.0 -X main.commit=<sha> -X main.defaultEngineImage=<ref>".
var (
	// version is the operator's release.
	version = "dev"
	// commit is the source revision it was built from, when stamped.
	commit = ""
	// defaultEngineImage is the engine image of the same release; empty in
	// a development build, which then uses controllers.DefaultEngineImage.
	defaultEngineImage = ""
)

// engineImageDefault is --engine-image's default: the environment's
// SUMMA_ENGINE_IMAGE, else the engine image stamped into the build, else
// the development image.
func engineImageDefault() string {
	if defaultEngineImage != "" {
		return envOr("SUMMA_ENGINE_IMAGE", defaultEngineImage)
	}
	return envOr("SUMMA_ENGINE_IMAGE", controllers.DefaultEngineImage)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

// run parses flags and runs the manager until SIGTERM.
func run(args []string) error {
	if len(args) > 0 && args[0] == "version" {
		fmt.Printf("%s, engine image %s\n", versionString(), engineImageDefault())
		return nil
	}
	f, policy, err := parseManagerFlags(args)
	if err != nil {
		return err
	}
	cacheOpts, err := cacheOptions(f.watchNS)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	lg := ctrl.Log.WithName("manager")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := summav1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("find the cluster: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOptions(f.metricsAddr, f.metricsSecure, f.metricsCerts, f.enableHTTP2),
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := setupControllers(mgr, f, policy); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("ready check: %w", err)
	}
	if f.operatorNS == "" {
		lg.Info("No --operator-namespace (POD_NAMESPACE): the engines' NetworkPolicies admit no operator pod")
	}
	if policy == controllers.PodTemplatePolicyUnrestricted {
		lg.Info("WARNING: " + controllers.UnrestrictedPodTemplateWarning)
	}
	if err := checkCRD(cfg); err != nil {
		return err
	}
	lg.Info("Starting", "version", version, "commit", commit, "engineImage", f.engineImage, "resyncPeriod", f.resync.String(), "leaderElection", f.leaderElect,
		"volumePermissions", f.volumePerms, "operatorNamespace", f.operatorNS, "metricsSecure", f.metricsSecure,
		"watchNamespaces", f.watchNS, "podTemplatePolicy", policy)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// managerFlags are the operator's command-line flags.
type managerFlags struct {
	metricsAddr   string
	metricsSecure bool
	metricsCerts  string
	enableHTTP2   bool
	probeAddr     string
	leaderElect   bool
	engineImage   string
	resync        time.Duration
	engineTimeout time.Duration
	shutdownDelay time.Duration
	operatorNS    string
	clusterDomain string
	restarts      int
	restartWait   time.Duration
	statusWatches int
	concurrent    int
	certValidity  time.Duration
	watchNS       string
	podPolicy     string
	volumePerms   bool
	zap           zap.Options
}

// parseManagerFlags parses the operator's command line and checks it.
func parseManagerFlags(args []string) (*managerFlags, controllers.PodTemplatePolicy, error) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f := &managerFlags{}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "", "address of the Prometheus metrics endpoint (default :8443 with --metrics-secure, else :8080; 0 turns it off)")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS, authenticating and authorizing each scrape (TokenReview, SubjectAccessReview); false serves plain HTTP")
	fs.StringVar(&f.metricsCerts, "metrics-cert-dir", "", "directory of tls.crt and tls.key for the secure metrics endpoint (default: a self-signed certificate)")
	fs.BoolVar(&f.enableHTTP2, "enable-http2", false, "allow HTTP/2 on the metrics endpoint (off: HTTP/2 Stream Cancellation and Rapid Reset CVEs)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "hold a Lease so that only one replica reconciles")
	fs.StringVar(&f.engineImage, "engine-image", engineImageDefault(), "engine image of SummaIndexes without spec.image (env SUMMA_ENGINE_IMAGE)")
	fs.DurationVar(&f.resync, "resync-period", controllers.DefaultResyncPeriod, "how often a running index's status is refreshed from its engine")
	fs.DurationVar(&f.engineTimeout, "engine-timeout", 5*time.Second, "bound of each call to an engine's API")
	fs.DurationVar(&f.shutdownDelay, "engine-shutdown-delay", controllers.DefaultEngineShutdownDelay, "how long an engine keeps answering, unready, after SIGTERM while kube-proxy drops its endpoint (its --shutdown-delay; half its shutdown deadline at most; 0: none)")
	fs.StringVar(&f.operatorNS, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, admitted to the engines by their NetworkPolicies (env POD_NAMESPACE)")
	fs.StringVar(&f.clusterDomain, "cluster-domain", controllers.DefaultClusterDomain, "the cluster's DNS domain, for the names in the engine certificates")
	fs.IntVar(&f.restarts, "max-concurrent-restarts", controllers.DefaultMaxConcurrentRestarts, "engines restarted at once for a new revision (a spec change, or an upgrade that needs one), across every index; the others wait their turn, still serving")
	fs.DurationVar(&f.restartWait, "restart-progress-deadline", controllers.DefaultRestartProgressDeadline, "how long a restart may go without a Ready engine pod before it gives its restart slot back (an image that cannot be pulled, a pod that cannot be scheduled)")
	fs.IntVar(&f.statusWatches, "max-status-watches", controllers.DefaultMaxStatusWatches, "status long polls open at once, one per running engine, so that status follows a commit within seconds; past it the engines take turns")
	fs.IntVar(&f.concurrent, "max-concurrent-reconciles", controllers.DefaultMaxConcurrentReconciles, "indexes reconciled at once (one slow engine does not hold up the others)")
	fs.DurationVar(&f.certValidity, "certificate-validity", controllers.DefaultCertificateValidity, "lifetime of the engine certificates the operator issues (renewed two thirds into it)")
	fs.StringVar(&f.watchNS, "watch-namespaces", os.Getenv("WATCH_NAMESPACES"), "comma-separated namespaces whose SummaIndexes this operator reconciles, with Roles there instead of cluster-wide rights (default: every namespace; env WATCH_NAMESPACES)")
	fs.StringVar(&f.podPolicy, "pod-template-policy", envOr("SUMMA_POD_TEMPLATE_POLICY", string(controllers.DefaultPodTemplatePolicy)), "what spec.podTemplate may ask of the engine pod: baseline (the Pod Security baseline level, and the namespace's default ServiceAccount or one annotated "+controllers.AnnotationAllowedForPodTemplate+": \"true\"), restricted (the same at the restricted level), or unrestricted (whatever the namespace admits) (env SUMMA_POD_TEMPLATE_POLICY)")
	fs.BoolVar(&f.volumePerms, "volume-permissions", os.Getenv("SUMMA_VOLUME_PERMISSIONS") == "true", "add an init container (root, CHOWN and FOWNER only) that hands each volume to the engine's non-root user, for storage that ignores fsGroup such as hostPath (env SUMMA_VOLUME_PERMISSIONS=true)")
	f.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, "", err
	}
	if f.resync <= 0 || f.engineTimeout <= 0 || f.shutdownDelay < 0 || f.certValidity <= 0 || f.restarts <= 0 || f.statusWatches <= 0 || f.restartWait <= 0 {
		return nil, "", fmt.Errorf("--resync-period, --engine-timeout, --certificate-validity, --max-concurrent-restarts, --restart-progress-deadline and --max-status-watches must be positive, --engine-shutdown-delay not negative")
	}
	policy, err := controllers.ParsePodTemplatePolicy(f.podPolicy)
	if err != nil {
		return nil, "", fmt.Errorf("--pod-template-policy: %w", err)
	}
	return f, policy, nil
}

// setupControllers adds the SummaIndex and SummaIndexBackup controllers
// to mgr with the options the flags set.
func setupControllers(mgr ctrl.Manager, f *managerFlags, policy controllers.PodTemplatePolicy) error {
	r := &controllers.SummaIndexReconciler{
		Client:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("summa-operator"),
		APIReader: mgr.GetAPIReader(),
		Options: controllers.Options{
			MaxConcurrentReconciles: f.concurrent,
			MaxConcurrentRestarts:   f.restarts,
			RestartProgressDeadline: f.restartWait,
			MaxStatusWatches:        f.statusWatches,
			OperatorVersion:         version,
			DefaultImage:            f.engineImage,
			ResyncPeriod:            f.resync,
			EngineTimeout:           f.engineTimeout,
			EngineShutdownDelay:     f.shutdownDelay,
			VolumePermissions:       f.volumePerms,
			OperatorNamespace:       f.operatorNS,
			ClusterDomain:           f.clusterDomain,
			CertificateValidity:     f.certValidity,
			PodTemplatePolicy:       policy,
		},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the SummaIndex controller: %w", err)
	}
	br := &controllers.SummaIndexBackupReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("summa-operator"), Indexes: r}
	if err := br.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the SummaIndexBackup controller: %w", err)
	}
	return nil
}

// metricsOptions configures the metrics endpoint. Secure, it serves HTTPS
// and lets only callers through whose token authenticates and who may get
// /metrics (controller-runtime's WithAuthenticationAndAuthorization filter,
// as kubebuilder v4 scaffolds it); else plain HTTP, open to anyone who can
// reach the port.
func metricsOptions(addr string, secure bool, certDir string, http2 bool) metricsserver.Options {
	if addr == "" {
		addr = ":8080"
		if secure {
			addr = ":8443"
		}
	}
	opts := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if !secure {
		return opts
	}
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = certDir
	if !http2 {
		opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}

// cacheOptions caches only the operator's own objects (CacheByObject) and,
// with --watch-namespaces, only in those namespaces: the namespaced
// install mode, where the operator holds Roles (RoleBindings of its
// ClusterRole) in each watched namespace and no cluster-wide rights but
// reading StorageClasses (and, for secure metrics, TokenReviews and
// SubjectAccessReviews).
func cacheOptions(watch string) (cache.Options, error) {
	opts := cache.Options{ByObject: controllers.CacheByObject()}
	if strings.TrimSpace(watch) == "" {
		return opts, nil
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range strings.Split(watch, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return opts, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts, nil
}

// versionString names the build.
func versionString() string {
	v := version
	if commit != "" {
		v += " (commit " + commit + ")"
	}
	return fmt.Sprintf("summa-operator %s %s %s/%s", v, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}

// envOr returns the environment variable k, or def when unset.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// checkCRD refuses to start against a SummaIndex CRD older than this
// operator (controllers.CheckCRDRevision); one it may not read is logged
// and passed.
func checkCRD(cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("client for the CRD check: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = controllers.CheckCRDRevision(ctx, c)
	if errors.Is(err, controllers.ErrCRDUnreadable) {
		ctrl.Log.WithName("setup").Info("The CRD's schema revision is not checked", "reason", err.Error())
		return nil
	}
	return err
}
