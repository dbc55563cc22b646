package controllers

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// validationNamespace holds the objects of the CRD validation specs.
const validationNamespace = "crd-validation"

// validIndex returns a SummaIndex the API server accepts, with nothing
// defaulted.
func validIndex(name string) *summav1.SummaIndex {
	return &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: validationNamespace},
		Spec: summav1.SummaIndexSpec{
			Schema: summav1.Schema{Fields: []summav1.SchemaField{
				{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true},
				{Name: "title", Type: summav1.FieldTypeText, Stored: ptr.To(true)},
				{Name: "body", Type: summav1.FieldTypeText, Reorder: true},
				{Name: "year", Type: summav1.FieldTypeU64},
				{Name: "emb", Type: summav1.FieldTypeDenseVector, Dims: ptr.To[int32](8), Binary: true},
			}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
}

// expectRefused checks that err is the API server's 422 Invalid answer and
// that it contains every fragment.
func expectRefused(err error, fragments ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid SummaIndex")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got: %v", err)
	for _, f := range fragments {
		Expect(err.Error()).To(ContainSubstring(f))
	}
}

// createValid creates validIndex(name) after mutate and returns the stored
// object.
func createValid(name string, mutate func(*summav1.SummaIndex)) *summav1.SummaIndex {
	GinkgoHelper()
	x := mutated(name, mutate)
	Expect(k8sClient.Create(ctx, x)).To(Succeed())
	return x
}

// updateSpec re-reads x, applies change to its spec and updates it,
// returning the API server's answer.
func updateSpec(x *summav1.SummaIndex, change func(*summav1.SummaIndex)) error {
	GinkgoHelper()
	fresh := &summav1.SummaIndex{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(x), fresh)).To(Succeed())
	change(fresh)
	return k8sClient.Update(ctx, fresh)
}

var _ = Describe("SummaIndex CRD validation", func() {
	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: validationNamespace}}
		if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	Context("a valid SummaIndex", func() {
		It("is accepted with the defaults filled in", func() {
			x := createValid("defaults", nil)
			got := &summav1.SummaIndex{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(x), got)).To(Succeed())
			Expect(got.Spec.Storage.ReclaimPolicy).To(Equal(summav1.ReclaimRetain))
			Expect(got.Spec.Doctor.Backup).To(Equal(summav1.BackupCopy))
			Expect(got.Spec.Lifecycle.TerminationGracePeriod.MinSeconds).To(BeEquivalentTo(30))
			Expect(got.Spec.Lifecycle.TerminationGracePeriod.MaxSeconds).To(BeEquivalentTo(1800))
			Expect(got.Spec.Lifecycle.DrainTimeoutSeconds).To(BeEquivalentTo(600))
			Expect(got.Spec.Suspend).To(BeFalse())
			Expect(got.Spec.Access.TLS.Mode).To(Equal(summav1.TLSEnabled))
			Expect(got.Spec.Access.NetworkPolicy).To(Equal(summav1.NetworkPolicyEnabled))
		})

		It("gets the defaults when lifecycle and doctor are left out entirely", func() {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "summa.dev/v1",
				"kind":       "SummaIndex",
				"metadata":   map[string]any{"name": "sparse", "namespace": validationNamespace},
				"spec": map[string]any{
					"schema":  map[string]any{"fields": []any{map[string]any{"name": "id", "type": "text", "primary": true}}},
					"storage": map[string]any{"size": "5Gi"},
				},
			}}
			Expect(k8sClient.Create(ctx, u)).To(Succeed())
			got := &summav1.SummaIndex{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
			Expect(got.Spec.Storage.ReclaimPolicy).To(Equal(summav1.ReclaimRetain))
			Expect(got.Spec.Doctor.Backup).To(Equal(summav1.BackupCopy))
			Expect(got.Spec.Lifecycle.TerminationGracePeriod.MinSeconds).To(BeEquivalentTo(30))
			Expect(got.Spec.Lifecycle.TerminationGracePeriod.MaxSeconds).To(BeEquivalentTo(1800))
			Expect(got.Spec.Lifecycle.DrainTimeoutSeconds).To(BeEquivalentTo(600))
		})

		It("may grow its volume and change its mutable settings", func() {
			x := createValid("mutable", func(x *summav1.SummaIndex) {
				x.Spec.Storage.StorageClassName = ptr.To("standard")
			})
			Expect(updateSpec(x, func(x *summav1.SummaIndex) {
				x.Spec.Storage.Size = resource.MustParse("2Gi")
				x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
				x.Spec.Image = "summa-server:v2"
				x.Spec.Engine.OptimizerThreads = ptr.To[int32](0)
				x.Spec.Engine.MaxRequestBytes = ptr.To(resource.MustParse("16Mi"))
				x.Spec.Lifecycle.TerminationGracePeriod.MaxSeconds = 60
				x.Spec.Doctor.RequestID = "repair-1"
				x.Spec.Suspend = true
			})).To(Succeed())
		})

		// spec.schema.fields is a map list keyed by name: reordering it is
		// the same schema (the operator creates the engine's index only
		// when it is missing). An order-sensitive rule (the names mapped
		// to a list and compared) is refused by Kubernetes 1.29's CEL cost
		// estimator, 100 times over its budget.
		It("may reorder its schema's fields, which is the same schema", func() {
			x := createValid("schema-reorder", nil)
			Expect(updateSpec(x, func(x *summav1.SummaIndex) {
				f := x.Spec.Schema.Fields
				f[0], f[1] = f[1], f[0]
			})).To(Succeed())
		})

		It("has a status subresource that keeps status apart from spec", func() {
			x := createValid("status", nil)
			x.Status.Phase = summav1.PhaseRunning
			x.Status.Documents = 42
			x.Status.DrainEstimateSeconds = ptr.To(2.5)
			x.Status.QuarantinedSegments = []summav1.QuarantinedSegment{{ID: "1f", Reason: "checksum mismatch"}}
			x.SetCondition(summav1.ConditionReady, metav1.ConditionTrue, "EngineReady", "the index is open")
			Expect(k8sClient.Status().Update(ctx, x)).To(Succeed())

			got := &summav1.SummaIndex{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(x), got)).To(Succeed())
			Expect(got.Status.Phase).To(Equal(summav1.PhaseRunning))
			Expect(*got.Status.DrainEstimateSeconds).To(Equal(2.5))
			Expect(got.IsReady()).To(BeTrue())

			got.Status.Phase = summav1.Phase("Exploded")
			expectRefused(k8sClient.Status().Update(ctx, got), "phase", `Unsupported value: "Exploded"`)
		})

		It("shows phase, documents, segments, replicas, ready, degraded, a message and age as printer columns", func() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "summaindexes.summa.dev"}, crd)).To(Succeed())
			Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
			var names []string
			for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
				if c.Priority == 0 {
					names = append(names, c.Name)
				}
			}
			Expect(names).To(Equal([]string{"Phase", "Documents", "Segments", "Replicas", "Ready", "Degraded", "Message", "Age"}))
		})
	})

	Context("the API server refuses", func() {
		It("a changed schema", func() {
			x := createValid("schema-change", nil)
			err := updateSpec(x, func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields = append(x.Spec.Schema.Fields, summav1.SchemaField{Name: "tags", Type: summav1.FieldTypeKeyword, Multi: true})
			})
			expectRefused(err, "spec.schema", "schema is immutable")
		})

		It("a shrinking volume", func() {
			x := createValid("shrink", func(x *summav1.SummaIndex) { x.Spec.Storage.Size = resource.MustParse("10Gi") })
			err := updateSpec(x, func(x *summav1.SummaIndex) { x.Spec.Storage.Size = resource.MustParse("9Gi") })
			expectRefused(err, "spec.storage", "never shrink")
		})

		It("an unknown reclaim policy", func() {
			err := k8sClient.Create(ctx, mutated("reclaim", func(x *summav1.SummaIndex) {
				x.Spec.Storage.ReclaimPolicy = "Recycle"
			}))
			expectRefused(err, "spec.storage.reclaimPolicy", `Unsupported value: "Recycle"`)
		})

		It("a minimum grace period above the maximum", func() {
			err := k8sClient.Create(ctx, mutated("grace", func(x *summav1.SummaIndex) {
				x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 600, MaxSeconds: 60}
			}))
			expectRefused(err, "spec.lifecycle.terminationGracePeriod", "minSeconds must not exceed maxSeconds")
		})

		It("an empty schema", func() {
			err := k8sClient.Create(ctx, mutated("empty-schema", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields = []summav1.SchemaField{}
			}))
			expectRefused(err, "spec.schema.fields", "at least 1 item")
		})

		It("two primary fields", func() {
			err := k8sClient.Create(ctx, mutated("two-primary", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[3].Primary = true
			}))
			expectRefused(err, "spec.schema.fields", "at most one field may be primary")
		})

		It("an unknown field type", func() {
			err := k8sClient.Create(ctx, mutated("field-type", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[1].Type = "vector"
			}))
			expectRefused(err, "spec.schema.fields[1].type", `Unsupported value: "vector"`)
		})

		It("a dense_vector field without dims", func() {
			err := k8sClient.Create(ctx, mutated("no-dims", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[4].Dims = nil
			}))
			expectRefused(err, "spec.schema.fields[4]", "dims is required for a dense_vector field")
		})

		It("dims on a field that is not a dense_vector", func() {
			err := k8sClient.Create(ctx, mutated("text-dims", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[1].Dims = ptr.To[int32](4)
			}))
			expectRefused(err, "spec.schema.fields[1]", "allowed only there")
		})

		It("a changed storage class", func() {
			x := createValid("class-change", func(x *summav1.SummaIndex) {
				x.Spec.Storage.StorageClassName = ptr.To("standard")
			})
			err := updateSpec(x, func(x *summav1.SummaIndex) { x.Spec.Storage.StorageClassName = ptr.To("fast") })
			expectRefused(err, "spec.storage", "storageClassName is immutable")
		})

		It("a storage class set after creation", func() {
			x := createValid("class-set", nil)
			err := updateSpec(x, func(x *summav1.SummaIndex) { x.Spec.Storage.StorageClassName = ptr.To("fast") })
			expectRefused(err, "storageClassName is immutable")
		})

		It("two fields of the same name", func() {
			err := k8sClient.Create(ctx, mutated("duplicate-field", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[2].Name = "title"
			}))
			expectRefused(err, "spec.schema.fields[2]", "Duplicate value")
		})

		It("a primary field of a type that cannot be a key", func() {
			err := k8sClient.Create(ctx, mutated("float-primary", func(x *summav1.SummaIndex) {
				x.Spec.Schema.Fields[0].Primary = false
				x.Spec.Schema.Fields = append(x.Spec.Schema.Fields, summav1.SchemaField{Name: "score", Type: summav1.FieldTypeF64, Primary: true})
			}))
			expectRefused(err, "a primary field must be text, keyword, u64 or i64")
		})

		It("a volume of size zero", func() {
			err := k8sClient.Create(ctx, mutated("zero-size", func(x *summav1.SummaIndex) {
				x.Spec.Storage.Size = resource.MustParse("0")
			}))
			expectRefused(err, "storage.size must be positive")
		})

		It("a name that cannot name a Service", func() {
			err := k8sClient.Create(ctx, mutated("9lives", nil))
			expectRefused(err, "DNS-1035")
		})

		It("a name longer than a Service's 63 characters, which it accepts at 63", func() {
			err := k8sClient.Create(ctx, mutated("a"+strings.Repeat("b", 63), nil))
			expectRefused(err, "DNS-1035", "at most 63 characters")
			createValid("a"+strings.Repeat("b", 62), func(x *summav1.SummaIndex) {
				x.Spec.Doctor.RequestID = strings.Repeat("7", 63)
			})
		})

		It("a TLS Secret with TLS disabled", func() {
			err := k8sClient.Create(ctx, mutated("tls-off", func(x *summav1.SummaIndex) {
				x.Spec.Access.TLS = summav1.TLSSpec{Mode: summav1.TLSDisabled, SecretName: "cert"}
			}))
			expectRefused(err, "spec.access.tls", "tls.secretName applies only with tls.mode Enabled")
		})

		It("an unknown TLS mode or network policy mode", func() {
			err := k8sClient.Create(ctx, mutated("tls-mode", func(x *summav1.SummaIndex) { x.Spec.Access.TLS.Mode = "Optional" }))
			expectRefused(err, "spec.access.tls.mode", `Unsupported value: "Optional"`)
			err = k8sClient.Create(ctx, mutated("np-mode", func(x *summav1.SummaIndex) { x.Spec.Access.NetworkPolicy = "Off" }))
			expectRefused(err, "spec.access.networkPolicy", `Unsupported value: "Off"`)
		})

		It("a credentials Secret name that cannot name a Secret", func() {
			err := k8sClient.Create(ctx, mutated("bad-secret", func(x *summav1.SummaIndex) { x.Spec.Access.CredentialsSecret = "Team_Tokens" }))
			expectRefused(err, "spec.access.credentialsSecret")
		})

		It("a doctor requestId that cannot be part of a volume name", func() {
			err := k8sClient.Create(ctx, mutated("bad-request", func(x *summav1.SummaIndex) {
				x.Spec.Doctor.RequestID = "Run_1"
			}))
			expectRefused(err, "spec.doctor.requestId")
		})

		It("doctor Job bounds out of range: negative keepBackups, a deadline under a minute, a zero start timeout", func() {
			err := k8sClient.Create(ctx, mutated("bad-keep", func(x *summav1.SummaIndex) { x.Spec.Doctor.KeepBackups = ptr.To[int32](-1) }))
			expectRefused(err, "spec.doctor.keepBackups")
			err = k8sClient.Create(ctx, mutated("bad-deadline", func(x *summav1.SummaIndex) {
				x.Spec.Doctor.ActiveDeadlineSeconds = ptr.To[int64](10)
			}))
			expectRefused(err, "spec.doctor.activeDeadlineSeconds")
			err = k8sClient.Create(ctx, mutated("bad-start", func(x *summav1.SummaIndex) { x.Spec.Doctor.StartTimeoutSeconds = ptr.To[int32](0) }))
			expectRefused(err, "spec.doctor.startTimeoutSeconds")
			ok := mutated("keep-none", func(x *summav1.SummaIndex) { x.Spec.Doctor.KeepBackups = ptr.To[int32](0) })
			Expect(k8sClient.Create(ctx, ok)).To(Succeed(), "keepBackups 0 keeps only the latest run's backup")
			Expect(k8sClient.Delete(ctx, ok)).To(Succeed())
		})
	})
})

// mutated returns validIndex(name) after mutate (which may be nil).
func mutated(name string, mutate func(*summav1.SummaIndex)) *summav1.SummaIndex {
	x := validIndex(name)
	if mutate != nil {
		mutate(x)
	}
	return x
}
