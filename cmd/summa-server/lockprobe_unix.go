//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/summadev/summa/engine/registry"
)

// probeLock reports registry.ErrDataDirLocked when another process holds
// the data directory's lock. It mutates nothing: the lock file is opened
// without O_CREATE or O_TRUNC and tested with F_GETLK, which takes no lock
// (taking the lock the way the registry does would truncate the file,
// changing its mtime, even when another process holds it). A missing
// directory or lock file is not locked.
func probeLock(dir string) error {
	path := filepath.Join(dir, registry.LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	// Closing any descriptor of a file drops this process's fcntl locks on
	// it; this process holds none yet.
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return fmt.Errorf("test the lock %s: %w", path, err)
	}
	if lk.Type != syscall.F_UNLCK {
		return fmt.Errorf("%w: %s: lock %s held by process %d", registry.ErrDataDirLocked, dir, path, lk.Pid)
	}
	return nil
}
