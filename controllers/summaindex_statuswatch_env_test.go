package controllers

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	summav1 "github.com/summadev/summa/api/v1"
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
			expectStatusDocuments(name, want, before)
		}
	})

	// The watch writes status itself (summaindex_statuspublish.go): with
	// the operator's only reconcile worker held by another index's pass
	// (its engine does not answer) and a resync of an hour, no pass can
	// run, and status still follows the commit.
	It("shows a commit in status while every reconcile worker is held", func() {
		const name, blocker = "status-held", "status-blocker"
		createReady(name, nil)
		createReady(blocker, nil)
		resyncPeriod, maxConcurrentReconciles = time.Hour, 1
		restartOperator()
		DeferCleanup(func() {
			resyncPeriod, maxConcurrentReconciles = time.Second, 0
			restartOperator()
			deleteAndWaitGone(name)
			deleteAndWaitGone(blocker)
		})
		waitReady(name)
		waitReady(blocker)
		// A first commit shows: the watch of name is open.
		ingest(name, 0, 10)
		commit(name)
		expectStatusDocuments(name, 10, time.Now().Add(-time.Minute))

		pod, err := enginePodOf(blocker)
		Expect(err).NotTo(HaveOccurred())
		held, release := make(chan struct{}, 1), make(chan struct{})
		setStandIn(func(req *http.Request) *http.Response {
			if req.URL.Hostname() != pod.Status.PodIP || req.URL.Query().Has("waitGeneration") {
				return nil // the engine answers: every other call, and the long polls
			}
			select {
			case held <- struct{}{}:
			default:
			}
			select { // holds the pass's worker, whatever its deadline
			case <-release:
			case <-time.After(5 * time.Minute):
			}
			return nil
		})
		DeferCleanup(func() { close(release) })
		// A pass of the blocker (woken by an annotation) takes the only
		// worker and stays in its first engine call.
		updateIndex(blocker, func(x *summav1.SummaIndex) {
			if x.Annotations == nil {
				x.Annotations = map[string]string{}
			}
			x.Annotations["example.com/poke"] = "1"
		})
		Eventually(held).WithTimeout(readyTimeout).Should(Receive())

		before := time.Now().Truncate(time.Second)
		ingest(name, 10, 30)
		commit(name)
		expectStatusDocuments(name, 30, before)
	})
})

// expectStatusDocuments waits until name's status shows want documents,
// observed at or after before.
func expectStatusDocuments(name string, want int64, before time.Time) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		x := getIndex(name)
		g.Expect(x.Status.Documents).To(Equal(want), "status.documents")
		g.Expect(x.Status.LastObservedTime).NotTo(BeNil())
		g.Expect(x.Status.LastObservedTime.Time).NotTo(BeTemporally("<", before), "status.lastObservedTime")
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
}
