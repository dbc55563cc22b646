package optimizer

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

func debtSeg(pending, partial, stalls int) metadata.Segment {
	s := seg(1, 100, 0)
	s.BPConverged = true
	if pending > 0 {
		s.Seismic = &metadata.SeismicDebt{PendingTerms: pending, PartialPasses: partial, Stalls: stalls}
	}
	return s
}

// TestM10_SeismicCandidatesReadPersistedDebtOnly: a segment is a Seismic
// candidate exactly when its persisted entry has pending terms; a
// debt-free fresh vector segment is never replaced.
func TestM10_SeismicCandidatesReadPersistedDebtOnly(t *testing.T) {
	p := DefaultPolicy()
	if task, ok := p.Choose([]metadata.Segment{debtSeg(0, 0, 0)}, all, false); ok {
		t.Fatalf("debt-free segment chosen: %+v", task)
	}
	task, ok := p.Choose([]metadata.Segment{debtSeg(5, 0, 0)}, all, false)
	if !ok || task.Kind != "seismic" || task.Sources[0] != 1 {
		t.Fatalf("segment with 5 pending terms: %+v %v", task, ok)
	}
}

// TestM09_StallsBoundFollowUpsButProductivePassesContinue: follow-ups stop
// after MaxSeismicStalls consecutive stalls; partial passes are not capped
// by the total-pass threshold (MaxUnconvergedPasses) that caps BP.
func TestM09_StallsBoundFollowUpsButProductivePassesContinue(t *testing.T) {
	p := DefaultPolicy()
	if _, ok := p.Choose([]metadata.Segment{debtSeg(5, 0, p.MaxSeismicStalls-1)}, all, false); !ok {
		t.Fatal("a segment below the stall limit is not followed up")
	}
	if task, ok := p.Choose([]metadata.Segment{debtSeg(5, 0, p.MaxSeismicStalls)}, all, false); ok {
		t.Fatalf("a segment at the stall limit is followed up: %+v", task)
	}
	if _, ok := p.Choose([]metadata.Segment{debtSeg(5, 10*p.MaxUnconvergedPasses, 0)}, all, false); !ok {
		t.Fatal("productive passes past the total-pass threshold are stopped")
	}
}

// TestM09_SeismicDebtNotHiddenByExhaustedBMPLimit: a segment whose BP
// lineage reached its pass limit (or converged) is still chosen for its
// Seismic debt, and ineligible (busy, backed-off) segments are not.
func TestM09_SeismicDebtNotHiddenByExhaustedBMPLimit(t *testing.T) {
	p := DefaultPolicy()
	capped := debtSeg(3, 0, 0)
	capped.BPConverged = false
	capped.BPUnconvergedPasses = p.MaxUnconvergedPasses
	task, ok := p.Choose([]metadata.Segment{capped}, all, true)
	if !ok || task.Kind != "seismic" {
		t.Fatalf("capped BP lineage with Seismic debt: %+v %v", task, ok)
	}
	if task, ok := p.Choose([]metadata.Segment{capped}, func(segid.ID) bool { return false }, true); ok {
		t.Fatalf("ineligible segment chosen: %+v", task)
	}
}

// TestM09_FollowUpsUseCooldownAndPermitsAndStopAtTheStallLimit: Seismic
// follow-ups run as ordinary automatic tasks: one per scan while the
// completion cooldown lasts, none without a free permit, and none once the
// persisted stall counter (what a stalled pass publishes) reaches the limit.
func TestM09_FollowUpsUseCooldownAndPermitsAndStopAtTheStallLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cooldown = 20 * time.Second
		permits := NewPermits(1)
		o := New(Config{Threads: 1, ScanInterval: time.Hour, CompletionCooldown: cooldown}, permits)
		defer o.Shutdown()
		f := newFakeTarget(debtSeg(7, 0, 0))
		// A stalled pass: the debt stays, the stall counter grows.
		f.run = func(Task) error {
			f.mu.Lock()
			f.meta.Segments[0].Seismic.Stalls++
			f.mu.Unlock()
			return nil
		}
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 || f.tasks[0].Kind != "seismic" {
			t.Fatalf("first scan: %+v", f.tasks)
		}
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatal("a Seismic follow-up started inside the completion cooldown")
		}
		time.Sleep(cooldown)
		if !permits.TryAcquire() {
			t.Fatal("permit still held")
		}
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatal("a Seismic follow-up started without a free permit")
		}
		permits.Release()
		for i := 0; i < 2*DefaultMaxSeismicStalls; i++ {
			o.Scan([]Target{f})
			synctest.Wait()
			time.Sleep(cooldown)
		}
		if f.ran() != DefaultMaxSeismicStalls {
			t.Fatalf("%d passes ran, want %d: follow-ups must stop at the stall limit", f.ran(), DefaultMaxSeismicStalls)
		}
	})
}
