package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/testing/envkubelet"
)

var _ = Describe("The restart budget", func() {
	It("gives back the slot of a restart whose new pod never becomes Ready, so that other rollouts go on", func() {
		Eventually(restartingIndexes).WithTimeout(readyTimeout).WithPolling(poll).Should(BeEmpty(),
			"indexes of earlier specs still restarting would hold the budget")
		withOperator(func() { maxConcurrentRestarts, restartProgressDeadline = 1, 3*time.Second },
			func() { maxConcurrentRestarts, restartProgressDeadline = 100, 0 })
		createReady("slot-wedged", nil)
		createReady("slot-patient", nil)
		ingest("slot-patient", 0, 15)
		before, err := enginePodOf("slot-patient")
		Expect(err).NotTo(HaveOccurred())

		By("a restart to an image that is never pulled: it takes the only slot and never becomes Ready")
		updateIndex("slot-wedged", func(x *summav1.SummaIndex) { x.Spec.Image = envkubelet.UnpullableRegistry + "summa-server:test" })
		Eventually(func() summav1.Phase { return getIndex("slot-wedged").Status.Phase }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(summav1.PhaseRestarting))

		By("another index's restart is admitted once the wedged one is past the progress deadline")
		updateIndex("slot-patient", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			x := getIndex("slot-patient")
			g.Expect(x.Status.PodUID).NotTo(Equal(before.UID))
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.CurrentRevision).To(Equal(x.Status.UpdateRevision))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("slot-patient")).To(BeEquivalentTo(15), "drained before its restart")
		Expect(getIndex("slot-wedged").Status.Phase).To(Equal(summav1.PhaseRestarting), "the wedged index still waits for its pod")

		By("the image taken back: the wedged index restarts again at once (it serves nothing)")
		updateIndex("slot-wedged", func(x *summav1.SummaIndex) { x.Spec.Image = "" })
		waitReady("slot-wedged")
		deleteAndWaitGone("slot-wedged")
		deleteAndWaitGone("slot-patient")
	})
})
