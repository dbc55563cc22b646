package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/argohealth"
)

// gitopsReading is one reading of a SummaIndex as a GitOps tool makes it.
type gitopsReading struct {
	status      kstatus.Status
	health      argohealth.Health
	x           *summav1.SummaIndex
	engineReady bool
}

// gitopsSampler reads a SummaIndex every 100 ms as Flux (kstatus) and
// Argo CD (config/argocd/health.lua) do, with the engine pod's readiness
// read between two reads of the same resourceVersion of the index.
type gitopsSampler struct {
	name     string
	script   string
	mu       sync.Mutex
	readings []gitopsReading
	errs     []string
	stop     chan struct{}
	done     chan struct{}
}

// sampleGitops starts a sampler.
func sampleGitops(name string) *gitopsSampler {
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "argocd", "health.lua"))
	Expect(err).NotTo(HaveOccurred())
	s := &gitopsSampler{name: name, script: string(b), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s.read()
		}
	}()
	return s
}

// readIndex reads the SummaIndex unstructured, as served.
func (s *gitopsSampler) readIndex() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(summav1.GroupVersion.WithKind("SummaIndex"))
	return u, k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: s.name}, u)
}

// read takes one reading.
func (s *gitopsSampler) read() {
	u, err := s.readIndex()
	if err != nil {
		return
	}
	x := &summav1.SummaIndex{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, x); err != nil {
		s.fail("convert: %v", err)
		return
	}
	ready := false
	if pod, err := enginePod(s.name); err == nil && pod.UID == x.Status.PodUID && pod.DeletionTimestamp == nil {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
	}
	again, err := s.readIndex()
	if err != nil || again.GetResourceVersion() != u.GetResourceVersion() {
		return
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		s.fail("kstatus: %v", err)
		return
	}
	h, err := argohealth.Run(s.script, u.Object)
	if err != nil {
		s.fail("health check: %v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readings = append(s.readings, gitopsReading{status: res.Status, health: h, x: x, engineReady: ready})
}

// fail records an error of the sampler.
func (s *gitopsSampler) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// since returns the readings from i on, and how many there are.
func (s *gitopsSampler) since(i int) ([]gitopsReading, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gitopsReading(nil), s.readings[i:]...), len(s.readings)
}

// waitCurrent waits until a reading from i on is Current and Healthy and
// done holds of it, and returns the readings from i on.
func (s *gitopsSampler) waitCurrent(i int, done func(*summav1.SummaIndex) bool) []gitopsReading {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rs, _ := s.since(i)
		ok := false
		for _, r := range rs {
			if r.status == kstatus.CurrentStatus && (done == nil || done(r.x)) {
				ok = true
			}
		}
		g.Expect(ok).To(BeTrue(), "not Current yet (%d readings)", len(rs))
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	rs, _ := s.since(i)
	return rs
}

// Stop ends the sampling and checks every reading: never Current without
// a ready engine pod serving the observed generation, Argo CD Healthy
// exactly when kstatus says Current.
func (s *gitopsSampler) Stop() {
	GinkgoHelper()
	close(s.stop)
	<-s.done
	Expect(s.errs).To(BeEmpty())
	for _, r := range s.readings {
		x := r.x
		desc := fmt.Sprintf("kstatus %s, Argo CD %s (%s), generation %d observed %d, phase %s, conditions %+v",
			r.status, r.health.Status, r.health.Message, x.Generation, x.Status.ObservedGeneration, x.Status.Phase, x.Status.Conditions)
		Expect(r.status == kstatus.CurrentStatus).To(Equal(r.health.Status == "Healthy"), desc)
		if r.status != kstatus.CurrentStatus {
			continue
		}
		Expect(r.engineReady).To(BeTrue(), "Current without a ready engine: %s", desc)
		Expect(x.IsReady()).To(BeTrue(), desc)
		Expect(x.Status.ObservedGeneration).To(Equal(x.Generation), desc)
		Expect(x.Status.CurrentRevision).To(Equal(x.Status.UpdateRevision), "Current with a restart pending: %s", desc)
	}
}

var _ = Describe("GitOps readings on a real kubelet", func() {
	It("12. kstatus and the Argo CD health check never read Current while a new index comes up or restarts", func() {
		const name = "e2e-gitops"
		s := sampleGitops(name)
		By("creating: in progress until the engine serves")
		Expect(k8s.Create(ctx, newIndex(name, nil))).To(Succeed())
		created := s.waitCurrent(0, nil)
		Expect(created[0].status).To(Equal(kstatus.InProgressStatus), "the first reading")
		ingest(name, 0, 300)
		commit(name)

		By("restarting for a new engine setting: in progress from the change until the new pod serves")
		x := getIndex(name)
		oldUID, gen := x.Status.PodUID, x.Generation
		_, i := s.since(0)
		one := int32(1)
		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = &one })
		restart := s.waitCurrent(i, func(x *summav1.SummaIndex) bool { return x.Status.PodUID != oldUID })
		sawRestart := false
		for _, r := range restart {
			if r.x.Generation <= gen {
				continue
			}
			if r.x.Status.Phase == summav1.PhaseDraining || r.x.Status.Phase == summav1.PhaseRestarting {
				sawRestart = true
				Expect(r.status).To(Equal(kstatus.InProgressStatus))
				Expect(r.health.Status).To(Equal("Progressing"))
			}
			if r.status == kstatus.CurrentStatus {
				Expect(r.x.Status.PodUID).NotTo(Equal(oldUID), "Current on the old pod after the change")
			}
		}
		Expect(sawRestart).To(BeTrue(), "no reading during the drained restart")
		s.Stop()
		expectAll(name, 0, 300)
		Expect(k8s.Delete(ctx, getIndex(name))).To(Succeed())
	})
})
