//go:build !linux

package rawfile

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
)

const supported = false

// errUnsupported: Supported is false here; callers use their filesystem.
var errUnsupported = errors.New("rawfile: not supported on this system")

// Open is not supported here (Supported is false).
func Open(path string) (vfs.File, error) { return nil, errUnsupported }

// OpenDir is not supported here (Supported is false).
func OpenDir(path string) (vfs.File, error) { return nil, errUnsupported }

// Create is not supported here (Supported is false).
func Create(path string) (vfs.File, error) { return nil, errUnsupported }

// CreateLinked is unsupported here.
func CreateLinked(path string) (vfs.File, error) { return nil, errUnsupported }

// Rename is not supported here (Supported is false).
func Rename(from, to string) error { return errUnsupported }

// Link is not supported here (Supported is false).
func Link(from, to string) error { return errUnsupported }

// ErrSameFile is returned by Reuse when path is live's file.
var ErrSameFile = errors.New("rawfile: the file to reuse is the live file")

// Reuse is not supported here (Supported is false).
func Reuse(path, live string) (vfs.File, error) { return nil, errUnsupported }
