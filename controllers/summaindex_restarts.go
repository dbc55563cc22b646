package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	summav1 "github.com/summadev/summa/api/v1"
)

// The restart budget. A new revision (a spec change, restartedAt, or an
// operator upgrade that changes the engine image or the revision scheme)
// restarts engines that serve: each drains and stops, and its index is
// unavailable until the new pod is ready. At most
// Options.MaxConcurrentRestarts of them do so at once, across every index
// of this operator; the others wait their turn, first come first served,
// with Progressing=True reason RestartQueued, still serving. A restart
// holds its slot from its admission until the index is Running again (or
// the drain timed out, or something else took over: suspend, doctor,
// deletion), so a rollout whose new pods do not become ready stops there,
// as a Deployment's does. An engine that is not serving restarts at once:
// a restart costs it nothing.
//
// A slot is held only by a restart that makes progress (holdsRestartSlot):
// an index paused with the reconcile annotation holds none, and neither
// does one whose restart has been under way (Progressing=True since its
// drain began) for longer than Options.RestartProgressDeadline (10 min by
// default) while its new pod is not Ready (an image that cannot be
// pulled, a pod that cannot be scheduled, an engine that never answers).
// Such an index stays Restarting (Ready=False says why); the other
// rollouts go on around it, as kubectl rollout does with a Deployment
// past its progressDeadlineSeconds. A draining engine holds its slot: the
// drain is bounded by drainTimeoutSeconds.
//
// The slots are decided from what is persisted (indexes whose status
// says Draining or Restarting) and, for the moment between an admission
// and the status write that records it, from memory; an operator
// restarted at any point counts the restarts under way from status.

// DefaultMaxConcurrentRestarts is the default of
// Options.MaxConcurrentRestarts.
const DefaultMaxConcurrentRestarts = 2

// ReasonRestartQueued is the Progressing reason of an index waiting for a
// restart slot.
const ReasonRestartQueued = "RestartQueued"

// restartQueueRetry is how often a waiting index looks again when no slot
// freed meanwhile (a freed slot wakes the first waiters at once).
const restartQueueRetry = 30 * time.Second

// restartBudget hands out restart slots.
type restartBudget struct {
	mu sync.Mutex
	// holders were admitted by this process and not released yet.
	holders map[types.NamespacedName]bool
	// queue are the indexes waiting, oldest first.
	queue []types.NamespacedName
	// wake gets an event for each waiter a freed slot may admit.
	wake chan event.GenericEvent
}

// newRestartBudget makes a budget whose wake-ups go to a channel of
// capacity n.
func newRestartBudget(n int) *restartBudget {
	return &restartBudget{holders: map[types.NamespacedName]bool{}, wake: make(chan event.GenericEvent, n)}
}

// admit decides whether key may restart now, with max slots, busy being
// the indexes whose status shows a restart under way. It returns the
// holders of the slots and key's place in the queue when it must wait.
func (b *restartBudget) admit(key types.NamespacedName, slots int, busy []types.NamespacedName) (ok bool, using []string, place int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holders[key] || slices.Contains(busy, key) {
		// Its slot is already its own (in memory, or as its status says).
		b.holders[key] = true
		if i := slices.Index(b.queue, key); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
		return true, nil, 0
	}
	in := map[types.NamespacedName]bool{}
	for k := range b.holders {
		in[k] = true
	}
	for _, k := range busy {
		in[k] = true
	}
	delete(in, key)
	free := slots - len(in)
	place = slices.Index(b.queue, key)
	if place < 0 {
		b.queue = append(b.queue, key)
		place = len(b.queue) - 1
	}
	if place < free {
		b.queue = slices.Delete(b.queue, place, place+1)
		b.holders[key] = true
		return true, nil, 0
	}
	for k := range in {
		using = append(using, k.String())
	}
	slices.Sort(using)
	return false, using, place
}

// settle records where key stands after a pass: still holding a slot
// (restarting), waiting for one, or neither. A slot given back wakes the
// first waiters.
func (b *restartBudget) settle(key types.NamespacedName, restarting, waiting bool, slots int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !waiting {
		if i := slices.Index(b.queue, key); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
	}
	if restarting || !b.holders[key] {
		return
	}
	delete(b.holders, key)
	for _, k := range b.queue[:min(len(b.queue), max(0, slots-len(b.holders)))] {
		select {
		case b.wake <- event.GenericEvent{Object: &summav1.SummaIndex{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
		default: // full: the waiter's own retry finds the slot
		}
	}
}

// DefaultRestartProgressDeadline is the default of
// Options.RestartProgressDeadline.
const DefaultRestartProgressDeadline = 10 * time.Minute

// restarting reports whether index's status shows a restart under way: a
// drain before a stop, or a new pod not ready yet.
func restarting(index *summav1.SummaIndex) bool {
	return index.Status.Phase == summav1.PhaseDraining || index.Status.Phase == summav1.PhaseRestarting
}

// holdsRestartSlot reports whether index's restart counts against the budget
// at now: under way and making progress (see above).
func holdsRestartSlot(index *summav1.SummaIndex, now time.Time, deadline time.Duration) bool {
	if !restarting(index) || paused(index) {
		return false
	}
	if index.Status.Phase != summav1.PhaseRestarting {
		return true
	}
	c := index.GetCondition(summav1.ConditionProgressing)
	return c == nil || c.Status != metav1.ConditionTrue || now.Sub(c.LastTransitionTime.Time) < deadline
}

// admitRestart asks the budget for a slot for index's restart. When it must
// wait, the message says for whom.
func (r *SummaIndexReconciler) admitRestart(ctx context.Context, index *summav1.SummaIndex) (bool, string, error) {
	list := &summav1.SummaIndexList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return false, "", fmt.Errorf("list indexes for the restart budget: %w", err)
	}
	var busy []types.NamespacedName
	now := r.Options.Now()
	for i := range list.Items {
		if y := &list.Items[i]; holdsRestartSlot(y, now, r.Options.RestartProgressDeadline) {
			busy = append(busy, client.ObjectKeyFromObject(y))
		}
	}
	ok, using, place := r.restarts.admit(client.ObjectKeyFromObject(index), r.Options.MaxConcurrentRestarts, busy)
	if ok {
		return true, "", nil
	}
	return false, fmt.Sprintf("a restart to revision %s waits for one of %d restart slot(s) (in use: %s; %d ahead in the queue)",
		index.Status.UpdateRevision, r.Options.MaxConcurrentRestarts, strings.Join(using, ", "), place), nil
}
