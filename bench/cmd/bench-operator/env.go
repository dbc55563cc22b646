package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/controllers"
	"github.com/summadev/summa/internal/testing/envkubelet"
)

// operatorUser is the name the operator authenticates as; the audit
// policy records its writes only.
const operatorUser = "summa-operator"

// auditPolicy records the mutating requests of operatorUser, once each
// (when the response is complete), and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  users: ["` + operatorUser + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// binaries are the executables the bench runs.
type binaries struct {
	// server is summa-server.
	server string
	// manager is the operator.
	manager string
}

// buildBinaries builds summa-server and the operator into dir.
func buildBinaries(ctx context.Context, dir string) (binaries, error) {
	b := binaries{server: filepath.Join(dir, "summa-server"), manager: filepath.Join(dir, "manager")}
	for out, pkg := range map[string]string{b.server: "./cmd/summa-server", b.manager: "./cmd/manager"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s (run from the repository root): %w\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// env is the running scene: API server, kubelet and operator.
type env struct {
	// dir is the work directory.
	dir string
	// bins are the executables.
	bins binaries
	// testEnv runs kube-apiserver and etcd.
	testEnv *envtest.Environment
	// direct talks to the API server without a cache (the bench's writes).
	direct client.Client
	// cached reads the index namespaces from an informer cache: the
	// kubelet polls through it (its garbage collector's unstructured
	// owner lookups included), and the bench watches status with it.
	cached client.Client
	// kubelet runs the engine pods.
	kubelet *envkubelet.Kubelet
	// cancel stops the cache and the kubelet.
	cancel context.CancelFunc
	// kubeconfig is the operator's kubeconfig file.
	kubeconfig string
	// auditLog is the API server's audit log.
	auditLog string
	// operator is the running operator process, if any.
	operator *exec.Cmd
	// etcdData is etcd's data directory when the bench made it outside
	// the work directory (removed by stop).
	etcdData string
}

// defaultEtcdDisk is -etcd-disk's default: /dev/shm where it exists. The
// engines commit with fsync on the work directory's disk; an etcd there
// waits behind a hundred engines' fsyncs for each of its own, which no
// production control plane does (etcd's own guidance: a dedicated disk),
// and the API server's write time, not the operator, would then set the
// status staleness.
func defaultEtcdDisk() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// scheme knows the built-in types and summa.dev/v1.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := summav1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// startEnv starts the API server (with the audit log), the kubelet and
// the operator's credentials. The kubelet and the bench read the index
// namespaces through a cache that holds only those, so that their polling
// stays cheap with thousands of objects.
func startEnv(ctx context.Context, dir string, c config, bins binaries) (*env, error) {
	e := &env{dir: dir, bins: bins, auditLog: filepath.Join(dir, "audit.log")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	e.testEnv = &envtest.Environment{
		CRDDirectoryPaths:        []string{filepath.Join("config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    c.assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if c.etcdDisk != "" {
		d, err := os.MkdirTemp(c.etcdDisk, "bench-operator-etcd-")
		if err != nil {
			return nil, fmt.Errorf("etcd data directory under -etcd-disk %s: %w", c.etcdDisk, err)
		}
		e.etcdData = d
		e.testEnv.ControlPlane.Etcd = &envtest.Etcd{DataDir: d}
	}
	args := e.testEnv.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", e.auditLog)
	args.Set("audit-log-format", "json")
	args.Set("audit-log-mode", "batch")
	args.Set("audit-log-batch-max-wait", "1s")
	// envtest's default range (a /24) holds 254 Services: too few for
	// 1,000 indexes.
	args.Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := e.testEnv.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (binaries in %s: make envtest): %w", c.assets, err)
	}
	ok := false
	defer func() {
		if !ok {
			e.stop()
		}
	}()
	user, err := e.testEnv.AddUser(envtest.User{Name: operatorUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	e.kubeconfig = filepath.Join(dir, "operator.kubeconfig")
	if err := os.WriteFile(e.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	s := scheme()
	if e.direct, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return nil, err
	}
	ns := map[string]cache.Config{}
	for _, n := range indexNamespaces(c.namespaces) {
		ns[n] = cache.Config{}
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: s, DefaultNamespaces: ns})
	if err != nil {
		return nil, err
	}
	if e.cached, err = client.New(cfg, client.Options{Scheme: s, Cache: &client.CacheOptions{Reader: informers, Unstructured: true}}); err != nil {
		return nil, err
	}
	kctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	go func() { _ = informers.Start(kctx) }()
	klog, err := os.Create(filepath.Join(dir, "kubelet.log"))
	if err != nil {
		return nil, err
	}
	lg := zap.New(zap.WriteTo(klog))
	ctrllog.SetLogger(lg)
	e.kubelet = envkubelet.New(e.cached, envkubelet.Options{
		Binaries: map[string]string{controllers.EngineCommand: bins.server},
		Root:     filepath.Join(dir, "node"),
		Log:      lg.WithName("kubelet"),
		// The kubelet's probe load (each probe a TLS handshake, every
		// periodSeconds), not the tests' every 300 ms: a hundred engines
		// probed that often cost the harness a core.
		ProbePeriods: true,
	})
	go func() {
		if err := e.kubelet.Start(kctx); err != nil {
			logf("kubelet: %v", err)
		}
	}()
	ok = true
	return e, nil
}

// startOperator runs the operator binary as a real operator would run:
// its own process, its own credentials, no leader election, no metrics or
// probe ports.
func (e *env) startOperator(c config) error {
	args := []string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--resync-period=" + c.resync.String(),
		"--engine-image=" + controllers.EngineCommand + ":bench",
		"--operator-namespace=summa-system",
	}
	if c.concurrent > 0 {
		args = append(args, "--max-concurrent-reconciles="+strconv.Itoa(c.concurrent))
	}
	out, err := os.OpenFile(filepath.Join(e.dir, "operator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(e.bins.manager, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the operator: %w", err)
	}
	e.operator = cmd
	logf("operator started (pid %d, %s)", cmd.Process.Pid, strings.Join(args, " "))
	return nil
}

// rss returns the operator process's resident set and its peak, in MiB,
// from /proc.
func (e *env) rss() (cur, peak float64, err error) {
	if e.operator == nil {
		return 0, 0, fmt.Errorf("no operator running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", e.operator.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[0], 64)
		switch k {
		case "VmRSS":
			cur = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return cur, peak, sc.Err()
}

// stopOperator stops the operator process (SIGTERM, then SIGKILL after
// 20 s) and waits for it.
func (e *env) stopOperator() {
	if e.operator == nil {
		return
	}
	_ = e.operator.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.operator.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = e.operator.Process.Kill()
		<-done
	}
	e.operator = nil
}

// stop ends the operator, the kubelet (and with it every engine) and the
// API server.
func (e *env) stop() {
	e.stopOperator()
	if e.cancel != nil {
		e.cancel()
	}
	if e.kubelet != nil {
		e.kubelet.Stop()
	}
	if e.testEnv != nil {
		if err := e.testEnv.Stop(); err != nil {
			logf("stop envtest: %v", err)
		}
	}
	if e.etcdData != "" {
		_ = os.RemoveAll(e.etcdData)
	}
}
