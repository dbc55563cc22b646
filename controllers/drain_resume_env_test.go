package controllers

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

// The engine stand-in: the operator's engine clients go through
// engineStandIn, which hands each request to standIn when a spec set it.
// standIn answers in the engine's place (a refusal) or returns nil to let
// the real engine answer.
var (
	// standInMu guards standIn.
	standInMu sync.Mutex
	// standIn answers engine requests in the engine's place when set.
	standIn func(req *http.Request) *http.Response
)

// engineStandIn is the transport of the operator's engine clients in the
// specs.
type engineStandIn struct{ next http.RoundTripper }

// RoundTrip answers with standIn when it answers, else with the engine.
func (s engineStandIn) RoundTrip(req *http.Request) (*http.Response, error) {
	standInMu.Lock()
	f := standIn
	standInMu.Unlock()
	if f != nil {
		if resp := f(req); resp != nil {
			return resp, nil
		}
	}
	return s.next.RoundTrip(req)
}

// setStandIn makes f answer the operator's engine requests for the rest of
// the spec.
func setStandIn(f func(req *http.Request) *http.Response) {
	standInMu.Lock()
	standIn = f
	standInMu.Unlock()
	DeferCleanup(func() {
		standInMu.Lock()
		standIn = nil
		standInMu.Unlock()
	})
}

// unavailable is an engine's 503 answer.
func unavailable(req *http.Request) *http.Response {
	body := `{"error":{"code":"Unavailable","message":"the engine stand-in refuses this call"}}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

var _ = Describe("A drain that timed out", func() {
	It("asks again for a resume the engine refused, until it holds, before the drain backoff starts", func() {
		const refusals = 3
		createReady("refusal", func(x *summav1.SummaIndex) { x.Spec.Lifecycle.DrainTimeoutSeconds = 2 })
		ingest("refusal", 0, 20) // accepted, not committed: the drain must commit them
		x := getIndex("refusal")
		// Commits fail before their commit point while this is in the way,
		// so no drain can finish.
		blocker := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "refusal", "metadata.json.tmp", "in-the-way")
		Expect(os.MkdirAll(blocker, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.RemoveAll(filepath.Dir(blocker)) })
		pod, err := enginePodOf("refusal")
		Expect(err).NotTo(HaveOccurred())
		ip := pod.Status.PodIP

		// The engine refuses the first resumes; the one that holds takes
		// the blocker away, so the next drain completes. Each drain that
		// times out before that is one more timeout: asked again at once,
		// there is only the first.
		var mu sync.Mutex
		refused, held := 0, 0
		setStandIn(func(req *http.Request) *http.Response {
			if req.Method != http.MethodPost || req.URL.Path != "/v1/admin/resume" || req.URL.Hostname() != ip {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if refused < refusals {
				refused++
				return unavailable(req)
			}
			if held == 0 {
				_ = os.RemoveAll(filepath.Dir(blocker))
			}
			held++
			return nil
		})
		timeouts := testutil.ToFloat64(drainsTotal.WithLabelValues(purposeRestart, "timeout"))

		updateIndex("refusal", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			x := getIndex("refusal")
			g.Expect(x.Status.PodUID).NotTo(Equal(pod.UID))
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.DrainFailures).To(BeZero())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		mu.Lock()
		Expect(refused).To(Equal(refusals))
		Expect(held).To(BeNumerically(">=", 1))
		mu.Unlock()
		Expect(testutil.ToFloat64(drainsTotal.WithLabelValues(purposeRestart, "timeout"))-timeouts).To(BeEquivalentTo(1),
			"one drain timed out: its resume was asked again until it held, with no new drain of a drained engine meanwhile")
		Expect(engineDocuments("refusal")).To(BeEquivalentTo(20))
		deleteAndWaitGone("refusal")
	})
})
