package testserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the thread that
// started it dies, and puts it in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
