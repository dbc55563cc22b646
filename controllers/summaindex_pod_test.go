package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

func podTestIndex() *summav1.SummaIndex {
	return &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "articles", Namespace: "ns"},
		Spec: summav1.SummaIndexSpec{
			Schema:  summav1.Schema{Fields: []summav1.SchemaField{{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true}}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
}

func TestGraceTargetIsClampedToTheSpecBounds(t *testing.T) {
	x := podTestIndex()
	for _, c := range []struct {
		est  float64
		want int64
	}{{0, 30}, {5, 30}, {10, 30}, {10.2, 31}, {100, 210}, {1e9, 1800}, {-3, 30}} {
		if got := graceTarget(x, c.est); got != c.want {
			t.Errorf("estimate %.1fs: grace %d, want %d", c.est, got, c.want)
		}
	}
	x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 5, MaxSeconds: 60}
	if got := graceTarget(x, 0); got != 10 {
		t.Errorf("min 5: grace %d, want the fixed 10 s", got)
	}
	if got := graceTarget(x, 1000); got != 60 {
		t.Errorf("max 60: grace %d, want 60", got)
	}
}

func TestGraceHysteresis(t *testing.T) {
	x := podTestIndex()
	est := func(f float64) *float64 { return &f }
	steps := []struct {
		current int64
		est     *float64
		want    int64
		why     string
	}{
		{0, nil, 30, "first pod: the minimum"},
		{30, est(12), 30, "target 34 is within 25% of 30"},
		{30, est(15), 40, "target 40 clears 25% of 30"},
		{200, est(100), 200, "target 210 is within 25% of 200"},
		{200, est(130), 270, "target 270 clears 25% of 200"},
		{270, est(0), 30, "the next pod shrinks back to the target when the estimate fell"},
		{270, est(120), 270, "target 250 is within 25% of 270: kept"},
		{4000, est(900), 1800, "a grace above the bounds is clamped"},
	}
	for _, s := range steps {
		if got := nextGrace(x, s.current, s.est); got != s.want {
			t.Errorf("%s: nextGrace(%d, %s) = %d, want %d", s.why, s.current, fmtEstimate(s.est), got, s.want)
		}
	}
}

func TestShutdownDeadlineIsShorterThanGrace(t *testing.T) {
	for _, g := range []int64{1, 2, 5, 10, 19, 20, 30, 1800} {
		d := shutdownDeadlineFor(g)
		if d < 1 || (g > 1 && d >= g) {
			t.Errorf("grace %d: shutdown deadline %d", g, d)
		}
	}
}

func TestDesiredPodIsSecureAndCarriesTheContract(t *testing.T) {
	x := podTestIndex()
	x.Spec.Replicas = ptr.To[int32](1)
	pod := desiredPod(x, podInputs{image: "summa-server:v1", grace: 45, shutdownDelay: 5})
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != EngineContainerName {
		t.Fatalf("containers %+v", pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	args := append([]string{c.Command[0]}, c.Args...)
	for _, want := range []string{"summa-server", "--data-dir", "/data", "--listen", "0.0.0.0:8082", "--shutdown-deadline=40s", "--shutdown-delay=5s"} {
		if !slices.Contains(args, want) {
			t.Errorf("engine command %v lacks %s", args, want)
		}
	}
	if *pod.Spec.TerminationGracePeriodSeconds != 45 {
		t.Errorf("grace %d", *pod.Spec.TerminationGracePeriodSeconds)
	}
	sc := c.SecurityContext
	if !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("engine security context %+v", sc)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %s, liveness %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	if pod.Labels[summav1.LabelManagedBy] != summav1.ManagedByValue || pod.Labels[summav1.LabelIndex] != "articles" {
		t.Errorf("labels %v", pod.Labels)
	}
}

func TestRevisionFollowsWhatMatters(t *testing.T) {
	x := podTestIndex()
	base := desiredPod(x, podInputs{image: "img:1", grace: 30}).Annotations[AnnotationRevision]
	if again := desiredPod(x, podInputs{image: "img:1", grace: 30}).Annotations[AnnotationRevision]; again != base {
		t.Fatal("the revision is not deterministic")
	}
	changes := map[string]func(*summav1.SummaIndex) (string, int64){
		"image": func(*summav1.SummaIndex) (string, int64) { return "img:2", 30 },
		"grace bounds": func(y *summav1.SummaIndex) (string, int64) {
			y.Spec.Lifecycle.TerminationGracePeriod.MinSeconds = 60
			return "img:1", 30
		},
		"engine flags": func(y *summav1.SummaIndex) (string, int64) {
			y.Spec.Engine.IndexingWorkers = ptr.To[int32](3)
			return "img:1", 30
		},
		"resources": func(y *summav1.SummaIndex) (string, int64) {
			y.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
			return "img:1", 30
		},
	}
	for what, change := range changes {
		y := x.DeepCopy()
		img, grace := change(y)
		if desiredPod(y, podInputs{image: img, grace: grace}).Annotations[AnnotationRevision] == base {
			t.Errorf("a change of %s keeps the revision", what)
		}
	}
	y := x.DeepCopy()
	y.Spec.Storage.Size = resource.MustParse("2Gi")
	y.Spec.Doctor.RequestID = "r1"
	if desiredPod(y, podInputs{image: "img:1", grace: 30}).Annotations[AnnotationRevision] != base {
		t.Error("volume size or doctor request changed the pod revision")
	}
	// The grace is applied at the next restart that happens anyway: a new
	// estimate alone never restarts the engine.
	if desiredPod(x, podInputs{image: "img:1", grace: 600}).Annotations[AnnotationRevision] != base {
		t.Error("the grace changed the pod revision")
	}
}

func TestAppContainersMakeTheEngineANativeSidecar(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
	}}
	pod := desiredPod(x, podInputs{image: "img:1", grace: 30})
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "app" {
		t.Fatalf("app containers %+v", pod.Spec.Containers)
	}
	if len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Name != EngineContainerName ||
		pod.Spec.InitContainers[0].RestartPolicy == nil || *pod.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("engine is not the first init container with restartPolicy Always: %+v", pod.Spec.InitContainers)
	}
}

func TestVolumePermissionsRunsFirstAsRootWithOnlyChown(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
	}}
	pod := desiredPod(x, podInputs{image: "img:1", grace: 30, volumePermissions: true})
	if len(pod.Spec.InitContainers) < 2 || pod.Spec.InitContainers[0].Name != "volume-permissions" ||
		pod.Spec.InitContainers[1].Name != EngineContainerName {
		t.Fatalf("init containers %+v", pod.Spec.InitContainers)
	}
	c := pod.Spec.InitContainers[0]
	if *c.SecurityContext.RunAsUser != 0 || *c.SecurityContext.AllowPrivilegeEscalation ||
		!slices.Equal(c.SecurityContext.Capabilities.Add, []corev1.Capability{"CHOWN", "FOWNER"}) ||
		!slices.Contains(c.Args, "prepare-volume") || !slices.Contains(c.Args, "/data") {
		t.Fatalf("volume-permissions container %+v", c)
	}
	if desiredPod(x, podInputs{image: "img:1", grace: 30}).Annotations[AnnotationRevision] == pod.Annotations[AnnotationRevision] {
		t.Fatal("the init container does not change the revision")
	}
}

func TestSmallGracesGrowByAtLeastFiveSeconds(t *testing.T) {
	x := podTestIndex()
	x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 1, MaxSeconds: 120}
	est := func(f float64) *float64 { return &f }
	if got := nextGrace(x, 10, est(1.9)); got != 10 {
		t.Errorf("target 14 over 10: %d, want 10 (below the 5 s step)", got)
	}
	if got := nextGrace(x, 10, est(2.1)); got != 15 {
		t.Errorf("target 15 over 10: %d, want 15", got)
	}
}

func TestShutdownDelayLeavesTheDrainHalfTheDeadline(t *testing.T) {
	for deadline, want := range map[int64]int64{1: 0, 3: 1, 8: 4, 10: 5, 40: 5, 3595: 5} {
		if got := shutdownDelayFor(deadline, 5); got != want || (got > 0 && got >= deadline) {
			t.Errorf("shutdownDelayFor(%d, 5) = %d, want %d", deadline, got, want)
		}
	}
	if got := shutdownDelayFor(40, 0); got != 0 {
		t.Errorf("without a delay set: %d", got)
	}
	// A 1-second deadline gets no --shutdown-delay (the engine refuses one
	// as long as the deadline), nor does a lone pod (nothing to hand over
	// to); a pod of an index with followers does.
	withFollowers := podTestIndex()
	withFollowers.Spec.Replicas = ptr.To[int32](2)
	for _, c := range []struct {
		x     *summav1.SummaIndex
		grace int64
		want  bool
	}{{withFollowers, 2, false}, {podTestIndex(), 45, false}, {withFollowers, 45, true}} {
		pod := desiredPod(c.x, podInputs{image: "img:1", grace: c.grace, shutdownDelay: 5})
		has := slices.ContainsFunc(pod.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--shutdown-delay=") })
		if has != c.want {
			t.Errorf("replicas %d, grace %d: --shutdown-delay %v, want %v (%v)", c.x.EffectiveReplicas(), c.grace, has, c.want, pod.Spec.Containers[0].Args)
		}
	}
}
