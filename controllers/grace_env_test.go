package controllers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/corpus"
)

// The termination grace (summaindex_grace.go): sized within the spec's
// bounds from the engine's drain estimate, outside the pod's revision.
var _ = Describe("The termination grace", func() {
	It("sizes the grace within the spec's bounds and restarts the pod when they move", func() {
		createReady("grace", func(x *summav1.SummaIndex) {
			x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 45, MaxSeconds: 600}
		})
		x := getIndex("grace")
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(45))
		Expect(x.Status.ShutdownDeadlineSeconds).To(BeEquivalentTo(40))
		first := x.Status.PodUID

		updateIndex("grace", func(x *summav1.SummaIndex) {
			x.Spec.Lifecycle.TerminationGracePeriod.MinSeconds = 90
		})
		Eventually(func(g Gomega) {
			pod, err := enginePodOf("grace")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pod.UID).NotTo(Equal(first))
			g.Expect(*pod.Spec.TerminationGracePeriodSeconds).To(BeEquivalentTo(90))
			g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--shutdown-deadline=85s"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		x = waitReady("grace")
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(90))
	})

	It("sizes the next pod's grace from the drain estimate, never restarting the engine for it", func() {
		createReady("backlog", func(x *summav1.SummaIndex) {
			x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 1, MaxSeconds: 120}
		})
		x := getIndex("backlog")
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(10), "no estimate yet: the fixed 10 s")
		first := x.Status.PodUID
		ingest("backlog", 0, 2000)
		commit("backlog") // the engine measures its flush rate
		// The grace the estimate asks for the next pod.
		wanted := func(x *summav1.SummaIndex) int64 {
			return nextGrace(x, x.Status.TerminationGracePeriodSeconds, x.Status.DrainEstimateSeconds)
		}
		// Uncommitted documents pile up until the estimate asks for a
		// longer grace than the pod has; every write is accepted, as the
		// engine never drains for it.
		accepted := 2000
		ps, err := corpus.Paragraphs()
		Expect(err).NotTo(HaveOccurred())
		for accepted < 400_000 && wanted(getIndex("backlog")) < 15 {
			var docs []any
			for i := accepted; i < accepted+10_000; i++ {
				docs = append(docs, map[string]any{"id": fmt.Sprintf("d%06d", i), "body": ps[i%len(ps)]})
			}
			_, err := engineOf("backlog").AddDocuments(ctx, "backlog", docs...)
			Expect(err).NotTo(HaveOccurred(), "the engine refused writes: was it drained for the grace?")
			accepted += 10_000
		}
		Eventually(func() int64 { return wanted(getIndex("backlog")) }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeNumerically(">=", 15))
		// The pass that read the estimate decided on it in the same status
		// write: the engine keeps its pod, and no restart is pending.
		x = getIndex("backlog")
		GinkgoWriter.Printf("estimate %s asks for a grace of %ds after %d accepted documents\n",
			fmtEstimate(x.Status.DrainEstimateSeconds), wanted(x), accepted)
		Expect(x.Status.PodUID).To(Equal(first))
		Expect(x.Status.Phase).To(Equal(summav1.PhaseRunning))
		Expect(x.Status.DrainStartTime).To(BeNil())
		Expect(x.Status.UpdateRevision).To(Equal(x.Status.CurrentRevision), "a new grace asked for a restart")
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(10), "status shows the running pod's grace")
		Expect(x.Status.NextTerminationGracePeriodSeconds).To(Equal(wanted(x)), "status shows the grace waiting for the next restart")
		pod, err := enginePodOf("backlog")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.UID).To(Equal(first))
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(BeEquivalentTo(10))

		By("the next restart that happens anyway carries the grown grace")
		annotate("backlog", AnnotationRestartedAt, "grace-1")
		Eventually(func(g Gomega) {
			x := getIndex("backlog")
			g.Expect(x.Status.PodUID).NotTo(Equal(first))
			g.Expect(x.IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		x = getIndex("backlog")
		pod, err = enginePodOf("backlog")
		Expect(err).NotTo(HaveOccurred())
		second := pod.UID
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeNumerically(">=", 15))
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(Equal(x.Status.TerminationGracePeriodSeconds))
		Expect(x.Status.ShutdownDeadlineSeconds).To(BeNumerically("<", x.Status.TerminationGracePeriodSeconds))
		Expect(pod.Spec.Containers[0].Args).To(ContainElement(fmt.Sprintf("--shutdown-deadline=%ds", x.Status.ShutdownDeadlineSeconds)))
		Expect(eventReasons("backlog")).To(ContainElement("GraceResized"))
		if w := wanted(x); w == x.Status.TerminationGracePeriodSeconds {
			Expect(x.Status.NextTerminationGracePeriodSeconds).To(BeZero(), "nothing waits: the running pod has the grace asked for")
		} else {
			Expect(x.Status.NextTerminationGracePeriodSeconds).To(Equal(w))
		}
		Expect(engineDocuments("backlog")).To(BeEquivalentTo(accepted), "the drain before the restart committed the backlog")

		By("the grace shrinks again at the next restart once the estimate fell")
		Eventually(func() int64 { return wanted(getIndex("backlog")) }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEquivalentTo(10))
		annotate("backlog", AnnotationRestartedAt, "grace-2")
		Eventually(func(g Gomega) {
			x := getIndex("backlog")
			g.Expect(x.Status.PodUID).NotTo(Equal(second))
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(10))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		pod, err = enginePodOf("backlog")
		Expect(err).NotTo(HaveOccurred())
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(BeEquivalentTo(10))
	})
})
