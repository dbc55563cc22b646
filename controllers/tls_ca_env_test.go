package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

var _ = Describe("The CA key", func() {
	It("moves the CA key of a TLS Secret made by an earlier version into its own Secret, keeping the CA clients trust", func() {
		x := createReady("keyring", nil)
		orig := secretOf("keyring-tls")
		key := secretOf("keyring-ca").Data[summav1.CAKeyKey]
		Expect(key).NotTo(BeEmpty())

		By("the Secrets as an earlier version left them: ca.key beside ca.crt, no keyring-ca")
		stopOperator()
		old := orig.DeepCopy()
		old.Data[summav1.CAKeyKey] = key
		Expect(k8sClient.Update(ctx, old)).To(Succeed())
		Expect(k8sClient.Delete(ctx, secretOf("keyring-ca"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "keyring-ca"}, &corev1.Secret{}))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		startOperator()

		Eventually(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "keyring-ca"}, s)).To(Succeed())
			g.Expect(s.Data[summav1.CAKeyKey]).To(Equal(key), "the same CA key")
			g.Expect(metav1.IsControlledBy(s, x)).To(BeTrue())
			g.Expect(secretOf("keyring-tls").Data).NotTo(HaveKey(summav1.CAKeyKey))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		tls := secretOf("keyring-tls")
		Expect(tls.Data[summav1.CACertKey]).To(Equal(orig.Data[summav1.CACertKey]), "clients keep trusting the same ca.crt")
		Expect(tls.Data[summav1.TLSCertKey]).To(Equal(orig.Data[summav1.TLSCertKey]), "no new engine certificate")
		waitReady("keyring")
		Expect(engineDocuments("keyring")).To(BeEquivalentTo(0), "the engine answers over TLS verified with that ca.crt")
		deleteAndWaitGone("keyring")
	})
})
