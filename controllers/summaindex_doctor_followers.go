package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// Doctor runs with read followers. Like every change that restarts pods,
// a doctor run restarts the followers first, one at a time, each back
// before the next, and the leader last: the leader's run (drain, pod
// stopped, backup, Job) leaves Pending only then. While the leader is
// repaired, the followers serve. A follower restarted for a run carries
// the run's requestId in AnnotationDoctorRequest (a follower created since
// the request carries it too), so an operator killed at any point resumes
// the roll where it stood, and no follower restarts twice for one run.
//
// Three differences from a rolling restart to a new revision:
//   - A follower is back once it is ready and answers for the index; it is
//     not waited on to catch up. The leader under repair may hold the
//     quarantined files that a follower refuses to copy, and then no
//     follower catches up before the repair.
//   - A restarted follower not back within spec.doctor.startTimeoutSeconds
//     of its pod's creation holds the run back no longer (a Warning event
//     FollowerNotBack says so): a repair is never held by a follower that
//     cannot start.
//   - Without a ready leader, no follower is restarted: the followers are
//     then the only pods that serve.

// AnnotationDoctorRequest, on a follower pod, is the spec.doctor.requestId
// asked for when the pod was made: the doctor run it was restarted for.
const AnnotationDoctorRequest = "summa.dev/doctor-request"

// doctorRollsFollowers reports whether index's doctor run is at the step
// where its followers restart: requested, or Pending.
func doctorRollsFollowers(index *summav1.SummaIndex) bool {
	if !doctorActive(index) {
		return false
	}
	d := index.Status.Doctor
	return d == nil || doctorTerminal(d.Phase) || d.Phase == summav1.DoctorPhasePending
}

// doctorRoll is the plan of the followers' restart for index's requested
// doctor run.
func (r *SummaIndexReconciler) doctorRoll(index *summav1.SummaIndex) rollPlan {
	id := index.Spec.Doctor.RequestID
	return rollPlan{
		stale: func(fl follower) bool { return fl.pod.Annotations[AnnotationDoctorRequest] != id },
		back: func(fl follower) bool {
			back, late := r.backForDoctor(index, fl)
			return back || late
		},
		progress: func(left int) string {
			return fmt.Sprintf("followers restart one at a time for doctor run %s before the leader's (%d to go)", id, left)
		},
		why: "restart for doctor run " + id,
	}
}

// backForDoctor reports whether follower fl runs since the requested
// doctor run and is back (ready, answering for the index), or, when it is
// not, whether it is late: made longer than the doctor's start timeout
// ago.
func (r *SummaIndexReconciler) backForDoctor(index *summav1.SummaIndex, fl follower) (back, late bool) {
	if fl.pod == nil || fl.pod.DeletionTimestamp != nil ||
		fl.pod.Annotations[AnnotationDoctorRequest] != index.Spec.Doctor.RequestID {
		return false, false
	}
	if engineReady(fl.pod) && fl.st != nil {
		return true, false
	}
	return false, r.Options.Now().Sub(fl.pod.CreationTimestamp.Time) > index.Spec.Doctor.StartTimeout()
}

// doctorWaitsForFollowers tells the doctor's Pending step whether the
// leader's repair waits for followers still to restart or come back, and
// why. The followers given up on are told in events when the wait ends.
func (r *SummaIndexReconciler) doctorWaitsForFollowers(ctx context.Context, index *summav1.SummaIndex, leader *corev1.Pod) (bool, string, error) {
	if leader == nil || !engineReady(leader) {
		return false, "", nil
	}
	waiting, fs, err := r.followersNotBack(ctx, index, r.doctorRoll(index))
	if err != nil {
		return false, "", err
	}
	if len(waiting) > 0 {
		return true, fmt.Sprintf("doctor run %s: followers restart before the leader's repair: waiting for %s",
			index.Spec.Doctor.RequestID, strings.Join(waiting, ", ")), nil
	}
	for _, fl := range fs {
		if _, late := r.backForDoctor(index, fl); late {
			r.event(index, fl.pod, corev1.EventTypeWarning, "FollowerNotBack",
				"follower %s is not back %s after its restart for doctor run %s: the leader's repair goes on",
				fl.pod.Name, index.Spec.Doctor.StartTimeout(), index.Spec.Doctor.RequestID)
		}
	}
	return false, "", nil
}
