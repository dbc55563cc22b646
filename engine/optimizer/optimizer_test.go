package optimizer

import (
	"testing"
	"time"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

func seg(id segid.ID, docs, deleted uint32) metadata.Segment {
	s := metadata.Segment{Info: segment.Info{ID: id, Documents: docs}}
	if deleted > 0 {
		s.Deletes = &metadata.Mask{ID: id + 1000, Deleted: deleted}
	}
	return s
}

func all(segid.ID) bool { return true }

func TestQ07_BackoffExponentialFrom30sTo30m(t *testing.T) {
	b := &Backoff{Min: 30 * time.Second, Max: 30 * time.Minute}
	now := time.Unix(1000, 0)
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	for i, w := range want {
		if d := b.Failed([]segid.ID{7}, now); d != w {
			t.Fatalf("failure %d: delay %v, want %v", i+1, d, w)
		}
	}
	if b.Eligible(7, now.Add(29*time.Minute)) || !b.Eligible(7, now.Add(30*time.Minute)) {
		t.Fatal("eligibility does not follow the delay")
	}
	if next, ok := b.NextWake(now); !ok || !next.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("own wake-up at %v", next)
	}
	b.Succeeded([]segid.ID{7})
	if !b.Eligible(7, now) || b.Failures(7) != 0 {
		t.Fatal("success did not clear the backoff")
	}
}

func TestQ09_BackoffMeasuredFromPassCompletion(t *testing.T) {
	b := &Backoff{Min: 30 * time.Second, Max: 30 * time.Minute}
	start := time.Unix(1000, 0)
	completed := start.Add(10 * time.Minute) // a pass longer than the scan interval
	b.Failed([]segid.ID{1}, completed)
	if b.Eligible(1, completed.Add(29*time.Second)) {
		t.Fatal("a long failed pass became eligible again right after completing")
	}
}

func TestTieredMergePolicy(t *testing.T) {
	p := DefaultPolicy()
	var segs []metadata.Segment
	for i := 0; i < 7; i++ {
		segs = append(segs, seg(segid.ID(i+1), 100, 0))
	}
	segs = append(segs, seg(50, 100000, 0))
	if task, ok := p.Choose(segs, all, false); ok {
		t.Fatalf("7 small segments chose %+v", task)
	}
	segs = append(segs, seg(8, 200, 0))
	task, ok := p.Choose(segs, all, false)
	if !ok || task.Kind != "merge" || len(task.Sources) != 8 {
		t.Fatalf("8 small segments: %+v %v", task, ok)
	}
	for _, id := range task.Sources {
		if id == 50 {
			t.Fatal("the large segment joined a small-tier merge")
		}
	}
}

func TestQ06_QuarantinedAndBackedOffSourcesExcluded(t *testing.T) {
	p := DefaultPolicy()
	var segs []metadata.Segment
	for i := 0; i < 8; i++ {
		segs = append(segs, seg(segid.ID(i+1), 100, 0))
	}
	if _, ok := p.Choose(segs, func(id segid.ID) bool { return id != 3 }, false); ok {
		t.Fatal("a tier completed only by an ineligible segment was merged")
	}
}

func TestCompactionCandidate(t *testing.T) {
	p := DefaultPolicy()
	task, ok := p.Choose([]metadata.Segment{seg(1, 100, 10), seg(2, 100, 40)}, all, false)
	if !ok || task.Kind != "compact" || task.Sources[0] != 2 {
		t.Fatalf("compaction choice %+v %v", task, ok)
	}
}

func TestM10_M11_Q13_BPEligibilityFromPersistedState(t *testing.T) {
	p := DefaultPolicy()
	fresh := seg(1, 100, 0)
	if _, ok := p.Choose([]metadata.Segment{fresh}, all, false); ok {
		t.Fatal("a schema without reorder fields got BP work")
	}
	if task, ok := p.Choose([]metadata.Segment{fresh}, all, true); !ok || task.Kind != "reorder" {
		t.Fatal("a first BP pass was not scheduled")
	}
	done := fresh
	done.BPConverged = true
	if _, ok := p.Choose([]metadata.Segment{done}, all, true); ok {
		t.Fatal("completed BP was redone")
	}
	capped := fresh
	capped.BPUnconvergedPasses = p.MaxUnconvergedPasses
	if _, ok := p.Choose([]metadata.Segment{capped}, all, true); ok {
		t.Fatal("a lineage at the unconverged-pass limit was admitted")
	}
	below := fresh
	below.BPUnconvergedPasses = p.MaxUnconvergedPasses - 1
	if _, ok := p.Choose([]metadata.Segment{below}, all, true); !ok {
		t.Fatal("an unconverged lineage below the limit was not admitted")
	}
}

func TestM05_PermitsNonBlockingAdmission(t *testing.T) {
	p := NewPermits(1)
	if !p.TryAcquire() || p.TryAcquire() {
		t.Fatal("permit admission")
	}
	p.Release()
	if p.InUse() != 0 {
		t.Fatal("permit not returned")
	}
	if NewPermits(0).TryAcquire() == false {
		t.Fatal("explicit maintenance needs at least one permit when background maintenance is off")
	}
}
