//go:build !linux

package envkubelet

import "syscall"

// sysProcAttr puts a process in its own process group, so that signals
// reach its children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
