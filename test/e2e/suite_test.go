// Package e2e runs the operator's lifecycle duties on a real kubelet: the
// operator deployed in-cluster from config/ (so its RBAC is the real one),
// engine pods from the summa-server image, real SIGTERM, grace periods,
// native sidecars and Jobs.
//
// The cluster comes from KUBECONFIG. SUMMA_E2E selects how it was made:
//
//	local  hack/cluster (make cluster-up): this machine's single-node
//	       cluster; pods are reachable at their IPs, volumes are hostPath
//	kind   a kind cluster with the images loaded (make e2e-kind): engines
//	       are reached through kubectl port-forward
//
// Without SUMMA_E2E the suite is skipped (SUMMA_REQUIRE_E2E=1 makes that a
// failure). `make e2e` brings up the local cluster and runs it.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	summav1 "github.com/summadev/summa/api/v1"
)

var (
	// k8s talks to the cluster with the Summa types.
	k8s client.Client
	// ctx is the suite's context.
	ctx = context.Background()
	// mode is SUMMA_E2E: local or kind.
	mode string
	// repoRoot is the repository's root.
	repoRoot string
	// kubectlBin is the kubectl to run.
	kubectlBin string
)

// testNamespace holds the specs' SummaIndexes.
const testNamespace = "summa-e2e"

func TestE2E(t *testing.T) {
	mode = os.Getenv("SUMMA_E2E")
	if mode == "" {
		msg := "SUMMA_E2E is not set (local or kind); `make e2e` runs this suite on the local cluster"
		if os.Getenv("SUMMA_REQUIRE_E2E") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "End-to-end Suite")
}

var _ = BeforeSuite(func() {
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	kubectlBin = filepath.Join(repoRoot, "bin", "cluster", "kubectl")
	if _, err := os.Stat(kubectlBin); err != nil {
		kubectlBin = "kubectl"
	}
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(summav1.AddToScheme(scheme)).To(Succeed())
	cfg, err := config.GetConfig()
	Expect(err).NotTo(HaveOccurred(), "KUBECONFIG")
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	By("deploying the operator from config/")
	overlay := "config/local"
	if mode == "kind" {
		overlay = "config/default"
	}
	// --force-conflicts: the suite owns the cluster, also fields another
	// manager (helm, in the installation specs) applied before.
	kubectl("apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, overlay))
	kubectl("-n", "summa-system", "rollout", "status", "deployment/summa-operator", "--timeout=180s")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := k8s.Create(ctx, ns); err != nil {
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
})

var _ = AfterSuite(func() {
	if k8s == nil {
		return
	}
	// Leave the cluster clean: every SummaIndex (Delete policy or not) goes.
	list := &summav1.SummaIndexList{}
	if k8s.List(ctx, list, client.InNamespace(testNamespace)) == nil {
		for i := range list.Items {
			_ = k8s.Delete(ctx, &list.Items[i])
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if k8s.List(ctx, list, client.InNamespace(testNamespace)) == nil && len(list.Items) == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})
})

// kubectl runs kubectl and returns its output; a failure fails the spec.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(kubectlBin, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// kubectlOut runs kubectl and returns its output and error, for polls.
func kubectlOut(args ...string) (string, error) {
	out, err := exec.Command(kubectlBin, args...).CombinedOutput()
	return string(out), err
}
