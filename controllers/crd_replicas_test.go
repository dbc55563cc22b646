package controllers

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

var _ = Describe("SummaIndex CRD validation of spec.replicas", func() {
	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: validationNamespace}}
		if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("defaults replicas to 0 and refuses a negative count, more than 16, and a name too long for <name>-read", func() {
		x := createValid("rep-default", nil)
		Expect(x.Spec.Replicas).NotTo(BeNil())
		Expect(*x.Spec.Replicas).To(BeEquivalentTo(0))
		expectRefused(k8sClient.Create(ctx, mutated("rep-neg", func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To[int32](-1) })),
			"spec.replicas")
		expectRefused(k8sClient.Create(ctx, mutated("rep-many", func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To[int32](17) })),
			"spec.replicas")
		long := "l" + strings.Repeat("o", 57) + "g" // 59
		expectRefused(k8sClient.Create(ctx, mutated(long, func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To[int32](1) })),
			"at most 58 characters")
		createValid(long, nil)
		createValid("rep-two", func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To[int32](16) })
	})
})
