package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	summav1 "github.com/summadev/summa/api/v1"
)

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func TestRestartBudgetAdmitsAtMostItsSlotsFirstComeFirstServed(t *testing.T) {
	b := newRestartBudget(16)
	for _, n := range []string{"a", "b"} {
		if ok, _, _ := b.admit(key(n), 2, nil); !ok {
			t.Fatalf("%s not admitted with a free slot", n)
		}
	}
	ok, using, place := b.admit(key("c"), 2, nil)
	if ok || len(using) != 2 || place != 0 {
		t.Fatalf("c admitted over the budget (ok %v, using %v, place %d)", ok, using, place)
	}
	if ok, _, place := b.admit(key("d"), 2, nil); ok || place != 1 {
		t.Fatalf("d: ok %v place %d, want queued second", ok, place)
	}
	// a is admitted again while it holds its slot (re-entrant passes).
	if ok, _, _ := b.admit(key("a"), 2, nil); !ok {
		t.Fatal("a holder lost its slot")
	}
	// a finishes: its slot goes to c (first in the queue), whose pass is
	// woken, not to d.
	b.settle(key("a"), false, false, 2)
	select {
	case e := <-b.wake:
		if e.Object.GetName() != "c" {
			t.Fatalf("woke %s, want c", e.Object.GetName())
		}
	default:
		t.Fatal("a freed slot woke nobody")
	}
	if ok, _, _ := b.admit(key("d"), 2, nil); ok {
		t.Fatal("d jumped the queue")
	}
	if ok, _, _ := b.admit(key("c"), 2, nil); !ok {
		t.Fatal("c not admitted to the freed slot")
	}
}

func TestRestartBudgetCountsRestartsPersistedInStatus(t *testing.T) {
	// After an operator restart nothing is in memory: the restarts under
	// way are those the indexes' status shows.
	b := newRestartBudget(16)
	busy := []types.NamespacedName{key("x"), key("y")}
	if ok, using, _ := b.admit(key("a"), 2, busy); ok || len(using) != 2 {
		t.Fatalf("admitted with both slots persisted as busy (using %v)", using)
	}
	// An index counts its own persisted restart as its own slot.
	if ok, _, _ := b.admit(key("x"), 2, busy); !ok {
		t.Fatal("an index restarting per its status was refused its own slot")
	}
}

func TestRestartBudgetForgetsWaitersThatNoLongerWait(t *testing.T) {
	b := newRestartBudget(16)
	b.admit(key("a"), 1, nil)
	b.admit(key("b"), 1, nil) // queued
	b.settle(key("b"), false, false, 1)
	if ok, _, place := b.admit(key("c"), 1, nil); ok || place != 0 {
		t.Fatalf("c: ok %v place %d: b still queued ahead after it stopped waiting", ok, place)
	}
}

func TestRestartSlotHeldOnlyByARestartMakingProgress(t *testing.T) {
	now := time.Now()
	index := func(phase summav1.Phase, since time.Duration, ann map[string]string) *summav1.SummaIndex {
		x := &summav1.SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: ann}}
		x.Status.Phase = phase
		x.Status.Conditions = []metav1.Condition{{Type: summav1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: "PodNotReady", LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		return x
	}
	for _, c := range []struct {
		why  string
		x    *summav1.SummaIndex
		want bool
	}{
		{"a new pod within the deadline", index(summav1.PhaseRestarting, time.Minute, nil), true},
		{"a new pod not Ready past the deadline", index(summav1.PhaseRestarting, 11*time.Minute, nil), false},
		{"a long drain (bounded by drainTimeoutSeconds)", index(summav1.PhaseDraining, 11*time.Minute, nil), true},
		{"a paused index", index(summav1.PhaseRestarting, time.Second, map[string]string{AnnotationReconcile: ReconcilePaused}), false},
		{"a running index", index(summav1.PhaseRunning, time.Second, nil), false},
	} {
		if got := holdsRestartSlot(c.x, now, DefaultRestartProgressDeadline); got != c.want {
			t.Errorf("%s: holds a slot %v, want %v", c.why, got, c.want)
		}
	}
}
