package envkubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mtime is t as an API time: whole seconds, as it is stored, so that a
// status read back compares equal.
func mtime(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second))
}

// phase is the pod's phase: Pending while initializing or until a
// container was started, Running, then the terminal phase once nothing
// runs.
func (p *pod) phase() corev1.PodPhase {
	switch {
	case p.done && p.final != "":
		return p.final
	case p.initialized:
		for _, c := range p.apps {
			if c.cur != nil {
				return corev1.PodRunning
			}
		}
		// No container was started yet (their images are not pulled).
	}
	return corev1.PodPending
}

// status is the pod's status from the runtime state, on top of live (the
// pod as last listed): fields the kubelet does not own (qosClass, other
// conditions) are kept, and a condition's transition time changes only
// when its status does. k.mu is held.
func (p *pod) status(live *corev1.Pod, now time.Time) corev1.PodStatus {
	st := *live.Status.DeepCopy()
	st.Phase = p.phase()
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
	start := mtime(p.startTime)
	st.StartTime = &start
	st.ObservedGeneration = live.Generation

	st.InitContainerStatuses = nil
	var incomplete []string
	for _, c := range p.inits {
		cs := p.containerStatus(c)
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		if c.kind == initKind && !cs.Ready || c.kind == sidecarKind && !*cs.Started {
			incomplete = append(incomplete, c.spec.Name)
		}
	}
	st.ContainerStatuses = nil
	var unready []string
	for _, c := range p.apps {
		cs := p.containerStatus(c)
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		if !cs.Ready {
			unready = append(unready, c.spec.Name)
		}
	}
	for _, c := range p.inits {
		if c.kind == sidecarKind && !p.containerStatus(c).Ready {
			unready = append(unready, c.spec.Name)
		}
	}
	sort.Slice(st.ContainerStatuses, func(i, j int) bool { return st.ContainerStatuses[i].Name < st.ContainerStatuses[j].Name })

	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		setCondition(&st, t, ok, reason, message, live.Generation, now)
	}
	set(corev1.PodReadyToStartContainers, !p.done, "", "")
	if p.initialized {
		set(corev1.PodInitialized, true, "", "")
	} else {
		set(corev1.PodInitialized, false, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
	}
	switch {
	case terminal:
		set(corev1.ContainersReady, false, "PodCompleted", "")
		set(corev1.PodReady, false, "PodCompleted", "")
	case len(unready) > 0:
		msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
		set(corev1.ContainersReady, false, "ContainersNotReady", msg)
		set(corev1.PodReady, false, "ContainersNotReady", msg)
	default:
		set(corev1.ContainersReady, true, "", "")
		if gates := p.unmetGates(&st); len(gates) > 0 {
			set(corev1.PodReady, false, "ReadinessGatesNotReady",
				fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", gates[0]))
		} else {
			set(corev1.PodReady, true, "", "")
		}
	}
	set(corev1.PodScheduled, true, "", "")
	return st
}

// unmetGates lists the pod's readiness gates whose condition is not True.
func (p *pod) unmetGates(st *corev1.PodStatus) []string {
	var unmet []string
	for _, g := range p.obj.Spec.ReadinessGates {
		ok := false
		for _, c := range st.Conditions {
			ok = ok || c.Type == g.ConditionType && c.Status == corev1.ConditionTrue
		}
		if !ok {
			unmet = append(unmet, string(g.ConditionType))
		}
	}
	return unmet
}

// setCondition sets a condition, keeping its transition time unless its
// status changes.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason, message string, gen int64, now time.Time) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = mtime(now)
		}
		c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, message, gen
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason,
		Message: message, ObservedGeneration: gen, LastTransitionTime: mtime(now)})
}

// containerStatus is the status of one container. k.mu is held.
func (p *pod) containerStatus(c *container) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "envkubelet://" + c.spec.Image, RestartCount: c.restarts,
	}
	started := false
	in := c.cur
	switch {
	case in == nil && p.done:
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
			Message: "The container could not be located when the pod was terminated"}
	case in == nil && c.pulling != nil:
		cs.State.Waiting = c.pulling.DeepCopy()
	case in == nil:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
	case in.running:
		cs.ContainerID = in.id
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: mtime(in.startedAt)}
		started = in.started
		cs.Ready = in.started && (c.spec.ReadinessProbe == nil || in.ready)
	case !c.restartAt.IsZero():
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				restartDelay, c.spec.Name, p.name, p.ns, p.uid)}
		cs.LastTerminationState.Terminated = terminated(in)
	default:
		cs.ContainerID = in.id
		cs.State.Terminated = terminated(in)
		cs.Ready = c.kind == initKind && in.exitCode == 0
	}
	if cs.State.Waiting == nil && c.prev != nil {
		cs.LastTerminationState.Terminated = terminated(c.prev)
	}
	cs.Started = &started
	return cs
}

// terminated is the terminated state of a run.
func terminated(in *instance) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{
		ExitCode: int32(in.exitCode), Reason: in.reason, Message: in.message,
		StartedAt: mtime(in.startedAt), FinishedAt: mtime(in.finishedAt), ContainerID: in.id,
	}
}
