package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// Rolling restarts with read followers. A new revision (spec change,
// restartedAt, a new engine image) restarts the followers first, one at a
// time, each back, ready and caught up with the leader before the next (a
// doctor run too: summaindex_doctor_followers.go);
// the leader restarts last, drained as without followers
// (reconcileEngine asks followersSettled before its drain). Throughout,
// the leader serves while a follower restarts, and the followers serve
// while the leader restarts. Where a rollout stands is read from the
// pods' revision annotations each pass, so an operator killed at any
// point resumes it in the same order. A follower that reports
// quarantined segments is rebuilt: its volume is deleted first (the
// durable mark of a rebuild), then its pod; both are made again from the
// leader.

const (
	// ReasonRollingFollowers is the Progressing reason while followers
	// restart before the leader.
	ReasonRollingFollowers = "RollingFollowers"
	// maxCatchUpLagSeconds is the replication lag under which a follower
	// that is following counts as caught up.
	maxCatchUpLagSeconds = 5.0
)

// followerIndex reads index's index on a follower; nil without an error when
// the follower does not have it yet (any 404).
func (r *SummaIndexReconciler) followerIndex(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (*client.IndexStatus, error) {
	c, err := r.engineFor(ctx, index, pod)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	st, err := c.GetIndex(cctx, index.Name)
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read index %s on follower %s: %w", index.Name, pod.Name, err)
	}
	return st, nil
}

// caughtUp reports whether a follower's engine serves what the leader
// published, near enough: connected, and at the leader's generation or
// within maxCatchUpLagSeconds of it.
func caughtUp(st *client.IndexStatus) bool {
	if st == nil || st.Replication == nil || st.Replication.State != client.ReplicationFollowing {
		return false
	}
	return st.Generation >= st.Replication.LeaderGeneration || st.Replication.LagSeconds <= maxCatchUpLagSeconds
}

// follower is one follower as a pass sees it.
type follower struct {
	k   int
	pod *corev1.Pod
	// st is its engine's view (nil when not read).
	st *client.IndexStatus
}

// settled reports whether f runs revision rev, is ready and caught up.
func (f follower) settled(rev string) bool {
	return f.pod != nil && f.pod.DeletionTimestamp == nil && f.pod.Annotations[AnnotationRevision] == rev &&
		engineReady(f.pod) && caughtUp(f.st)
}

// observeFollowers reads every follower 1..n (pods that are ready only).
func (r *SummaIndexReconciler) observeFollowers(ctx context.Context, index *summav1.SummaIndex, n int, pods map[int]*corev1.Pod) []follower {
	out := make([]follower, 0, n)
	for k := 1; k <= n; k++ {
		f := follower{k: k, pod: pods[k]}
		if f.pod != nil && f.pod.DeletionTimestamp == nil && engineReady(f.pod) {
			st, err := r.followerIndex(ctx, index, f.pod)
			if err != nil {
				log.FromContext(ctx).Info("Follower not readable", "pod", f.pod.Name, "error", err.Error())
			}
			f.st = st
		}
		out = append(out, f)
	}
	return out
}

// followersSettled tells reconcileEngine whether the leader may restart
// for revision rev: every follower runs rev, is ready and caught up.
func (r *SummaIndexReconciler) followersSettled(ctx context.Context, index *summav1.SummaIndex, rev string) (bool, string, error) {
	waiting, _, err := r.followersNotBack(ctx, index, revisionRoll(rev))
	if err != nil || len(waiting) == 0 {
		return err == nil, "", err
	}
	return false, fmt.Sprintf("followers restart to revision %s before the leader: waiting for %s", rev, strings.Join(waiting, ", ")), nil
}

// followersNotBack reads index's followers and names those that plan does
// not find back: what the leader's restart (or repair) waits for.
func (r *SummaIndexReconciler) followersNotBack(ctx context.Context, index *summav1.SummaIndex, plan rollPlan) ([]string, []follower, error) {
	n := index.EffectiveReplicas()
	if n == 0 {
		return nil, nil, nil
	}
	pods, err := r.followerPods(ctx, index)
	if err != nil {
		return nil, nil, failed(ReasonPodFailed, err)
	}
	fs := r.observeFollowers(ctx, index, n, pods)
	var waiting []string
	for _, f := range fs {
		if !plan.back(f) {
			waiting = append(waiting, index.FollowerPodName(f.k))
		}
	}
	return waiting, fs, nil
}

// reconcileReplicas is the followers' step of a pass: scale down, keep
// volumes and pods 1..N, read their engines into status.replicas, and
// roll them one at a time to the leader's desired revision.
func (r *SummaIndexReconciler) reconcileReplicas(ctx context.Context, index *summav1.SummaIndex, acc access, leader *corev1.Pod, f *failures) reconcile.Result {
	n := index.EffectiveReplicas()
	f.add(r.syncLeaderRoleLabels(ctx, leader))
	pods, err := r.followerPods(ctx, index)
	if err != nil {
		f.add(failed(ReasonPodFailed, err))
		return reconcile.Result{}
	}
	claims, err := r.followerClaims(ctx, index)
	if err != nil {
		f.add(failed(ReasonVolumeFailed, err))
		return reconcile.Result{}
	}
	if n == 0 && len(pods) == 0 && len(claims) == 0 {
		recordReplicas(index, 0, nil)
		return reconcile.Result{}
	}
	if paused(index) {
		// No change to any pod; status is still kept current.
		recordReplicas(index, n, r.observeFollowers(ctx, index, n, pods))
		return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}
	}
	left, err := r.removeFollowersAbove(ctx, index, n, pods, claims)
	f.add(err)
	if index.Spec.Suspend {
		running, err := r.deleteAllFollowers(ctx, index, "suspended")
		f.add(err)
		recordReplicas(index, n, nil)
		if running || left {
			return reconcile.Result{RequeueAfter: pollInterval}
		}
		return reconcile.Result{}
	}
	fs := r.observeFollowers(ctx, index, n, pods)
	recordReplicas(index, n, fs)
	res := reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}
	if left {
		res.RequeueAfter = pollInterval
	}
	if !acc.known {
		return res
	}
	grace := nextGrace(index, index.Status.TerminationGracePeriodSeconds, index.Status.DrainEstimateSeconds)
	in := r.podInputs(index, grace, acc)
	rev := revisionOf(index, in)
	hold, err := r.followersWaitForRestore(ctx, index, leader)
	f.add(err)
	for i := range fs {
		fl := &fs[i]
		usable, err := r.ensureFollowerClaim(ctx, index, fl.k, claims[fl.k])
		f.add(err)
		switch {
		case hold && fl.pod != nil:
			// Nothing is served before the restore: no follower either.
			f.add(r.deleteFollowerPod(ctx, index, fl.pod, "the leader's volume waits for its restore"))
			res.RequeueAfter = pollInterval
		case hold:
		case fl.pod == nil && usable:
			f.add(r.createFollower(ctx, index, desiredFollower(index, in, fl.k)))
			res.RequeueAfter = pollInterval
		case fl.pod != nil && !usable && claims[fl.k] != nil:
			// A rebuild under way: the volume goes first, then the pod.
			f.add(r.deleteFollowerPod(ctx, index, fl.pod, "its volume is being rebuilt"))
			res.RequeueAfter = pollInterval
		case fl.pod != nil:
			f.add(r.syncFollowerAccess(ctx, fl.pod, acc))
		}
	}
	plan, roll := revisionRoll(rev), true
	switch {
	case hold:
		return res
	case doctorActive(index):
		// Followers restart for the run before the leader's repair, then
		// serve while the leader is repaired (summaindex_doctor_followers.go).
		plan, roll = r.doctorRoll(index), doctorRollsFollowers(index) && leader != nil && engineReady(leader)
	}
	if !roll {
		return res
	}
	rolling, busy, err := r.rollFollowers(ctx, index, leader, fs, plan, claims)
	f.add(err)
	switch {
	case rolling || err != nil:
		res.RequeueAfter = pollInterval
	case busy:
		// A follower starting or catching up: its readiness wakes a pass;
		// its lag is looked at again soon.
		res = sooner(res, reconcile.Result{RequeueAfter: notReadyPoll})
	}
	return res
}

// followersWaitForRestore reports whether index's followers are held
// back because the leader's volume still waits for its restore (or the
// restore failed): an index becomes Ready, and serves, only once its
// restore finished, so no follower runs before that (it would answer
// searches of the read Service for an index it cannot have). An existing
// leader pod is never held, as in restoreGate.
func (r *SummaIndexReconciler) followersWaitForRestore(ctx context.Context, index *summav1.SummaIndex, leader *corev1.Pod) (bool, error) {
	if leader != nil || index.Spec.Restore == nil {
		return false, nil
	}
	pvc, err := r.restorePending(ctx, index)
	if err != nil {
		return true, failed(ReasonVolumeFailed, err)
	}
	return pvc != nil, nil
}

// rollPlan is what a roll of the followers restarts and waits for.
type rollPlan struct {
	// stale reports whether a follower is to restart.
	stale func(follower) bool
	// back reports whether a restarted follower is back: the next one may
	// restart.
	back func(follower) bool
	// progress says what the roll does, with the followers left.
	progress func(left int) string
	// why is the reason given when a follower pod is deleted.
	why string
}

// revisionRoll is the plan of a rolling restart to revision rev: each
// follower back ready and caught up before the next.
func revisionRoll(rev string) rollPlan {
	return rollPlan{
		stale: func(fl follower) bool { return fl.pod.Annotations[AnnotationRevision] != rev },
		back:  func(fl follower) bool { return fl.settled(rev) },
		progress: func(left int) string {
			return fmt.Sprintf("followers restart one at a time to revision %s before the leader (%d to go)", rev, left)
		},
		why: "restart to revision " + rev,
	}
}

// rollFollowers restarts (or rebuilds) at most one serving follower: the
// lowest-numbered one that plan finds stale, or reporting quarantined
// segments, once the leader is ready and every other follower is back. A
// follower that does not serve is replaced at once: that costs no search.
// It reports whether followers are still to roll, and whether a pod of
// the index is not back (busy).
func (r *SummaIndexReconciler) rollFollowers(ctx context.Context, index *summav1.SummaIndex, leader *corev1.Pod,
	fs []follower, plan rollPlan, claims map[int]*corev1.PersistentVolumeClaim) (rolling, busy bool, err error) {
	var todo []follower
	busy = leader == nil || !engineReady(leader)
	for _, fl := range fs {
		quarantined := fl.st != nil && len(fl.st.Quarantined) > 0
		switch {
		case fl.pod != nil && fl.pod.DeletionTimestamp == nil && (plan.stale(fl) || quarantined):
			todo = append(todo, fl)
		case !plan.back(fl):
			busy = true
		}
	}
	if len(todo) == 0 {
		return false, busy, nil
	}
	setCondition(index, summav1.ConditionProgressing, true, ReasonRollingFollowers, plan.progress(len(todo)))
	for _, fl := range todo {
		serving := engineReady(fl.pod)
		if serving && busy {
			continue
		}
		if fl.st != nil && len(fl.st.Quarantined) > 0 {
			err = r.rebuildFollower(ctx, index, fl, claims[fl.k])
		} else {
			err = r.deleteFollowerPod(ctx, index, fl.pod, plan.why)
		}
		if err != nil {
			return true, busy, err
		}
		busy = busy || serving
	}
	return true, busy, nil
}

// rebuildFollower deletes a quarantined follower's volume, then its pod;
// the next passes make both again and the follower copies the index from
// the leader.
func (r *SummaIndexReconciler) rebuildFollower(ctx context.Context, index *summav1.SummaIndex, fl follower, c *corev1.PersistentVolumeClaim) error {
	r.event(index, fl.pod, corev1.EventTypeWarning, "FollowerRebuilding",
		"follower %s reports %d quarantined segment(s): its volume and pod are made again from the leader", fl.pod.Name, len(fl.st.Quarantined))
	if c != nil {
		if err := r.deleteClaim(ctx, index, c.GetName()); err != nil {
			return failed(ReasonVolumeFailed, err)
		}
	}
	return r.deleteFollowerPod(ctx, index, fl.pod, "rebuild after quarantine")
}

// recordReplicas writes status.replicas from the followers 1..n.
func recordReplicas(index *summav1.SummaIndex, n int, fs []follower) {
	st := &summav1.ReplicasStatus{Desired: int32(n)}
	var maxLag *float64
	for _, fl := range fs {
		if fl.pod == nil {
			continue
		}
		fst := summav1.FollowerStatus{Name: fl.pod.Name, Ready: engineReady(fl.pod) && fl.pod.DeletionTimestamp == nil,
			Revision: fl.pod.Annotations[AnnotationRevision]}
		if fst.Ready {
			st.Ready++
		}
		if fl.st != nil {
			fst.Generation = int64(fl.st.Generation)
			if rep := fl.st.Replication; rep != nil {
				lag := math.Round(rep.LagSeconds*10) / 10
				fst.State, fst.LeaderGeneration, fst.LagSeconds = rep.State, int64(rep.LeaderGeneration), &lag
				if maxLag == nil || lag > *maxLag {
					maxLag = &lag
				}
			}
		}
		if fl.settled(index.Status.UpdateRevision) {
			st.Updated++
		}
		st.Followers = append(st.Followers, fst)
	}
	slices.SortFunc(st.Followers, func(a, b summav1.FollowerStatus) int {
		return index.FollowerIndex(a.Name) - index.FollowerIndex(b.Name)
	})
	st.MaxLagSeconds = maxLag
	st.Summary = strconv.Itoa(int(st.Ready)) + "/" + strconv.Itoa(n)
	index.Status.Replicas = st
}

// sooner is a, with b's requeue when b asks to come back sooner.
func sooner(a, b reconcile.Result) reconcile.Result {
	if b.RequeueAfter > 0 && (a.RequeueAfter == 0 || b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	return a
}

// replicasStep is the pass step of the read followers (reconcileReplicas),
// which follow the leader pod as the engine step left it.
func (r *SummaIndexReconciler) replicasStep(ctx context.Context, p *pass) error {
	leader, err := r.enginePod(ctx, p.index)
	if err != nil {
		return failed(ReasonPodFailed, err)
	}
	p.requeue(r.reconcileReplicas(ctx, p.index, p.access, leader, &p.failures))
	return nil
}
