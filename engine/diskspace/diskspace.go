// Package diskspace watches the free space of the data directory's volume:
// it reads the figures with statfs, classifies the errors of a full volume
// (ENOSPC, EDQUOT) through wrapped chains, and decides whether a write may
// start. The registry asks it before every ingestion, commit and
// maintenance task, and tells it of every no-space error it meets.
package diskspace

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrFull: the volume cannot take the write: free space is below the
// reserve (--min-free-bytes), or a write failed with ENOSPC or EDQUOT and
// no space has returned since. Nothing acknowledged was changed; the same
// request succeeds once space returns.
var ErrFull = errors.New("storage full")

// IsNoSpace reports whether err is, or wraps, a full volume: ErrFull,
// ENOSPC or EDQUOT.
func IsNoSpace(err error) bool {
	return err != nil && (errors.Is(err, ErrFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT))
}

// Usage is the volume's space as statfs reports it.
type Usage struct {
	// TotalBytes is the volume's size.
	TotalBytes int64
	// FreeBytes is the space an unprivileged writer may still use (f_bavail).
	FreeBytes int64
	// UsedBytes is the space in use (f_blocks - f_bfree).
	UsedBytes int64
}

// Stat reads the usage of the volume holding dir.
func Stat(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("diskspace: statfs %s: %w", dir, err)
	}
	bs := int64(st.Bsize) //nolint:unconvert // int64 on every Linux architecture but not all platforms
	return Usage{
		TotalBytes: int64(st.Blocks) * bs,
		FreeBytes:  int64(st.Bavail) * bs,
		UsedBytes:  int64(st.Blocks-st.Bfree) * bs,
	}, nil
}

// Default reserve rule (--min-free-bytes unset): DefaultReservePercent of
// the volume's size, at least DefaultReserveFloor (room for one merge's
// output of small segments and a few commits), and never more than half
// the volume.
const (
	// DefaultReservePercent is the share of the volume kept free.
	DefaultReservePercent = 3
	// DefaultReserveFloor is the smallest default reserve.
	DefaultReserveFloor = 64 << 20
)

// DefaultReserve returns the default reserve of a volume of total bytes.
func DefaultReserve(total int64) int64 {
	r := max(total/100*DefaultReservePercent, DefaultReserveFloor)
	return min(r, total/2)
}

// AutoReserve, as Options.MinFreeBytes, selects DefaultReserve.
const AutoReserve = -1

// LowWater is the free space a volume that answered ENOSPC or EDQUOT
// must regain before writes are admitted again, whatever the reserve:
// without it, a volume with no reserve would take the next write as soon
// as the failed one's partial files were removed, and fail it again.
const LowWater = 4 << 20

// Monitor decides whether writes may start on one volume.
type Monitor struct {
	// dir is a directory on the volume.
	dir string
	// minFree is the configured reserve, or AutoReserve.
	minFree int64
	// stat reads the usage (Stat; replaced in tests).
	stat func(string) (Usage, error)

	mu struct {
		sync.Mutex
		// noSpace is set by a no-space error of a write and cleared once
		// LowWater bytes are free.
		noSpace bool
	}
}

// NewMonitor watches the volume of dir with a reserve of minFree bytes
// (AutoReserve: DefaultReserve of the volume; 0: no reserve).
func NewMonitor(dir string, minFree int64) *Monitor {
	return &Monitor{dir: dir, minFree: minFree, stat: Stat}
}

// State is the volume's space and whether writes are refused.
type State struct {
	Usage
	// ReserveBytes is the free space below which writes are refused.
	ReserveBytes int64
	// Full is true when writes are refused.
	Full bool
}

// State reads the volume and decides whether it is full: free space below
// the reserve, or below LowWater after a no-space error.
func (m *Monitor) State() (State, error) {
	u, err := m.stat(m.dir)
	if err != nil {
		return State{}, err
	}
	st := State{Usage: u, ReserveBytes: m.reserve(u)}
	st.Full = u.FreeBytes < st.ReserveBytes
	m.mu.Lock()
	if m.mu.noSpace {
		if u.FreeBytes >= LowWater {
			m.mu.noSpace = false
		} else {
			st.Full = true
		}
	}
	m.mu.Unlock()
	return st, nil
}

// reserve is the effective reserve of a volume of usage u.
func (m *Monitor) reserve(u Usage) int64 {
	if m.minFree == AutoReserve {
		return DefaultReserve(u.TotalBytes)
	}
	return m.minFree
}

// Admit returns nil when a write needing about need bytes may start: the
// volume is not full and need bytes leave the reserve intact. Otherwise it
// returns an error wrapping ErrFull with the figures. A statfs failure
// admits the write (the write itself then reports the volume's state).
func (m *Monitor) Admit(need int64) error {
	st, err := m.State()
	if err != nil {
		return nil
	}
	if st.Full || st.FreeBytes-need < st.ReserveBytes {
		return fmt.Errorf("%w: %d bytes free, %d used, reserve %d (--min-free-bytes), write needs about %d",
			ErrFull, st.FreeBytes, st.UsedBytes, st.ReserveBytes, need)
	}
	return nil
}

// Observe records err if it is a no-space error of a write (ENOSPC or
// EDQUOT): the volume counts as full until LowWater bytes are free. It
// reports whether err is a no-space error of any kind (ErrFull included).
func (m *Monitor) Observe(err error) bool {
	if !IsNoSpace(err) {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		m.mu.Lock()
		m.mu.noSpace = true
		m.mu.Unlock()
	}
	return true
}
