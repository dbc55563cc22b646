package envkubelet

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels the job controller puts on its pods besides the batch.kubernetes.io
// ones.
const (
	// legacyJobNameLabel is the old job-name label.
	legacyJobNameLabel = "job-name"
	// legacyControllerUIDLabel is the old controller-uid label.
	legacyControllerUIDLabel = "controller-uid"
)

// syncJobs is the job controller: one pod per unfinished Job, and the Job's
// status from that pod: active and ready while it runs, then Complete (pod
// Succeeded) or Failed (pod Failed or gone), as with backoffLimit 0.
// Suspended Jobs and Jobs managed by another controller are left alone.
func (k *Kubelet) syncJobs(ctx context.Context, jobs []batchv1.Job, pods []corev1.Pod) {
	for i := range jobs {
		job := &jobs[i]
		if job.DeletionTimestamp != nil || jobFinished(job) || ptr.Deref(job.Spec.Suspend, false) ||
			ptr.Deref(job.Spec.ManagedBy, batchv1.JobControllerName) != batchv1.JobControllerName {
			continue
		}
		var owned *corev1.Pod
		for j := range pods {
			if metav1.IsControlledBy(&pods[j], job) {
				owned = &pods[j]
				break
			}
		}
		switch {
		case owned == nil && job.Status.StartTime == nil:
			k.createJobPod(ctx, job)
		case owned == nil:
			k.mu.Lock()
			name := k.jobPods[job.UID]
			k.mu.Unlock()
			if name != "" {
				if err := k.c.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
					continue // not in the list yet
				}
			}
			k.finishJob(ctx, job, false)
		case owned.Status.Phase == corev1.PodSucceeded:
			k.finishJob(ctx, job, true)
		case owned.Status.Phase == corev1.PodFailed:
			k.finishJob(ctx, job, false)
		default:
			k.jobProgress(ctx, job, owned)
		}
	}
}

// jobFinished reports whether the Job is Complete or Failed.
func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// createJobPod creates the Job's pod from its template and marks the Job
// started.
func (k *Kubelet) createJobPod(ctx context.Context, job *batchv1.Job) {
	tmpl := job.Spec.Template.DeepCopy()
	labels := map[string]string{}
	for key, v := range tmpl.Labels {
		labels[key] = v
	}
	labels[batchv1.JobNameLabel], labels[legacyJobNameLabel] = job.Name, job.Name
	labels[batchv1.ControllerUidLabel], labels[legacyControllerUIDLabel] = string(job.UID), string(job.UID)
	base := job.Name
	if len(base) > 57 {
		base = base[:57]
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: base + "-" + utilrand.String(5), Namespace: job.Namespace,
			Labels: labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: tmpl.Spec,
	}
	if err := k.c.Create(ctx, pod); err != nil {
		k.apiErr("create pod of job "+job.Namespace+"/"+job.Name, err)
		return
	}
	k.mu.Lock()
	k.jobPods[job.UID] = pod.Name
	k.mu.Unlock()
	k.log.Info("Job pod created", "job", job.Namespace+"/"+job.Name, "pod", pod.Name)
	k.jobProgress(ctx, job, pod)
}

// jobProgress writes the status of a Job whose pod runs: startTime and
// the active, ready and terminating counts.
func (k *Kubelet) jobProgress(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) {
	active, ready, terminating := int32(1), int32(0), int32(0)
	if pod.DeletionTimestamp != nil {
		active, terminating = 0, 1
	} else if podReady(pod) {
		ready = 1
	}
	st := &job.Status
	if st.StartTime != nil && st.Active == active && st.Ready != nil && *st.Ready == ready &&
		st.Terminating != nil && *st.Terminating == terminating {
		return
	}
	orig := job.DeepCopy()
	if st.StartTime == nil {
		now := mtime(time.Now())
		st.StartTime = &now
	}
	st.Active, st.Ready, st.Terminating = active, &ready, &terminating
	k.apiErr("job status "+job.Namespace+"/"+job.Name, k.c.Status().Patch(ctx, job, client.MergeFrom(orig)))
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// finishJob writes the final status of a Job as the real controller does:
// SuccessCriteriaMet then Complete with completionTime, or FailureTarget
// then Failed (BackoffLimitExceeded); no pod active, ready or terminating.
func (k *Kubelet) finishJob(ctx context.Context, job *batchv1.Job, success bool) {
	orig := job.DeepCopy()
	now := mtime(time.Now())
	st := &job.Status
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Active, st.Ready, st.Terminating = 0, ptr.To[int32](0), ptr.To[int32](0)
	if success {
		st.Succeeded = 1
		const msg = "Reached expected number of succeeded pods"
		setJobCondition(st, batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msg, now)
		setJobCondition(st, batchv1.JobComplete, batchv1.JobReasonCompletionsReached, msg, now)
		st.CompletionTime = &now
	} else {
		st.Failed = 1
		const msg = "Job has reached the specified backoff limit"
		setJobCondition(st, batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msg, now)
		setJobCondition(st, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msg, now)
	}
	err := k.c.Status().Patch(ctx, job, client.MergeFrom(orig))
	k.apiErr("job status "+job.Namespace+"/"+job.Name, err)
	if err == nil {
		k.log.Info("Job finished", "job", job.Namespace+"/"+job.Name, "succeeded", success)
		k.mu.Lock()
		delete(k.jobPods, job.UID)
		k.mu.Unlock()
	}
}

// setJobCondition sets a True condition.
func setJobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, reason, message string, now metav1.Time) {
	c := batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: now, LastTransitionTime: now}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}
