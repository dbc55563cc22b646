package controllers

import (
	corev1 "k8s.io/api/core/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// The engine as a native sidecar. With app containers in spec.podTemplate
// the engine is an init container with restartPolicy Always: it starts
// before the apps and stops after them. Two consequences:
//
//   - Readiness. The pod's Ready condition also waits for the apps; an app
//     whose readiness needs the index (documents, a first commit) would
//     wait for an engine the operator never observes, since nothing
//     creates the index. The operator therefore gates on the engine
//     container's own readiness (engineReady), and the Service publishes
//     the pod's address while the apps are not ready (servicePublishes
//     NotReady), so that clients outside the pod reach a ready engine.
//   - Shutdown. On deletion or eviction the kubelet sends SIGTERM to the
//     apps first (after their preStop hooks) and to the engine only once
//     they exited, all within one terminationGracePeriodSeconds. The
//     apps' time (appShutdownSeconds) is added to the sized grace and
//     taken from the engine's own --shutdown-deadline.

// defaultAppShutdownSeconds is the apps' stop time when
// spec.lifecycle.appShutdownSeconds is unset: enough for an app to finish
// its requests and exit after SIGTERM, on top of any preStop sleep.
const defaultAppShutdownSeconds = 10

// hasAppContainers reports whether index's pod runs app containers, which
// makes the engine a native sidecar.
func hasAppContainers(index *summav1.SummaIndex) bool {
	return index.Spec.PodTemplate != nil && len(index.Spec.PodTemplate.Spec.Containers) > 0
}

// appShutdownSeconds is the time the app containers may take to stop
// before the engine gets SIGTERM: spec.lifecycle.appShutdownSeconds when
// set, else defaultAppShutdownSeconds plus the longest preStop sleep of an
// app container (the one hook whose length is known; exec and httpGet
// hooks are covered by the default or by setting the field). 0 without app
// containers.
func appShutdownSeconds(index *summav1.SummaIndex) int64 {
	if !hasAppContainers(index) {
		return 0
	}
	if s := index.Spec.Lifecycle.AppShutdownSeconds; s != nil {
		return int64(*s)
	}
	var sleep int64
	for _, c := range index.Spec.PodTemplate.Spec.Containers {
		if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
			sleep = max(sleep, l.PreStop.Sleep.Seconds)
		}
	}
	return defaultAppShutdownSeconds + sleep
}

// engineShutdownDeadline is the engine's --shutdown-deadline for a pod
// grace period: what is left after the apps stopped, a margin shorter
// (shutdownDeadlineFor), and at least 1 s.
func engineShutdownDeadline(index *summav1.SummaIndex, grace int64) int64 {
	return shutdownDeadlineFor(grace - appShutdownSeconds(index))
}

// engineReady reports whether the engine container of pod passes its
// readiness probe (/readyz) (engineStatus). The pod's own Ready condition
// is not used, as it also waits for the app containers.
func engineReady(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" {
		return false
	}
	cs := engineStatus(pod)
	return cs != nil && cs.Ready && cs.State.Running != nil
}

// servicePublishesNotReady tells whether index's Service lists the engine pod's
// address while the pod is not Ready. Without app containers, the pod's
// readiness is the engine's, and the Service follows it as usual. With
// app containers the pod is Ready only when the apps are too, which says
// nothing about the engine: the Service then follows the pod's address
// (publishNotReadyAddresses), and the engine's own readiness shows in
// status (condition Ready) and on its /readyz. A client of a starting
// engine gets a refused connection (as with no endpoint at all), and of a
// draining one the engine's own answer (503 for writes).
func servicePublishesNotReady(index *summav1.SummaIndex) bool {
	return hasAppContainers(index)
}
