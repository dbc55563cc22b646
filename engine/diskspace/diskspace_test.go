package diskspace

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

// fakeVolume is a volume whose free space the test sets.
type fakeVolume struct{ free, total int64 }

func (v *fakeVolume) stat(string) (Usage, error) {
	return Usage{TotalBytes: v.total, FreeBytes: v.free, UsedBytes: v.total - v.free}, nil
}

func newFake(minFree int64, v *fakeVolume) *Monitor {
	m := NewMonitor("/nowhere", minFree)
	m.stat = v.stat
	return m
}

func TestIsNoSpaceThroughWrappedChains(t *testing.T) {
	pathErr := &fs.PathError{Op: "write", Path: "seg_1.cmp", Err: syscall.ENOSPC}
	cases := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("index: write segment 1: %w", pathErr), true},
		{fmt.Errorf("outer: %w: %w", errors.New("generation failed"), pathErr), true},
		{errors.Join(errors.New("other"), fmt.Errorf("fsync: %w", &fs.PathError{Op: "sync", Err: syscall.EDQUOT})), true},
		{fmt.Errorf("registry: %w", ErrFull), true},
		{fmt.Errorf("flattened: %v", pathErr), false}, // %v drops the chain
		{&fs.PathError{Op: "write", Err: syscall.EIO}, false},
		{nil, false},
	}
	for i, c := range cases {
		if got := IsNoSpace(c.err); got != c.want {
			t.Errorf("case %d (%v): IsNoSpace = %v, want %v", i, c.err, got, c.want)
		}
	}
}

func TestDefaultReserveRule(t *testing.T) {
	for _, c := range []struct{ total, want int64 }{
		{100 << 30, (100 << 30) / 100 * 3}, // 3%
		{1 << 30, 64 << 20},                // at least 64 MiB
		{96 << 20, 48 << 20},               // at most half the volume
	} {
		if got := DefaultReserve(c.total); got != c.want {
			t.Errorf("DefaultReserve(%d) = %d, want %d", c.total, got, c.want)
		}
	}
	v := &fakeVolume{total: 10 << 30, free: 200 << 20}
	if st, _ := newFake(AutoReserve, v).State(); st.ReserveBytes != (10<<30)/100*3 || !st.Full {
		t.Errorf("auto reserve of a 10 GiB volume with 200 MiB free: %+v", st)
	}
}

func TestMonitorReserveRefusesAndSpaceReturns(t *testing.T) {
	v := &fakeVolume{total: 1 << 30, free: 100 << 20}
	m := newFake(32<<20, v)
	if err := m.Admit(0); err != nil {
		t.Fatalf("100 MiB free, 32 MiB reserve: %v", err)
	}
	if err := m.Admit(80 << 20); !errors.Is(err, ErrFull) {
		t.Fatalf("a write of 80 MiB would eat the reserve: %v", err)
	}
	v.free = 16 << 20
	st, _ := m.State()
	if err := m.Admit(0); !errors.Is(err, ErrFull) || !st.Full || st.FreeBytes != 16<<20 || st.UsedBytes != (1<<30)-(16<<20) {
		t.Fatalf("below the reserve: %v, %+v", err, st)
	}
	v.free = 33 << 20
	if err := m.Admit(0); err != nil {
		t.Fatalf("space returned: %v", err)
	}
}

func TestMonitorNoSpaceErrorHoldsUntilLowWater(t *testing.T) {
	v := &fakeVolume{total: 1 << 30, free: 512 << 10}
	m := newFake(0, v)
	if err := m.Admit(0); err != nil {
		t.Fatalf("no reserve: %v", err)
	}
	if !m.Observe(fmt.Errorf("commit: %w", &fs.PathError{Op: "write", Err: syscall.ENOSPC})) {
		t.Fatal("ENOSPC not classified")
	}
	if m.Observe(errors.New("other")) {
		t.Fatal("an unrelated error classified as no space")
	}
	v.free = LowWater - 1
	if err := m.Admit(0); !errors.Is(err, ErrFull) {
		t.Fatalf("after ENOSPC, below the low water: %v", err)
	}
	v.free = LowWater
	if err := m.Admit(0); err != nil {
		t.Fatalf("low water regained: %v", err)
	}
	v.free = 0
	if err := m.Admit(0); err != nil {
		t.Fatalf("the ENOSPC state must clear once space returned: %v", err)
	}
	// A stale ENOSPC observed while plenty is free does not refuse writes.
	v.free = 1 << 29
	m.Observe(&fs.PathError{Op: "write", Err: syscall.ENOSPC})
	if err := m.Admit(0); err != nil {
		t.Fatalf("stale ENOSPC with space free: %v", err)
	}
}

func TestStatReadsTheVolume(t *testing.T) {
	u, err := Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes <= 0 || u.FreeBytes < 0 || u.UsedBytes < 0 || u.FreeBytes > u.TotalBytes {
		t.Fatalf("implausible usage %+v", u)
	}
	if _, err := Stat("/no/such/directory"); err == nil {
		t.Fatal("statfs of a missing directory succeeded")
	}
}
