package controllers

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// configDir is the repository's config/ seen from this package.
var configDir = filepath.Join("..", "config")

// operatorNamespace is where config/ installs the operator.
const operatorNamespace = "summa-system"

// decodeManifests splits a multi-document YAML stream into objects,
// skipping empty documents.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// configFiles lists every YAML manifest under config/ except the
// kustomization files, which are kustomize's input, not objects, and
// config/prometheus/summa-rules.yaml, a plain Prometheus rules file
// (promtool checks it in make check-monitoring).
func configFiles() []string {
	GinkgoHelper()
	var files []string
	err := filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ext := filepath.Ext(path)
		if (ext == ".yaml" || ext == ".yml") && d.Name() != "kustomization.yaml" && d.Name() != "summa-rules.yaml" {
			files = append(files, path)
		}
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
	sort.Strings(files)
	return files
}

// applyRank orders objects the way kubectl users apply them: namespaces
// and CRDs before what lives in them.
func applyRank(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	}
	return 2
}

// applyOrder sorts objects by applyRank, keeping their order otherwise.
func applyOrder(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool { return applyRank(objs[i]) < applyRank(objs[j]) })
}

// monitoringObject reports whether u is a prometheus-operator object
// (config/prometheus): envtest has no monitoring.coreos.com CRDs, so those
// are only decoded and checked for a kind and a name, not dry-run applied.
func monitoringObject(u *unstructured.Unstructured) bool {
	return u.GroupVersionKind().Group == "monitoring.coreos.com"
}

// dryRunApply server-side applies obj with dryRun=All, as
// `kubectl apply --server-side --dry-run=server` does; like kubectl, it puts
// a namespaced object without a namespace into "default".
func dryRunApply(obj *unstructured.Unstructured) error {
	GinkgoHelper()
	if obj.GetNamespace() == "" && isNamespaced(obj) {
		obj = obj.DeepCopy()
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	return k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.DryRunAll, client.FieldOwner("summa-config-test"), client.ForceOwnership)
}

var _ = Describe("config/", func() {
	BeforeEach(func() {
		// A dry-run Namespace is not persisted, so the operator's namespace
		// must exist for the dry runs of the objects inside it.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
		if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("applies cleanly, file by file, with a server-side dry run", func() {
		// manifest is one object and the file it comes from.
		type manifest struct {
			obj  *unstructured.Unstructured
			file string
		}
		var all []manifest
		kinds := map[string]bool{}
		for _, f := range configFiles() {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			docs, err := decodeManifests(data)
			Expect(err).NotTo(HaveOccurred(), "decoding %s", f)
			Expect(docs).NotTo(BeEmpty(), "%s holds no object", f)
			for _, d := range docs {
				kinds[d.GetKind()] = true
				all = append(all, manifest{obj: d, file: f})
			}
		}
		for _, k := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role",
			"RoleBinding", "ServiceAccount", "Namespace", "Deployment", "SummaIndex"} {
			Expect(kinds).To(HaveKey(k), "config/ has no %s", k)
		}
		sort.SliceStable(all, func(i, j int) bool { return applyRank(all[i].obj) < applyRank(all[j].obj) })
		for _, m := range all {
			if monitoringObject(m.obj) {
				Expect(m.obj.GetName()).NotTo(BeEmpty(), "%s in %s has no name", m.obj.GetKind(), m.file)
				continue
			}
			Expect(dryRunApply(m.obj)).To(Succeed(), "%s %s from %s", m.obj.GetKind(), m.obj.GetName(), m.file)
		}
	})

	It("builds with kustomize and the result applies with a server-side dry run", func() {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		for _, dir := range []string{"default", "samples", "local", "prometheus"} {
			resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(configDir, dir))
			Expect(err).NotTo(HaveOccurred(), "kustomize build config/%s", dir)
			out, err := resMap.AsYaml()
			Expect(err).NotTo(HaveOccurred())
			objs, err := decodeManifests(out)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).NotTo(BeEmpty())
			applyOrder(objs)
			for _, o := range objs {
				if monitoringObject(o) {
					// Namespaced, but unknown to envtest's REST mapper.
					Expect(o.GetNamespace()).To(Equal(operatorNamespace), "%s %s", o.GetKind(), o.GetName())
					continue
				}
				if dir != "samples" && o.GetKind() != "Namespace" && isNamespaced(o) {
					Expect(o.GetNamespace()).To(Equal(operatorNamespace), "%s %s", o.GetKind(), o.GetName())
				}
				Expect(dryRunApply(o)).To(Succeed(), "config/%s: %s %s", dir, o.GetKind(), o.GetName())
			}
		}
	})

	It("runs the operator securely", func() {
		data, err := os.ReadFile(filepath.Join(configDir, "manager", "manager.yaml"))
		Expect(err).NotTo(HaveOccurred())
		objs, err := decodeManifests(data)
		Expect(err).NotTo(HaveOccurred())
		var found bool
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			found = true
			pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec", "securityContext")
			Expect(pod).To(HaveKeyWithValue("runAsNonRoot", true))
			Expect(pod).To(HaveKeyWithValue("seccompProfile", HaveKeyWithValue("type", "RuntimeDefault")))
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			Expect(containers).NotTo(BeEmpty())
			for _, c := range containers {
				sc := c.(map[string]any)["securityContext"].(map[string]any)
				Expect(sc).To(HaveKeyWithValue("readOnlyRootFilesystem", true))
				Expect(sc).To(HaveKeyWithValue("allowPrivilegeEscalation", false))
				Expect(sc).To(HaveKeyWithValue("capabilities", HaveKeyWithValue("drop", ConsistOf("ALL"))))
			}
		}
		Expect(found).To(BeTrue(), "config/manager/manager.yaml has no Deployment")
	})
})

// isNamespaced reports whether obj is of a namespaced kind, by asking the
// API server's discovery through the client's REST mapper.
func isNamespaced(obj *unstructured.Unstructured) bool {
	GinkgoHelper()
	namespaced, err := k8sClient.IsObjectNamespaced(obj)
	Expect(err).NotTo(HaveOccurred(), "%s", obj.GroupVersionKind())
	return namespaced
}
