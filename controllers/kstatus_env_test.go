package controllers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The kstatus specs read SummaIndexes as a GitOps tool does: unstructured,
// straight from the API server, through the real kstatus library
// (status.Compute, what Flux's health checks run) and through the Argo CD
// health check (config/argocd/health.lua), sampling all along creation, a
// drained restart, a doctor run, a refused change and suspension.
//
// With SUMMA_RECORD_KSTATUS=1, every distinct verdict is written to
// testdata/kstatus (the statuses TestArgoHealthOnRecordedStatuses checks).

// recordVar asks the kstatus specs to record the statuses they see.
const recordVar = "SUMMA_RECORD_KSTATUS"

// kSample is one reading of a SummaIndex.
type kSample struct {
	// step is the spec's step when it was read.
	step string
	// status is kstatus' verdict.
	status kstatus.Status
	// health is the Argo CD health check's.
	health argoHealth
	// obj is the object as served.
	obj map[string]any
	// x is the same, typed.
	x *summav1.SummaIndex
	// engineReady tells that the engine pod named in status, read after
	// the index and before the same resourceVersion of it was read again,
	// was ready.
	engineReady bool
}

// kSampler reads a SummaIndex every 50 ms until stopped.
type kSampler struct {
	name    string
	script  string
	mu      sync.Mutex
	step    string
	samples []kSample
	errs    []string
	stop    chan struct{}
	done    chan struct{}
}

// readUnstructured reads a SummaIndex as a GitOps tool does.
func readUnstructured(namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(summav1.GroupVersion.WithKind("SummaIndex"))
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	return u, err
}

// verdicts runs kstatus and the health check on u.
func verdicts(script string, u *unstructured.Unstructured) (kstatus.Status, argoHealth, error) {
	res, err := kstatus.Compute(u)
	if err != nil {
		return "", argoHealth{}, err
	}
	h, err := runArgoHealth(script, u.Object)
	return res.Status, h, err
}

// sampleKstatus starts a sampler of a SummaIndex of the spec namespace.
func sampleKstatus(name string) *kSampler {
	s := &kSampler{name: name, script: argoScript(), step: "start",
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			s.read()
		}
	}()
	return s
}

// read takes one sample.
func (s *kSampler) read() {
	u, err := readUnstructured(specNamespace, s.name)
	if err != nil {
		return
	}
	x := &summav1.SummaIndex{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, x); err != nil {
		s.fail("convert: %v", err)
		return
	}
	ready := false
	if pod, err := enginePodOf(s.name); err == nil && pod.UID == x.Status.PodUID && pod.DeletionTimestamp == nil {
		ready = engineReady(pod)
	}
	again, err := readUnstructured(specNamespace, s.name)
	if err != nil || again.GetResourceVersion() != u.GetResourceVersion() {
		return // moved meanwhile: the pod read is not of this status
	}
	st, h, err := verdicts(s.script, u)
	if err != nil {
		s.fail("verdicts: %v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, kSample{step: s.step, status: st, health: h, obj: u.Object, x: x, engineReady: ready})
}

// fail records an error of the sampler's goroutine.
func (s *kSampler) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// Step names the samples taken from now on, and returns how many were
// taken before.
func (s *kSampler) Step(step string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = step
	return len(s.samples)
}

// Since returns the samples from index i on.
func (s *kSampler) Since(i int) []kSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]kSample(nil), s.samples[i:]...)
}

// Seen waits until a sample from index i on has the verdicts v
// ("Current/Healthy") and returns the samples from i on.
func (s *kSampler) Seen(i int, v string) []kSample {
	GinkgoHelper()
	Eventually(func() []string { return verdictsOf(s.Since(i)) }).
		WithTimeout(30 * time.Second).WithPolling(poll).Should(ContainElement(v))
	return s.Since(i)
}

// newer returns the samples of a generation after gen.
func newer(samples []kSample, gen int64) []kSample {
	var out []kSample
	for _, k := range samples {
		if k.x.Generation > gen {
			out = append(out, k)
		}
	}
	return out
}

// Stop ends the sampling and checks what holds at every sample.
func (s *kSampler) Stop() {
	GinkgoHelper()
	close(s.stop)
	<-s.done
	Expect(s.errs).To(BeEmpty())
	for _, k := range s.samples {
		checkSample(k)
	}
	s.record()
}

// checkSample checks a sample: Current only when the engine serves the
// observed generation with nothing in progress, Failed exactly when
// Stalled (of the observed generation), Argo CD agreeing with kstatus, and Reconciling and Stalled
// never True together.
func checkSample(k kSample) {
	GinkgoHelper()
	x := k.x
	desc := fmt.Sprintf("step %s: kstatus %s, Argo CD %s (%s), phase %s, conditions %s", k.step, k.status, k.health.Status,
		k.health.Message, x.Status.Phase, conditionsLine(x))
	Expect(x.IsConditionTrue(summav1.ConditionReconciling) && x.IsConditionTrue(summav1.ConditionStalled)).
		To(BeFalse(), "Reconciling and Stalled both True: %s", desc)
	if k.status == kstatus.CurrentStatus {
		Expect(k.engineReady).To(BeTrue(), "Current without a ready engine: %s", desc)
		Expect(x.IsReady()).To(BeTrue(), desc)
		Expect(x.Status.Phase).To(Equal(summav1.PhaseRunning), desc)
		Expect(x.Status.ObservedGeneration).To(Equal(x.Generation), desc)
		Expect(x.Status.CurrentRevision).To(Equal(x.Status.UpdateRevision), "Current with a restart pending: %s", desc)
		Expect(x.Status.DrainStartTime).To(BeNil(), desc)
		Expect(doctorActive(x)).To(BeFalse(), "Current during a doctor run: %s", desc)
	}
	// A change the operator has not seen yet may be what unblocks it: in
	// progress until then.
	observed := x.Status.ObservedGeneration == x.Generation
	Expect(k.status == kstatus.FailedStatus).To(Equal(observed && x.IsConditionTrue(summav1.ConditionStalled)), desc)
	if x.IsConditionTrue(summav1.ConditionStalled) {
		Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeTrue(), "Stalled without Degraded: %s", desc)
	}
	Expect(agree(k.status, k.health, k.obj)).To(Succeed(), desc)
}

// conditionsLine is the conditions in one line.
func conditionsLine(x *summav1.SummaIndex) string {
	var b strings.Builder
	for _, c := range x.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Reason)
	}
	return b.String()
}

// verdictsOf lists the distinct successive (kstatus, Argo CD) verdicts of
// samples.
func verdictsOf(samples []kSample) []string {
	var out []string
	for _, k := range samples {
		v := string(k.status) + "/" + k.health.Status
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// record writes each sample whose verdicts or reasons differ from the
// one before to testdata/kstatus, when asked to.
func (s *kSampler) record() {
	GinkgoHelper()
	if os.Getenv(recordVar) == "" {
		return
	}
	Expect(os.MkdirAll(recordedDir, 0o755)).To(Succeed())
	old, err := filepath.Glob(filepath.Join(recordedDir, s.name+"-*.json"))
	Expect(err).NotTo(HaveOccurred())
	for _, f := range old {
		Expect(os.Remove(f)).To(Succeed())
	}
	last := ""
	n := 0
	for _, k := range s.samples {
		key := fmt.Sprintf("%s %s %s %s %s", k.step, k.status, k.health.Status, k.x.Status.Phase, conditionsLine(k.x))
		if key == last {
			continue
		}
		last = key
		n++
		obj := scrub(k.obj)
		b, err := json.MarshalIndent(recordedStatus{Step: k.step, Kstatus: string(k.status), Argo: k.health.Status, Object: obj}, "", "  ")
		Expect(err).NotTo(HaveOccurred())
		file := filepath.Join(recordedDir, fmt.Sprintf("%s-%02d-%s.json", s.name, n, strings.ReplaceAll(k.step, " ", "-")))
		Expect(os.WriteFile(file, append(b, '\n'), 0o644)).To(Succeed())
	}
}

// scrub drops what a recording does not need and would only churn: the
// managed fields.
func scrub(obj map[string]any) map[string]any {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	u.SetManagedFields(nil)
	return u.Object
}

var _ = Describe("kstatus and the Argo CD health check", func() {
	It("read an index nobody reconciled yet, empty status and all, as in progress", func() {
		// No operator watches this namespace: the object stays as created.
		ns := "summa-kstatus-unwatched"
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		x := specIndex("fresh", nil)
		x.Namespace = ns
		u := &unstructured.Unstructured{}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
		Expect(err).NotTo(HaveOccurred())
		u.Object = obj
		delete(u.Object, "status")
		u.SetGroupVersionKind(summav1.GroupVersion.WithKind("SummaIndex"))
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		script := argoScript()
		for _, what := range []string{"the creation's answer", "a read"} {
			if what == "a read" {
				u, err = readUnstructured(ns, "fresh")
				Expect(err).NotTo(HaveOccurred())
			}
			og, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue(), "%s: status.observedGeneration is defaulted: %v", what, u.Object["status"])
			Expect(og).To(BeZero())
			st, h, err := verdicts(script, u)
			Expect(err).NotTo(HaveOccurred())
			Expect(st).To(Equal(kstatus.InProgressStatus), what)
			Expect(h.Status).To(Equal("Progressing"), what)
		}
		Expect(k8sClient.Delete(ctx, u)).To(Succeed())
	})

	It("follow creation, a drained restart, a doctor run, a refused change and suspension: Current only when the engine serves the spec", func() {
		const name = "kstat"
		s := sampleKstatus(name)
		By("creating")
		Expect(k8sClient.Create(ctx, specIndex(name, nil))).To(Succeed())
		x := waitCurrent(name)
		created := s.Seen(0, "Current/Healthy")
		Expect(verdictsOf(created)[0]).To(Equal("InProgress/Progressing"), "the first readings: %v", verdictsOf(created))
		Expect(verdictsOf(created)).To(ContainElement("Current/Healthy"))

		By("restarting with a drain for a new engine setting")
		oldUID, gen := x.Status.PodUID, x.Generation
		i := s.Step("restart")
		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr32(1) })
		x = waitCurrentAfter(name, func(x *summav1.SummaIndex) bool { return x.Status.PodUID != oldUID })
		restart := newer(s.Seen(i, "Current/Healthy"), gen)
		Expect(phasesOf(restart)).To(ContainElement(BeElementOf(summav1.PhaseDraining, summav1.PhaseRestarting)))
		for _, k := range restart {
			if k.status == kstatus.CurrentStatus {
				Expect(k.x.Status.PodUID).NotTo(Equal(oldUID), "Current on the old pod after the change: %s", conditionsLine(k.x))
			}
		}
		Expect(verdictsOf(restart)).To(ContainElement("InProgress/Progressing"))

		By("running the doctor")
		gen = getIndex(name).Generation
		i = s.Step("doctor")
		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "k1"; x.Spec.Doctor.Backup = summav1.BackupNone })
		waitDoctor(name, "k1", summav1.DoctorPhaseSucceeded)
		waitCurrent(name)
		doctor := newer(s.Seen(i, "Current/Healthy"), gen)
		Expect(phasesOf(doctor)).To(ContainElement(summav1.PhaseRepairing))
		for _, k := range doctor {
			if k.x.Status.Phase == summav1.PhaseRepairing {
				Expect(k.status).To(Equal(kstatus.InProgressStatus), "during the doctor run: %s", conditionsLine(k.x))
			}
		}

		By("refusing a pod template the API server refuses: Stalled, Failed, Degraded, while the old engine serves")
		oldUID, gen = getIndex(name).Status.PodUID, getIndex(name).Generation
		i = s.Step("refused")
		updateIndex(name, func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "Not_A_DNS_Label", Image: "app:1"},
			}}}
		})
		Eventually(func(g Gomega) {
			u, err := readUnstructured(specNamespace, name)
			g.Expect(err).NotTo(HaveOccurred())
			st, h, err := verdicts(argoScript(), u)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).To(Equal(kstatus.FailedStatus))
			g.Expect(h.Status).To(Equal("Degraded"))
			g.Expect(h.Message).To(ContainSubstring(ReasonInvalidPodTemplate))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		c := condition(name, summav1.ConditionStalled)
		Expect(c.Reason).To(Equal(ReasonInvalidPodTemplate))
		Expect(c.Message).To(ContainSubstring("Not_A_DNS_Label"))
		Expect(condition(name, summav1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
		x = getIndex(name)
		Expect(x.IsReady()).To(BeTrue(), "the old engine still serves")
		Expect(x.Status.PodUID).To(Equal(oldUID))
		Expect(verdictsOf(newer(s.Seen(i, "Failed/Degraded"), gen))).NotTo(ContainElement("Current/Healthy"), "Current with the new spec refused")

		By("fixing it: in progress again, then Current only on the new pod")
		gen = getIndex(name).Generation
		i = s.Step("fixed")
		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.PodTemplate.Spec.Containers[0].Name = "app" })
		waitCurrentAfter(name, func(x *summav1.SummaIndex) bool { return x.Status.PodUID != oldUID })
		Expect(condition(name, summav1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
		fixed := newer(s.Seen(i, "Current/Healthy"), gen)
		Expect(verdictsOf(fixed)[0]).To(Equal("InProgress/Progressing"))
		for _, k := range fixed {
			if k.status == kstatus.CurrentStatus {
				Expect(k.x.Status.PodUID).NotTo(Equal(oldUID), "Current on the old pod after the fix: %s", conditionsLine(k.x))
			}
		}

		By("suspending: in progress while it stops, then Suspended for Argo CD and never Current")
		gen = getIndex(name).Generation
		i = s.Step("suspend")
		suspendAndWait(name)
		Eventually(func(g Gomega) {
			u, err := readUnstructured(specNamespace, name)
			g.Expect(err).NotTo(HaveOccurred())
			st, h, err := verdicts(argoScript(), u)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).To(Equal(kstatus.InProgressStatus))
			g.Expect(h.Status).To(Equal("Suspended"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(condition(name, summav1.ConditionReconciling).Reason).To(Equal("Suspended"))
		Expect(condition(name, summav1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
		Expect(verdictsOf(newer(s.Seen(i, "InProgress/Suspended"), gen))).NotTo(ContainElement("Current/Healthy"))

		By("resuming")
		gen = getIndex(name).Generation
		i = s.Step("resume")
		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitCurrent(name)
		Expect(verdictsOf(newer(s.Seen(i, "Current/Healthy"), gen))[0]).To(Equal("InProgress/Progressing"))
		s.Stop()
		deleteAndWaitGone(name)
	})
})

// ptr32 is a pointer to v.
func ptr32(v int32) *int32 { return &v }

// phasesOf lists the phases of samples.
func phasesOf(samples []kSample) []summav1.Phase {
	var out []summav1.Phase
	for _, k := range samples {
		out = append(out, k.x.Status.Phase)
	}
	return out
}

// waitCurrent waits until kstatus reads the SummaIndex as Current and Argo
// CD as Healthy.
func waitCurrent(name string) *summav1.SummaIndex {
	GinkgoHelper()
	return waitCurrentAfter(name, nil)
}

// waitCurrentAfter is waitCurrent, once done holds too.
func waitCurrentAfter(name string, done func(*summav1.SummaIndex) bool) *summav1.SummaIndex {
	GinkgoHelper()
	var x *summav1.SummaIndex
	Eventually(func(g Gomega) {
		u, err := readUnstructured(specNamespace, name)
		g.Expect(err).NotTo(HaveOccurred())
		st, h, err := verdicts(argoScript(), u)
		g.Expect(err).NotTo(HaveOccurred())
		x = &summav1.SummaIndex{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, x)).To(Succeed())
		g.Expect(st).To(Equal(kstatus.CurrentStatus), "conditions %s", conditionsLine(x))
		g.Expect(h.Status).To(Equal("Healthy"))
		if done != nil {
			g.Expect(done(x)).To(BeTrue())
		}
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return x
}
