package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// withTemplate returns a mutation that sets spec.podTemplate.
func withTemplate(t corev1.PodTemplateSpec) func(*summav1.SummaIndex) {
	return func(x *summav1.SummaIndex) { x.Spec.PodTemplate = &t }
}

// appContainer is an app container named name.
func appContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "app:1"}
}

// unstructuredIndex is validIndex(name) as an unstructured object whose
// spec.podTemplate is template, verbatim.
func unstructuredIndex(name string, template map[string]any) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(validIndex(name))
	Expect(err).NotTo(HaveOccurred())
	u.Object = raw
	u.SetAPIVersion("summa.dev/v1")
	u.SetKind("SummaIndex")
	Expect(unstructured.SetNestedField(u.Object, template, "spec", "podTemplate")).To(Succeed())
	return u
}

var _ = Describe("SummaIndex CRD validation of spec.podTemplate", func() {
	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: validationNamespace}}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, ns))).To(Succeed())
	})

	It("accepts a valid template and keeps its labels, annotations and pod settings", func() {
		x := createValid("template-ok", withTemplate(corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "search"}, Annotations: map[string]string{"note": "kept"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "app:1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
				Volumes:      []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				NodeSelector: map[string]string{"disk": "ssd"},
			},
		}))
		got := &summav1.SummaIndex{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(x), got)).To(Succeed())
		t := got.Spec.PodTemplate
		Expect(t.Labels).To(Equal(map[string]string{"team": "search"}))
		Expect(t.Annotations).To(Equal(map[string]string{"note": "kept"}))
		Expect(t.Spec.Containers[0].Ports[0].ContainerPort).To(BeEquivalentTo(8080))
		Expect(t.Spec.Volumes[0].EmptyDir).NotTo(BeNil())
		Expect(t.Spec.NodeSelector).To(HaveKeyWithValue("disk", "ssd"))
	})

	It("accepts a template of pod settings only, without containers", func() {
		createValid("template-settings", withTemplate(corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "search", Effect: corev1.TaintEffectNoSchedule}},
		}}))
	})

	It("prunes a misspelt field, and refuses it under strict field validation", func() {
		template := map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "app:1", "imagePullPolicee": "Always"},
		}}}
		strict := client.WithFieldValidation(k8sClient, metav1.FieldValidationStrict)
		err := strict.Create(ctx, unstructuredIndex("typo-strict", template))
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "want 400 BadRequest, got: %v", err)
		Expect(err.Error()).To(ContainSubstring(`unknown field "spec.podTemplate.spec.containers[0].imagePullPolicee"`))

		u := unstructuredIndex("typo-pruned", template)
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
		containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "podTemplate", "spec", "containers")
		Expect(containers).To(HaveLen(1))
		Expect(containers[0]).NotTo(HaveKey("imagePullPolicee"))
		Expect(containers[0]).To(HaveKeyWithValue("image", "app:1"))
	})

	It("takes a template through server-side apply, twice, as kubectl apply --server-side does", func() {
		template := map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "search"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1",
				"ports": []any{map[string]any{"containerPort": int64(8080)}}}}}}
		for i := 0; i < 2; i++ {
			u := unstructuredIndex("template-ssa", template)
			unstructured.RemoveNestedField(u.Object, "status")
			unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
			Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
				client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed())
		}
		got := &summav1.SummaIndex{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: validationNamespace, Name: "template-ssa"}, got)).To(Succeed())
		Expect(got.Spec.PodTemplate.Labels).To(HaveKeyWithValue("team", "search"))
		Expect(got.Spec.PodTemplate.Spec.Containers[0].Ports[0].Protocol).To(Equal(corev1.ProtocolTCP), "defaulted by the schema")
	})

	It("refuses a value of the wrong type", func() {
		err := k8sClient.Create(ctx, unstructuredIndex("wrong-type", map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "app:1", "ports": []any{map[string]any{"containerPort": "eighty"}}},
		}}}))
		expectRefused(err, "spec.podTemplate.spec.containers[0].ports[0].containerPort", "must be of type integer")
	})

	DescribeTable("refuses what the operator reserves",
		func(name string, t corev1.PodTemplateSpec, fragments ...string) {
			expectRefused(k8sClient.Create(ctx, mutated(name, withTemplate(t))), fragments...)
		},
		Entry("an app container named engine", "reserved-engine",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{appContainer("engine")}}},
			"spec.podTemplate.spec.containers", "the container names engine and volume-permissions are reserved"),
		Entry("an init container named volume-permissions", "reserved-prep",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{appContainer("app")},
				InitContainers: []corev1.Container{appContainer("volume-permissions")}}},
			"spec.podTemplate.spec.initContainers", "the container names engine and volume-permissions are reserved"),
		Entry("an init container named engine", "reserved-init-engine",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{InitContainers: []corev1.Container{appContainer("engine")}}},
			"spec.podTemplate.spec.initContainers", "reserved"),
		Entry("the data volume's name", "reserved-data",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "summa-data"}}}},
			"spec.podTemplate.spec.volumes", "volume names starting with summa- are reserved"),
		Entry("the scratch volume's name", "reserved-tmp",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "summa-tmp"}}}},
			"spec.podTemplate.spec.volumes", "reserved"),
		Entry("an access volume's name", "reserved-token",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "summa-client-token"}}}},
			"spec.podTemplate.spec.volumes", "reserved"),
		Entry("the engine's port on an app container", "reserved-port",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8082}}}}}},
			"spec.podTemplate.spec.containers", "port 8082 is the engine's"),
		Entry("the engine's port on an init container", "reserved-init-port",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "side", Image: "side:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 8082}}}}}},
			"spec.podTemplate.spec.initContainers", "port 8082 is the engine's"),
		Entry("ephemeral containers", "reserved-ephemeral",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}}},
			"spec.podTemplate.spec.ephemeralContainers", "ephemeral containers cannot be part of a pod template"),
		Entry("a grace period, which the operator sizes", "reserved-grace",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](5)}},
			"spec.podTemplate.spec.terminationGracePeriodSeconds", "the operator sizes the engine pod's grace period"),
		Entry("a restart policy other than Always", "reserved-restart",
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}},
			"spec.podTemplate.spec.restartPolicy", "restartPolicy is Always"),
		Entry("the index label", "reserved-label",
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{summav1.LabelIndex: "other"}}},
			"spec.podTemplate.metadata.labels", "are the operator's"),
		Entry("the component label", "reserved-component",
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelComponent: "app"}}},
			"spec.podTemplate.metadata.labels", "are the operator's"),
		Entry("the managed-by label", "reserved-managed",
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{summav1.LabelManagedBy: "me"}}},
			"spec.podTemplate.metadata.labels", "are the operator's"),
	)

	It("refuses appShutdownSeconds that leave the engine no time within the largest grace", func() {
		err := k8sClient.Create(ctx, mutated("apps-too-slow", func(x *summav1.SummaIndex) {
			x.Spec.Lifecycle.TerminationGracePeriod.MaxSeconds = 60
			x.Spec.Lifecycle.AppShutdownSeconds = ptr.To[int32](60)
		}))
		expectRefused(err, "spec.lifecycle", "appShutdownSeconds must be shorter than terminationGracePeriod.maxSeconds")
		createValid("apps-in-time", func(x *summav1.SummaIndex) { x.Spec.Lifecycle.AppShutdownSeconds = ptr.To[int32](30) })
	})
})
