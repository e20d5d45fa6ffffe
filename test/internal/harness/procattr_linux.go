package harness

import "syscall"

// sysProcAttr kills a child with the test process: a test that panics or
// times out never leaves a function listening.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
