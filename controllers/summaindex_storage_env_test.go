package controllers

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// A full engine volume on a real engine: spec.engine.minFreeBytes larger
// than the volume makes the engine refuse writes (507 StorageFull), the
// operator shows Degraded=StorageFull with the engine's figures and a
// Warning event; a reserve of 0 restarts the engine, which takes writes
// again, and Degraded clears.
var _ = Describe("A full engine volume", func() {
	It("is Degraded=StorageFull with the figures while the engine refuses writes", func() {
		const name = "storage-full"
		huge := resource.NewQuantity(1<<50, resource.BinarySI)
		createReady(name, func(x *summav1.SummaIndex) { x.Spec.Engine.MinFreeBytes = huge })
		Eventually(func(g Gomega) {
			x := getIndex(name)
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonStorageFull))
			g.Expect(c.Message).To(MatchRegexp(`full: \S+ free, \S+ used`))
			g.Expect(x.Status.Storage).NotTo(BeNil())
			g.Expect(x.Status.Storage.Full).To(BeTrue())
			g.Expect(x.Status.Storage.UsedBytes).To(BeNumerically(">", 0))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(warningReasons(name)).To(ContainElement(ReasonStorageFull))
		_, err := engineOf(name).AddDocuments(ctx, name, map[string]any{"id": "a", "body": "light"})
		var ae *engineclient.APIError
		Expect(err).To(BeAssignableToTypeOf(ae))
		ae = err.(*engineclient.APIError)
		Expect(ae.StatusCode).To(Equal(http.StatusInsufficientStorage))
		Expect(ae.Code).To(Equal(engineclient.CodeStorageFull))

		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Engine.MinFreeBytes = resource.NewQuantity(0, resource.BinarySI) })
		Eventually(func(g Gomega) {
			x := getIndex(name)
			g.Expect(x.Status.Storage).To(BeNil())
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c == nil || c.Status == metav1.ConditionFalse).To(BeTrue(), "Degraded: %+v", c)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady(name)
		ingest(name, 0, 10)
		commit(name)
		Expect(engineDocuments(name)).To(Equal(uint64(10)))
		deleteAndWaitGone(name)
	})
})
