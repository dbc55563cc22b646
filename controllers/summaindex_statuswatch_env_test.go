package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A commit on the real engine reaches status through the operator's long
// poll of the engine (summaindex_statuswatch.go), not the resync: the
// operator runs with a resync of an hour, so within the spec's deadline
// only the watch can explain status following each of three commits.
var _ = Describe("Status watch", func() {
	It("shows a commit in status without waiting for a resync", func() {
		const name = "status-watch"
		createReady(name, nil)
		resyncPeriod = time.Hour
		restartOperator()
		DeferCleanup(func() {
			resyncPeriod = time.Second
			restartOperator()
			deleteAndWaitGone(name)
		})
		// The restarted operator's first pass (it lists every index)
		// reads the engine once, and starts the watch.
		waitReady(name)
		for round := 1; round <= 3; round++ {
			before := time.Now().Truncate(time.Second) // status times have whole seconds
			ingest(name, (round-1)*20, round*20)
			commit(name)
			want := int64(engineDocuments(name))
			Expect(want).To(Equal(int64(round * 20)))
			Eventually(func(g Gomega) {
				x := getIndex(name)
				g.Expect(x.Status.Documents).To(Equal(want), "round %d: status.documents", round)
				g.Expect(x.Status.LastObservedTime).NotTo(BeNil())
				g.Expect(x.Status.LastObservedTime.Time).NotTo(BeTemporally("<", before), "round %d: status.lastObservedTime", round)
			}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		}
	})
})
