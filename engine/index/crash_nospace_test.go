package index

// The crash and fault harness with a full volume: ENOSPC injected at every
// file write and at every fsync of the scenario (crash_test.go). After each
// run the harness's invariants hold (every acknowledged document exactly
// once, nothing uncommitted visible, every seg_ file owned), the client
// finishes the scenario by retrying, and every error the client saw keeps
// ENOSPC in its chain, so that the server answers 507 StorageFull, never
// 500.

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/diskspace"
)

// noSpaceClasses are the injected error classes: the operation kinds that
// fail with ENOSPC.
var noSpaceClasses = []struct {
	name  string
	kinds []errorfs.OpKind
}{
	{"write", []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate}},
	{"fsync", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}},
}

func TestCrashAndFaultHarness_NoSpace(t *testing.T) {
	h := textHarness
	steps := scenarioSteps(t)
	states := expectedStates(steps)
	counter, fs := newFaultFS(-1, false, 0, 0)
	runScenario(t, h, fs, counter, steps, newRecord())
	total := counter.n.Load()
	for _, class := range noSpaceClasses {
		points, failed := 0, 0
		for n := int64(0); n < total; n++ {
			k, ok := counter.kinds.Load(n)
			if !ok || !hasKind(class.kinds, k.(errorfs.OpKind)) || (testing.Short() && n%4 != 0) {
				continue
			}
			label := fmt.Sprintf("ENOSPC on %s at op %d", class.name, n)
			f, fs := newFaultFS(n, false, 0, n)
			kinds := class.kinds
			f.inject = func(op errorfs.Op) error {
				if !hasKind(kinds, op.Kind) {
					return nil // the run's operation order moved: a clean run
				}
				return &iofs.PathError{Op: class.name, Path: op.Path, Err: syscall.ENOSPC}
			}
			rec := newRecord()
			runScenario(t, h, fs, f, steps, rec)
			checkRecovered(t, h, f.mem, states, rec, label)
			if g := checkRecovered(t, h, f.mem, states, rec, label); rec.acked[g] != len(steps)-1 {
				t.Fatalf("%s: the client could not finish the scenario (generation %d)", label, g)
			}
			for _, err := range rec.errs {
				if errors.Is(err, ErrNothingToDo) {
					continue
				}
				if !diskspace.IsNoSpace(err) {
					t.Fatalf("%s: the client saw an error without ENOSPC in its chain: %v", label, err)
				}
			}
			if len(rec.errs) > 0 {
				failed++
			}
			points++
		}
		if points == 0 || failed == 0 {
			t.Fatalf("ENOSPC on %s: %d points, %d reached the client", class.name, points, failed)
		}
		t.Logf("ENOSPC on %s: %d points, %d of them failed a client operation", class.name, points, failed)
	}
}

func hasKind(kinds []errorfs.OpKind, k errorfs.OpKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
