package testserver

import "syscall"

// sysProcAttr: Windows has neither process groups as used here nor a
// parent-death signal; a test binary killed before StopAll leaves its
// servers running.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// processAlive cannot tell cheaply on Windows; it says yes, so stale data
// directories are left for the OS to clean.
func processAlive(int) bool { return true }
