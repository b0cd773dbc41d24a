package main

import (
	"os"
	"runtime"
)

// callerProcs is the number of Go processors (Ps) the library adds for the
// threads that call into it: 1, unless $GOMAXPROCS is set, which the
// library then leaves as it is (0).
//
// A thread that Go did not start (Python's, calling through ctypes) needs a
// P to run Go code, and keeps it, in the syscall state, for a while after
// each call returns. With GOMAXPROCS Ps that the loader's workers keep busy
// (one worker per CPU, the Go loader's default), each call first waits
// until the scheduler hands it one, and the workers lose one while the
// caller's Python code runs: at thousands of batches a second that
// throttled ds.pytorch() below `loch bench`, whose consumer is a goroutine
// sharing the workers' Ps. With one P more, a call finds its own P (or an
// idle one) at once; the loaders' default worker count stays the number of
// Ps the process would have had (loaderWorkers), so the CPUs are shared as
// in `loch bench`. (Setting GOMAXPROCS stops the runtime from following
// later changes of the process's CPU limit; it is read once, at load.)
var callerProcs = func() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return 0
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	return 1
}()

// loaderWorkers is the default of loader.Config.Workers in this library:
// the Go loader's own (GOMAXPROCS) less the Ps added for calling threads.
func loaderWorkers() int { return max(runtime.GOMAXPROCS(0)-callerProcs, 1) }
