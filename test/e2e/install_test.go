package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The installation specs install the operator as a user would, from the
// images the Dockerfile produced (IMG and ENGINE_IMG, imported into the
// cluster by `make docker-build-local`): once with the Helm chart, once
// with dist/install.yaml, each on a cluster without the operator or its
// CRD, each taking a SummaIndex to Ready and ingesting, then uninstalling.
//
// On the local cluster the operator runs as installed (pod network, the API
// server through the "kubernetes" Service); its hostPath volumes only need
// the permissions init container: the Helm spec turns it on with values
// (testdata/helm-local-values.yaml), the install.yaml spec sets the
// Deployment's SUMMA_VOLUME_PERMISSIONS as config/local does. On kind
// nothing is changed.
//
// They share the cluster with the other specs, so they first remove the
// operator deployed from config/ (and every SummaIndex, while it still
// runs), and deploy it again at the end.

const (
	// helmNamespace is the Helm release's namespace.
	helmNamespace = "summa-helm"
	// helmRelease is the Helm release's name.
	helmRelease = "summa-operator"
	// installNamespace is the namespace of dist/install.yaml (config/default).
	installNamespace = "summa-system"
	// crdName is the SummaIndex CRD.
	crdName = "summaindexes.summa.dev"
	// uninstallTimeout bounds each removal.
	uninstallTimeout = 5 * time.Minute
)

var _ = Describe("Installation", Ordered, func() {
	var (
		// img and engineImg are the images the Dockerfile produced.
		img, engineImg string
		// helm is the helm binary.
		helm string
		// installYAML is dist/install.yaml.
		installYAML string
	)

	BeforeAll(func() {
		img, engineImg = os.Getenv("SUMMA_E2E_IMG"), os.Getenv("SUMMA_E2E_ENGINE_IMG")
		helm, installYAML = os.Getenv("HELM"), os.Getenv("SUMMA_E2E_INSTALL_YAML")
		if img == "" || engineImg == "" || helm == "" || installYAML == "" {
			Fail("SUMMA_E2E_IMG, SUMMA_E2E_ENGINE_IMG, HELM and SUMMA_E2E_INSTALL_YAML must be set (hack/e2e.sh sets them)")
		}
		By("removing the operator deployed from config/, after every SummaIndex")
		deleteAllIndexes()
		kubectl("delete", "--ignore-not-found", "--wait=true", "--timeout=5m", "-k", filepath.Join(repoRoot, suiteOverlay()))
		waitNoCRD()
		waitNamespaceGone(installNamespace)
		DeferCleanup(restoreSuiteOperator)
	})

	It("I1. the rendered chart and dist/install.yaml pass a server-side dry run", func() {
		// Namespaced objects need their namespace, which a dry run does not
		// create: summa-helm is the release's, summa-system is removed again.
		for _, ns := range []string{helmNamespace, installNamespace} {
			ensureNamespace(ns)
		}
		rendered := helmStdout(helm, "template", helmRelease, chartDir(), "-n", helmNamespace, "--include-crds",
			"--set", "image.repository="+repoOf(img), "--set", "image.tag="+tagOf(img))
		applied := kubectlStdin(rendered, "apply", "--dry-run=server", "-f", "-")
		Expect(applied).To(ContainSubstring("deployment.apps/" + helmRelease + " created (server dry run)"))
		applied = kubectl("apply", "--dry-run=server", "-f", installYAML)
		Expect(applied).To(ContainSubstring("deployment.apps/summa-operator created (server dry run)"))
		Expect(applied).To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/" + crdName + " created (server dry run)"))
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNamespace}})).To(Succeed())
		waitNamespaceGone(installNamespace)
	})

	It("I2. installs with the Helm chart, runs an index from the Dockerfile's images, and uninstalls", func() {
		start := time.Now()
		args := []string{"install", helmRelease, chartDir(), "-n", helmNamespace,
			"--set", "image.repository=" + repoOf(img), "--set", "image.tag=" + tagOf(img),
			"--set", "engineImage.repository=" + repoOf(engineImg), "--set", "engineImage.tag=" + tagOf(engineImg)}
		if mode == "local" {
			args = append(args, "-f", filepath.Join(repoRoot, "test", "e2e", "testdata", "helm-local-values.yaml"))
		}
		helmCmd(helm, args...)
		kubectl("-n", helmNamespace, "rollout", "status", "deployment/"+helmRelease, "--timeout=5m")
		figure("helm install -> operator rolled out: %.1fs", time.Since(start).Seconds())
		expectCRD(true)
		expectOperatorVersion(helmNamespace, helmRelease, img)

		runIndex("e2e-helm", summav1.ReclaimDelete, engineImg)
		Expect(k8s.Delete(ctx, getIndex("e2e-helm"))).To(Succeed())
		waitIndexGone("e2e-helm")
		// The operator deleted the claim before it dropped the finalizer;
		// Kubernetes removes it once its pvc-protection finalizer goes (the
		// controller manager's, asynchronous), as in the other deletion specs.
		Eventually(func() bool { return gone(&corev1.PersistentVolumeClaim{}, "e2e-helm-data") }).
			WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), "reclaimPolicy Delete keeps the volume")

		start = time.Now()
		helmCmd(helm, "uninstall", helmRelease, "-n", helmNamespace, "--wait", "--timeout=5m")
		Eventually(func(g Gomega) {
			g.Expect(listLabelled(g, &appsv1.DeploymentList{}, helmNamespace)).To(BeZero())
			g.Expect(listLabelled(g, &corev1.ServiceAccountList{}, helmNamespace)).To(BeZero())
			g.Expect(listLabelled(g, &corev1.ServiceList{}, helmNamespace)).To(BeZero())
			g.Expect(listLabelled(g, &rbacv1.ClusterRoleList{}, "")).To(BeZero())
			g.Expect(listLabelled(g, &rbacv1.ClusterRoleBindingList{}, "")).To(BeZero())
		}).WithTimeout(uninstallTimeout).WithPolling(poll).Should(Succeed())
		figure("helm uninstall -> operator objects gone: %.1fs", time.Since(start).Seconds())
		// The chart's CRD is kept on uninstall (helm.sh/resource-policy:
		// keep): deleting it, and every SummaIndex with it, is the user's step.
		expectCRD(true)
		kubectl("delete", "crd", crdName, "--wait=true", "--timeout=5m")
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace}})).To(Succeed())
		waitNamespaceGone(helmNamespace)
	})

	It("I3. installs with dist/install.yaml, runs an index from the Dockerfile's images, and uninstalls", func() {
		start := time.Now()
		kubectl("apply", "-f", installYAML)
		if mode == "local" {
			localVolumePermissions(installNamespace, "summa-operator")
		}
		kubectl("-n", installNamespace, "rollout", "status", "deployment/summa-operator", "--timeout=5m")
		figure("kubectl apply -f dist/install.yaml -> operator rolled out: %.1fs", time.Since(start).Seconds())
		expectOperatorVersion(installNamespace, "summa-operator", img)

		runIndex("e2e-installyaml", summav1.ReclaimRetain, engineImg)
		Expect(k8s.Delete(ctx, getIndex("e2e-installyaml"))).To(Succeed())
		waitIndexGone("e2e-installyaml")

		start = time.Now()
		kubectl("delete", "-f", installYAML, "--wait=true", "--timeout=5m")
		waitNoCRD()
		waitNamespaceGone(installNamespace)
		Eventually(func(g Gomega) {
			for _, name := range []string{"summa-operator", "summa-summaindex-editor", "summa-summaindex-viewer"} {
				err := k8s.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRole %s: %v", name, err)
			}
		}).WithTimeout(uninstallTimeout).WithPolling(poll).Should(Succeed())
		figure("kubectl delete -f dist/install.yaml -> CRD, namespace and roles gone: %.1fs", time.Since(start).Seconds())
		// reclaimPolicy Retain: the volume outlives the index and the operator.
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-installyaml-data"}, pvc)).To(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty())
		Expect(k8s.Delete(ctx, pvc)).To(Succeed())
	})
})

// runIndex creates a SummaIndex with the operator's default engine image,
// waits until it is Ready, checks that its engine runs engineImg at the
// release's version, ingests and commits real documents, and waits for
// status to count them.
func runIndex(name string, reclaim summav1.ReclaimPolicy, engineImg string) {
	GinkgoHelper()
	took := createReady(name, func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = reclaim })
	figure("%s: apply -> Ready: %.1fs", name, took.Seconds())
	pod, err := enginePod(name)
	Expect(err).NotTo(HaveOccurred())
	Expect(containerImage(pod, "engine")).To(Equal(engineImg), "the operator's default engine image")
	out := kubectl("-n", testNamespace, "exec", pod.Name, "-c", "engine", "--", "summa-server", "version")
	Expect(out).To(HavePrefix("summa-server " + tagOf(engineImg) + " "))
	ingest(name, 0, 200)
	commit(name)
	Eventually(func() int64 { return getIndex(name).Status.Documents }).
		WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeEquivalentTo(200))
	expectAll(name, 0, 200)
}

// containerImage returns the image of a pod's container (init containers
// included: the engine may be a native sidecar).
func containerImage(pod *corev1.Pod, name string) string {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return c.Image
			}
		}
	}
	return ""
}

// expectOperatorVersion checks that the operator runs img and logged the
// version of img's tag when it started.
func expectOperatorVersion(namespace, deployment, img string) {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, d)).To(Succeed())
	Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(img))
	want := regexp.MustCompile(`"msg":"Starting".*"version":"` + regexp.QuoteMeta(tagOf(img)) + `"`)
	Eventually(func() string {
		out, _ := exec.Command(kubectlBin, "-n", namespace, "logs", "deployment/"+deployment, "-c", "manager").CombinedOutput()
		return string(out)
	}).WithTimeout(time.Minute).WithPolling(poll).Should(MatchRegexp(want.String()))
}

// localVolumePermissions turns on the volume-permissions init container of
// an applied operator Deployment, as config/local does: the local cluster's
// hostPath volumes ignore fsGroup.
func localVolumePermissions(namespace, deployment string) {
	GinkgoHelper()
	Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, d); err != nil {
			return err
		}
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "SUMMA_VOLUME_PERMISSIONS", Value: "true"})
		return k8s.Update(ctx, d)
	}).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// listLabelled counts the Helm release's objects of a list type (in a
// namespace, or cluster-wide with "").
func listLabelled(g Gomega, list client.ObjectList, namespace string) int {
	opts := []client.ListOption{client.MatchingLabels{"app.kubernetes.io/instance": helmRelease, "app.kubernetes.io/managed-by": "Helm"}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	g.Expect(k8s.List(ctx, list, opts...)).To(Succeed())
	return apimeta.LenList(list)
}

// getCRD reads the SummaIndex CRD (unstructured: the suite's scheme has
// no apiextensions types).
func getCRD() error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	return k8s.Get(ctx, client.ObjectKey{Name: crdName}, u)
}

// expectCRD checks whether the SummaIndex CRD exists.
func expectCRD(exists bool) {
	GinkgoHelper()
	err := getCRD()
	if exists {
		Expect(err).NotTo(HaveOccurred())
	} else {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CRD: %v", err)
	}
}

// waitNoCRD waits until the SummaIndex CRD is gone.
func waitNoCRD() {
	GinkgoHelper()
	Eventually(func() bool { return apierrors.IsNotFound(getCRD()) }).WithTimeout(uninstallTimeout).WithPolling(poll).Should(BeTrue(), "CRD %s still there", crdName)
}

// waitNamespaceGone waits until a namespace no longer exists.
func waitNamespaceGone(ns string) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}).WithTimeout(uninstallTimeout).WithPolling(poll).Should(BeTrue(), "namespace %s still there", ns)
}

// ensureNamespace creates a namespace unless it exists.
func ensureNamespace(ns string) {
	GinkgoHelper()
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// waitIndexGone waits until a SummaIndex of the test namespace is deleted.
func waitIndexGone(name string) {
	GinkgoHelper()
	Eventually(func() bool { return gone(&summav1.SummaIndex{}, name) }).
		WithTimeout(uninstallTimeout).WithPolling(poll).Should(BeTrue(), "SummaIndex %s still there", name)
}

// deleteAllIndexes deletes every SummaIndex of the cluster and waits until
// the operator has finished their deletion (nothing to do without the CRD).
func deleteAllIndexes() {
	GinkgoHelper()
	if apierrors.IsNotFound(getCRD()) {
		return
	}
	Expect(k8s.DeleteAllOf(ctx, &summav1.SummaIndex{}, client.InNamespace(testNamespace))).To(Succeed())
	Eventually(func(g Gomega) {
		list := &summav1.SummaIndexList{}
		g.Expect(k8s.List(ctx, list)).To(Succeed())
		var left []string
		for _, x := range list.Items {
			left = append(left, x.Namespace+"/"+x.Name)
			if x.DeletionTimestamp == nil {
				g.Expect(k8s.Delete(ctx, &x)).To(Succeed())
			}
		}
		sort.Strings(left)
		g.Expect(left).To(BeEmpty())
	}).WithTimeout(uninstallTimeout).WithPolling(poll).Should(Succeed())
}

// suiteOverlay is the config/ overlay the suite deploys the operator from.
func suiteOverlay() string {
	if mode == "kind" {
		return "config/default"
	}
	return "config/local"
}

// restoreSuiteOperator removes what the installation specs may have left
// (after a failure) and deploys the operator from config/ again, for the
// specs that run after them.
func restoreSuiteOperator() {
	By("deploying the operator from config/ again")
	if helm := os.Getenv("HELM"); helm != "" {
		_ = exec.Command(helm, "uninstall", helmRelease, "-n", helmNamespace, "--ignore-not-found", "--wait", "--timeout=2m").Run()
	}
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace}})
	// A namespace being deleted (by a failed spec) cannot take objects.
	ns := &corev1.Namespace{}
	if k8s.Get(ctx, client.ObjectKey{Name: installNamespace}, ns) == nil && ns.DeletionTimestamp != nil {
		waitNamespaceGone(installNamespace)
	}
	kubectl("apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, suiteOverlay()))
	kubectl("-n", installNamespace, "rollout", "status", "deployment/summa-operator", "--timeout=180s")
	ensureNamespace(testNamespace)
}

// chartDir is the Helm chart.
func chartDir() string { return filepath.Join(repoRoot, "charts", "summa-operator") }

// helmCmd runs helm and returns its output; a failure fails the spec.
func helmCmd(helm string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(helm, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "helm %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// helmStdout runs helm and returns its standard output alone.
func helmStdout(helm string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(helm, args...).Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "helm %s: %s", strings.Join(args, " "), stderr)
	return string(out)
}

// kubectlStdin runs kubectl with stdin and returns its output.
func kubectlStdin(stdin string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(kubectlBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// repoOf and tagOf split an image reference REPO:TAG.
func repoOf(ref string) string { return ref[:strings.LastIndex(ref, ":")] }
func tagOf(ref string) string  { return ref[strings.LastIndex(ref, ":")+1:] }
