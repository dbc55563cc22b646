package envkubelet

import "syscall"

// sysProcAttr puts a process in its own process group (so that signals
// reach its children) and kills it when the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
