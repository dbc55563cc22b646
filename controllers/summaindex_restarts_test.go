package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
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
