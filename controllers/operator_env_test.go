package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/envkubelet"
)

// The operator specs run the real reconciler in a manager against the
// envtest API server, and envkubelet plays the kubelet, scheduler and Job
// controller: every engine pod is a real summa-server process on its own
// loopback address, every doctor or backup Job a real summa-server run.

// specNamespace holds the operator specs' objects; the manager watches
// only it (the validation specs' objects are left alone).
const specNamespace = "summa-specs"

var (
	// kubelet runs the pods.
	kubelet *envkubelet.Kubelet
	// kubeletStop stops the kubelet's loop.
	kubeletStop context.CancelFunc
	// op is the running operator.
	op *operatorProcess
	// opMu guards op.
	opMu sync.Mutex
	// binDir holds the summa-server built for the suite.
	binDir string
	// certificateValidity is the lifetime of the certificates the next
	// started operator issues (zero: the default year).
	certificateValidity time.Duration
	// maxConcurrentRestarts is the restart budget of the next started
	// operator (high, so that specs do not wait for each other's indexes).
	maxConcurrentRestarts = 100
	// restartProgressDeadline is the RestartProgressDeadline of the next
	// started operator (zero: the default).
	restartProgressDeadline time.Duration
	// operatorVersion is the version the next started operator records on
	// its pods.
	operatorVersion = "v-specs"
	// resyncPeriod is the status resync of the next started operator.
	resyncPeriod = time.Second
	// maxConcurrentReconciles is the reconcile workers of the next
	// started operator (zero: the default).
	maxConcurrentReconciles int
	// podTemplatePolicy is the pod template policy of the next started
	// operator (empty: the default).
	podTemplatePolicy PodTemplatePolicy
	// engineCallHook, when set, runs in the operator after each engine
	// call that changes the engine, before it is recorded.
	engineCallHook func(ctx context.Context, call string)
	// hookMu guards engineCallHook.
	hookMu sync.Mutex
)

// operatorProcess is one running manager.
type operatorProcess struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startKubeletAndOperator builds summa-server, starts the kubelet and an
// operator.
func startKubeletAndOperator() {
	var err error
	binDir, err = os.MkdirTemp("", "summa-operator-specs-")
	Expect(err).NotTo(HaveOccurred())
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "summa-server"), "../cmd/summa-server")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build summa-server: %s", out)
	// Every engine container runs through the fake follower, which is the
	// real summa-server (exec) unless started with --follow
	// (internal/testing/fakefollower).
	build = exec.Command("go", "build", "-o", filepath.Join(binDir, "fakefollower"), "../internal/testing/fakefollower")
	out, err = build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build fakefollower: %s", out)

	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: specNamespace}})).To(Succeed())
	kubelet = envkubelet.New(k8sClient, envkubelet.Options{
		Binaries: map[string]string{EngineCommand: filepath.Join(binDir, "fakefollower")},
		Root:     filepath.Join(binDir, "node"),
		Log:      zap.New(zap.WriteTo(GinkgoWriter)).WithName("kubelet"),
		// As lazy as a kubelet can be: a Secret's change reaches a running
		// engine only because the operator updates the pod's annotation.
		SecretSyncPeriod: time.Hour,
		// The real garbage collector runs (gc_env_test.go), when built.
		NoGarbageCollector: gcProcess != nil,
	})
	kctx, kcancel := context.WithCancel(ctx)
	kubeletStop = kcancel
	go func() {
		defer GinkgoRecover()
		if err := kubelet.Start(kctx); err != nil && kctx.Err() == nil {
			Fail("kubelet: " + err.Error())
		}
	}()
	startOperator()
}

// stopKubeletAndOperator stops both and removes the node's files.
func stopKubeletAndOperator() {
	stopOperator()
	if kubeletStop != nil {
		kubeletStop()
	}
	if kubelet != nil {
		kubelet.Stop()
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// startOperator starts a new manager with the reconciler, as a freshly
// started operator pod would.
func startOperator() {
	opMu.Lock()
	defer opMu.Unlock()
	Expect(op).To(BeNil(), "an operator is already running")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{specNamespace: {}},
			ByObject:          CacheByObject(),
		},
		Logger: zap.New(zap.WriteTo(GinkgoWriter)).WithName("operator"),
	})
	Expect(err).NotTo(HaveOccurred())
	r := &SummaIndexReconciler{
		Client:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("summa-operator"),
		APIReader: mgr.GetAPIReader(),
		Options: Options{
			ResyncPeriod:            resyncPeriod,
			MaxConcurrentReconciles: maxConcurrentReconciles,
			EngineTimeout:           5 * time.Second,
			DrainBackoff:            2 * time.Second,
			VolumePermissions:       true,
			SkipNameValidation:      true,
			OperatorNamespace:       operatorNamespace, // as config/ installs it
			CertificateValidity:     certificateValidity,
			OperatorVersion:         operatorVersion,
			MaxConcurrentRestarts:   maxConcurrentRestarts,
			RestartProgressDeadline: restartProgressDeadline,
			PodTemplatePolicy:       podTemplatePolicy,
			BackupClock:             specBackupClock,
			engineTransport:         func(next http.RoundTripper) http.RoundTripper { return engineStandIn{next: next} },
			afterEngineCall: func(ctx context.Context, call string) {
				hookMu.Lock()
				h := engineCallHook
				hookMu.Unlock()
				if h != nil {
					h(ctx, call)
				}
			},
		},
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	br := &SummaIndexBackupReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("summa-operator"), Indexes: r}
	Expect(br.SetupWithManager(mgr)).To(Succeed())
	octx, ocancel := context.WithCancel(ctx)
	p := &operatorProcess{cancel: ocancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(p.done)
		Expect(mgr.Start(octx)).To(Succeed())
	}()
	op = p
}

// stopOperator stops the running manager and waits for it, like a killed
// operator pod: whatever a reconcile had not written is lost.
func stopOperator() {
	opMu.Lock()
	defer opMu.Unlock()
	if op == nil {
		return
	}
	op.cancel()
	<-op.done
	op = nil
}

// restartOperator replaces the running operator by a new one.
func restartOperator() {
	stopOperator()
	startOperator()
}

// getIndex reads a SummaIndex of the spec namespace.
func getIndex(name string) *summav1.SummaIndex {
	GinkgoHelper()
	x := &summav1.SummaIndex{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, x)).To(Succeed())
	return x
}

// enginePodOf reads the engine pod of a SummaIndex.
func enginePodOf(name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name + "-engine"}, pod)
	return pod, err
}

// engineOf returns a client of a SummaIndex's engine at its pod's
// address, with the admin token and, over HTTPS, the CA of the Secrets in
// status.access.
func engineOf(name string) *engineclient.Client {
	GinkgoHelper()
	return engineWithToken(name, summav1.AdminTokenKey)
}

// engineWithToken is engineOf with the first token of key (admin-token,
// write-token or read-token) of the credentials Secret.
func engineWithToken(name, key string) *engineclient.Client {
	GinkgoHelper()
	pod, err := enginePodOf(name)
	Expect(err).NotTo(HaveOccurred())
	Expect(pod.Status.PodIP).NotTo(BeEmpty())
	x := getIndex(name)
	Expect(x.Status.Access).NotTo(BeNil(), "status.access of %s", name)
	token := firstToken(secretOf(x.Status.Access.CredentialsSecret).Data[key])
	scheme, ca := "http://", []byte(nil)
	if x.Status.Access.TLSSecret != "" {
		scheme, ca = "https://", secretOf(x.Status.Access.TLSSecret).Data[summav1.CACertKey]
	}
	cacheKey := string(ca) + "|" + x.ServiceHost()
	hc, ok := specHTTPClients.Load(cacheKey)
	if !ok {
		c, err := engineclient.NewHTTPClient(ca, x.ServiceHost(), time.Minute)
		Expect(err).NotTo(HaveOccurred())
		hc, _ = specHTTPClients.LoadOrStore(cacheKey, c)
	}
	return engineclient.New(scheme+net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(EnginePort)), hc.(*http.Client)).WithToken(token)
}

// specHTTPClients are the specs' HTTP clients of the engines, by CA and
// server name, so that connections are reused across calls.
var specHTTPClients sync.Map

// secretOf reads a Secret of the spec namespace.
func secretOf(name string) *corev1.Secret {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, s)).To(Succeed())
	return s
}

// eventReasons lists the reasons of the events about a SummaIndex.
func eventReasons(name string) []string {
	GinkgoHelper()
	list := &corev1.EventList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(specNamespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "SummaIndex" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// stepWatcher restarts the operator every time a SummaIndex's lifecycle
// state (phase, doctor phase, drain in progress, pod) changes: the
// operator is killed between every two steps it records.
type stepWatcher struct {
	stop     chan struct{}
	done     chan struct{}
	restarts int
	steps    []string
}

// watchSteps starts a stepWatcher on a SummaIndex.
func watchSteps(name string) *stepWatcher {
	w := &stepWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		last := ""
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			x := &summav1.SummaIndex{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, x); err != nil {
				continue
			}
			step := fmt.Sprintf("phase=%s drain=%v pod=%s", x.Status.Phase, x.Status.DrainStartTime != nil, x.Status.PodUID)
			if d := x.Status.Doctor; d != nil {
				step += " doctor=" + d.Phase
			}
			if x.DeletionTimestamp != nil {
				step += " deleting"
			}
			if step != last {
				last = step
				w.steps = append(w.steps, step)
				restartOperator()
				w.restarts++
			}
		}
	}()
	return w
}

// Stop ends the watcher (the operator keeps running).
func (w *stepWatcher) Stop() {
	close(w.stop)
	<-w.done
}
