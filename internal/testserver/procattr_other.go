//go:build unix && !linux

package testserver

import "syscall"

// sysProcAttr puts the server in its own process group. Outside Linux
// there is no parent-death signal: a test binary killed before StopAll
// leaves its servers running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
