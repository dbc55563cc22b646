package controllers

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	summav1 "github.com/summadev/summa/api/v1"
)

// The suite runs on a real kube-apiserver and etcd (envtest), built from
// the Go module proxy by `make envtest` into bin/envtest. KUBEBUILDER_ASSETS
// may point elsewhere. Without the binaries the suite is skipped, unless
// SUMMA_REQUIRE_ENVTEST is set (CI sets it), in which case it fails.

// requireEnvtestVar makes missing envtest binaries a failure.
const requireEnvtestVar = "SUMMA_REQUIRE_ENVTEST"

var (
	// cfg is the envtest API server's client configuration.
	cfg *rest.Config
	// k8sClient talks to the envtest API server, with the Summa types.
	k8sClient client.Client
	// testScheme knows the built-in types and summa.dev/v1.
	testScheme *runtime.Scheme
	// testEnv is the running control plane.
	testEnv *envtest.Environment
	// ctx is cancelled at the end of the suite.
	ctx context.Context
	// cancel cancels ctx.
	cancel context.CancelFunc
	// assetsDir holds the envtest binaries.
	assetsDir string
)

func TestControllers(t *testing.T) {
	dir, ok := envtestAssets()
	if !ok {
		msg := "envtest binaries (kube-apiserver, etcd) not found in " + dir + ": run `make envtest`"
		if os.Getenv(requireEnvtestVar) != "" {
			t.Fatal(msg + " (" + requireEnvtestVar + " is set, so this is a failure)")
		}
		t.Skip(msg + " (set " + requireEnvtestVar + "=1 to fail instead of skipping)")
	}
	assetsDir = dir
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers Suite")
}

// envtestAssets returns the directory of the envtest binaries and whether
// both are there.
func envtestAssets() (string, bool) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join("..", "bin", "envtest")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return dir, false
		}
	}
	return dir, true
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	ctx, cancel = context.WithCancel(context.Background())

	testScheme = runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(testScheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(testScheme)).To(Succeed())
	Expect(summav1.AddToScheme(testScheme)).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:        []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assetsDir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: testScheme})
	Expect(err).NotTo(HaveOccurred())

	startGarbageCollector()
	startKubeletAndOperator()
})

var _ = AfterSuite(func() {
	stopKubeletAndOperator()
	stopGarbageCollector()
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
