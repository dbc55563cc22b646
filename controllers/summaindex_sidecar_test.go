package controllers

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

// withApp gives x one app container, so that the engine is its sidecar.
func withApp(x *summav1.SummaIndex, app corev1.Container) *summav1.SummaIndex {
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{app}}}
	return x
}

func TestEngineReadinessIsTheEngineContainersNotThePods(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	podReadyFalse := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	podReadyTrue := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, c := range []struct {
		why    string
		status corev1.PodStatus
		want   bool
	}{
		{"a sidecar engine is ready while its app is not", corev1.PodStatus{PodIP: "10.0.0.1", Conditions: podReadyFalse,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: EngineContainerName, Ready: true, State: running}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", Ready: false, State: running}}}, true},
		{"a sidecar engine that is not ready, in a pod said Ready", corev1.PodStatus{PodIP: "10.0.0.1", Conditions: podReadyTrue,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: EngineContainerName, Ready: false, State: running}}}, false},
		{"the engine as the pod's container", corev1.PodStatus{PodIP: "10.0.0.1", Conditions: podReadyTrue,
			ContainerStatuses: []corev1.ContainerStatus{{Name: EngineContainerName, Ready: true, State: running}}}, true},
		{"no address yet", corev1.PodStatus{Conditions: podReadyTrue,
			ContainerStatuses: []corev1.ContainerStatus{{Name: EngineContainerName, Ready: true, State: running}}}, false},
		{"no engine status", corev1.PodStatus{PodIP: "10.0.0.1", Conditions: podReadyTrue}, false},
	} {
		if got := engineReady(&corev1.Pod{Status: c.status}); got != c.want {
			t.Errorf("%s: engineReady %v, want %v", c.why, got, c.want)
		}
	}
}

func TestAppShutdownSecondsDefaultsFromTheApps(t *testing.T) {
	sleep := func(s int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}}
	}
	x := podTestIndex()
	x.Spec.Lifecycle.AppShutdownSeconds = ptr.To[int32](40)
	if got := appShutdownSeconds(x); got != 0 {
		t.Errorf("no app containers: %d, want 0 (the field is ignored)", got)
	}
	x = withApp(podTestIndex(), corev1.Container{Name: "app", Image: "app:1"})
	if got := appShutdownSeconds(x); got != defaultAppShutdownSeconds {
		t.Errorf("an app without hooks: %d, want %d", got, defaultAppShutdownSeconds)
	}
	x.Spec.PodTemplate.Spec.Containers = append(x.Spec.PodTemplate.Spec.Containers,
		corev1.Container{Name: "a", Image: "a:1", Lifecycle: sleep(5)}, corev1.Container{Name: "b", Image: "b:1", Lifecycle: sleep(15)})
	if got := appShutdownSeconds(x); got != defaultAppShutdownSeconds+15 {
		t.Errorf("apps with preStop sleeps 5 and 15: %d, want %d", got, defaultAppShutdownSeconds+15)
	}
	x.Spec.Lifecycle.AppShutdownSeconds = ptr.To[int32](3)
	if got := appShutdownSeconds(x); got != 3 {
		t.Errorf("set to 3: %d", got)
	}
}

func TestSidecarGraceAddsTheAppsAndTheDeadlineLeavesThemRoom(t *testing.T) {
	alone := podTestIndex()
	sidecar := withApp(podTestIndex(), corev1.Container{Name: "app", Image: "app:1"})
	sidecar.Spec.Lifecycle.AppShutdownSeconds = ptr.To[int32](20)
	for _, c := range []struct {
		x     *summav1.SummaIndex
		est   float64
		grace int64
	}{
		{alone, 0, 30}, {alone, 20, 50}, {sidecar, 0, 30}, {sidecar, 20, 70}, {sidecar, 1e9, 1800},
	} {
		if got := graceTarget(c.x, c.est); got != c.grace {
			t.Errorf("apps %ds, estimate %.0fs: grace %d, want %d", appShutdownSeconds(c.x), c.est, got, c.grace)
		}
	}
	// The engine gets SIGTERM only when the apps stopped: its deadline
	// plus theirs stays below the grace, with the engine's margin.
	for _, apps := range []int32{0, 1, 10, 20, 100} {
		sidecar.Spec.Lifecycle.AppShutdownSeconds = ptr.To(apps)
		for _, grace := range []int64{3, 10, 30, 45, 120, 1800} {
			d := engineShutdownDeadline(sidecar, grace)
			if d < 1 || (grace-int64(apps) >= 2 && d+int64(apps) >= grace) {
				t.Errorf("grace %d, apps %d: engine deadline %d", grace, apps, d)
			}
		}
	}
	if got := engineShutdownDeadline(alone, 30); got != shutdownDeadlineFor(30) {
		t.Errorf("without apps: deadline %d, want %d", got, shutdownDeadlineFor(30))
	}
}

func TestSidecarEngineArgsCarryTheShorterDeadline(t *testing.T) {
	x := withApp(podTestIndex(), corev1.Container{Name: "app", Image: "app:1"})
	pod := desiredPod(x, podInputs{image: "img:1", grace: 45})
	engine := pod.Spec.InitContainers[0]
	// 45 s of grace, 10 s for the app: 35 s left, minus the 5 s margin.
	want := fmt.Sprintf("--shutdown-deadline=%ds", 45-defaultAppShutdownSeconds-5)
	if !slices.Contains(engine.Args, want) {
		t.Errorf("engine args %v lack %s", engine.Args, want)
	}
	if alone := desiredPod(podTestIndex(), podInputs{image: "img:1", grace: 45}); !slices.Contains(alone.Spec.Containers[0].Args, "--shutdown-deadline=40s") {
		t.Errorf("engine without apps: args %v", alone.Spec.Containers[0].Args)
	}
}

func TestServicePublishesNotReadyAddressesOnlyWithApps(t *testing.T) {
	if servicePublishesNotReady(podTestIndex()) {
		t.Error("without app containers the Service follows the pod's readiness")
	}
	if !servicePublishesNotReady(withApp(podTestIndex(), corev1.Container{Name: "app", Image: "app:1"})) {
		t.Error("with app containers the Service must not wait for the apps' readiness")
	}
	have := corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: EnginePortName, Port: EnginePort}}}
	want := *have.DeepCopy()
	want.PublishNotReadyAddresses = true
	if servicePortsMatch(have, want) {
		t.Error("a change of publishNotReadyAddresses is not applied")
	}
}
