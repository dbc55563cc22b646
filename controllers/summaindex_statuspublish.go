package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// Publishing what a status watch saw: the watch writes the engine's
// figures (documents, segments, generation, uncommitted documents,
// durability, the quarantine list and its count) and
// status.lastObservedTime itself, with a merge patch of the status
// subresource that carries only the fields that changed and the
// resourceVersion it compared against. So a commit reaches status in one
// API write, whatever the reconcile workers are doing (a pass blocked on a
// stopped engine, a queue of a thousand resyncs), and no write is made
// when the engine's figures equal status.
//
// The pass and the watch never undo each other: both write with the
// resourceVersion they read (the pass's update, the watch's patch), so a
// writer that read before the other wrote gets a conflict and reads again;
// and both derive the same fields from the engine the same way
// (setEngineFigures), so once one wrote, the other finds nothing to write.
// Everything else of status (conditions, events, storage, the followers)
// stays the pass's: the watch wakes a pass when the engine's answer asks
// for one (passNeeded).

// statusPublishAttempts bounds the watch's tries of one write; past it
// (another writer keeps moving the object), the pass writes instead.
const statusPublishAttempts = 3

// statusPublishTimeout bounds the API calls of one write.
const statusPublishTimeout = 10 * time.Second

// publish writes what the engine answered st into key's status when it
// differs, for the engine pod target.podUID. It returns whether a full
// pass is needed besides (or instead, when it could not write).
func (s *statusWatches) publish(ctx context.Context, key types.NamespacedName, podUID types.UID, st *client.IndexStatus) (bool, error) {
	if s.c == nil {
		return true, nil // no client (unit tests of the wakes): the pass writes
	}
	ctx, cancel := context.WithTimeout(ctx, statusPublishTimeout)
	defer cancel()
	var reader ctrlclient.Reader = s.c
	for range statusPublishAttempts {
		index := &summav1.SummaIndex{}
		if err := reader.Get(ctx, key, index); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil // deleted: the pass that sees it stops the watch
			}
			return true, fmt.Errorf("read SummaIndex %s: %w", key, err)
		}
		if index.DeletionTimestamp != nil || index.Status.PodUID != podUID {
			// Being deleted, or another pod since: the pass decides.
			return true, nil
		}
		was := index.DeepCopy()
		setEngineFigures(&index.Status, st)
		pass := passNeeded(index, &was.Status, st)
		if equality.Semantic.DeepEqual(was.Status, index.Status) {
			return pass, nil // status shows it already (a pass wrote it)
		}
		now := metav1.NewTime(s.now())
		index.Status.LastObservedTime = &now
		patch := ctrlclient.MergeFromWithOptions(was, ctrlclient.MergeFromWithOptimisticLock{})
		err := s.c.Status().Patch(ctx, index, patch)
		if apierrors.IsConflict(err) {
			// The cache was behind, or a pass wrote meanwhile: read
			// the API server itself and compare again.
			if s.reader != nil {
				reader = s.reader
			}
			continue
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return true, fmt.Errorf("patch status of SummaIndex %s: %w", key, err)
		}
		recordIndexMetrics(index)
		return pass, nil
	}
	return true, nil
}

// passNeeded tells whether the engine's answer st asks for more than the
// figures the watch writes: index's status moved from was to what st
// says, and a full pass decides the conditions, events, storage and
// followers that follow from it.
func passNeeded(index *summav1.SummaIndex, was *summav1.SummaIndexStatus, st *client.IndexStatus) bool {
	is := &index.Status
	switch {
	case was.QuarantinedSegmentCount != is.QuarantinedSegmentCount,
		!equality.Semantic.DeepEqual(was.QuarantinedSegments, is.QuarantinedSegments),
		was.DurabilityDegraded != is.DurabilityDegraded:
		return true // DoctorRequired, Degraded and their events
	case index.EffectiveReplicas() > 0:
		return true // the followers' lag moves with each commit (status.replicas)
	case (st.Storage != nil && st.Storage.Full) != (is.Storage != nil):
		return true // Degraded=StorageFull comes or goes
	case autoGrowDue(index, st.Storage):
		return true // the volume grows
	}
	return false
}
