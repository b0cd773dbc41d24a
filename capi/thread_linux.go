package main

import "syscall"

// threadID is the calling OS thread's id (gettid).
func threadID() int { return syscall.Gettid() }
