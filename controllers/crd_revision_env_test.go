package controllers

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

var _ = Describe("The CRD revision check at startup", func() {
	// setRevision writes the CRD's revision annotation ("" removes it) and
	// returns what it was.
	setRevision := func(v string) string {
		var was string
		Eventually(func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: SummaIndexCRDName}, crd); err != nil {
				return err
			}
			was = crd.Annotations[summav1.AnnotationCRDRevision]
			if v == "" {
				delete(crd.Annotations, summav1.AnnotationCRDRevision)
			} else {
				if crd.Annotations == nil {
					crd.Annotations = map[string]string{}
				}
				crd.Annotations[summav1.AnnotationCRDRevision] = v
			}
			return k8sClient.Update(ctx, crd)
		}).Should(Succeed())
		return was
	}

	It("passes the CRD installed from config/crd/bases and refuses an older or unmarked one", func() {
		Expect(CheckCRDRevision(ctx, k8sClient)).To(Succeed(), "the CRD of this tree")
		was := setRevision(strconv.Itoa(summav1.CRDRevision - 1))
		DeferCleanup(func() { setRevision(was) })
		Expect(was).To(Equal(strconv.Itoa(summav1.CRDRevision)))

		err := CheckCRDRevision(ctx, k8sClient)
		Expect(err).To(MatchError(ContainSubstring("has schema revision %d", summav1.CRDRevision-1)))
		Expect(err).To(MatchError(ContainSubstring("upgrade the CRD first")))

		setRevision("")
		Expect(CheckCRDRevision(ctx, k8sClient)).To(MatchError(ContainSubstring("has schema revision none")))

		setRevision(strconv.Itoa(summav1.CRDRevision + 1))
		Expect(CheckCRDRevision(ctx, k8sClient)).To(Succeed(), "a newer CRD serves an older operator")
	})
})
