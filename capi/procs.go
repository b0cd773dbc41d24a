package main

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// callerProcs gives threads that call into the library for every batch a
// Go processor (P) of their own: one P more than GOMAXPROCS, added at the
// first such call (loch_loader_next, loch_loader_next_batch) and kept for
// the life of the process, unless $GOMAXPROCS is set, which the library
// then leaves as it is.
//
// A thread that Go did not start (Python's, calling through ctypes) needs a
// P to run Go code, and keeps it, in the syscall state, for a while after
// each call returns. With GOMAXPROCS Ps that the loader's workers keep busy
// (one worker per CPU, the Go loader's default), each call first waits
// until the scheduler hands it one, and the workers lose one while the
// caller's own code runs: at thousands of batches a second that throttled
// a consumer calling per batch below `loch bench`, whose consumer is a
// goroutine sharing the workers' Ps. With one P more, a call finds its own
// P (or an idle one) at once.
//
// A consumer of loch_loader_stream makes no call into Go per batch (and,
// through loch_service, none per epoch) and gets no extra P: on two cores
// the third P only made a third Go thread compete for them
// (bench/RESULTS.md, issue 17: without it, a tenth to two thirds fewer
// context switches, at the same CPU and throughput). Either way the
// loaders' default worker count is the number of Ps the process had before
// (loaderWorkers), so that the CPUs are shared as in `loch bench`.
// (Setting GOMAXPROCS stops the runtime from following later changes of
// the process's CPU limit, which is another reason to set it only when a
// caller needs it.)
var callerProcs callerProc

type callerProc struct {
	once  sync.Once
	added atomic.Int32 // Ps added: 0 or 1
}

// add adds the caller's P, once per process.
func (c *callerProc) add() {
	c.once.Do(func() {
		if os.Getenv("GOMAXPROCS") != "" {
			return
		}
		// Counted first: a loader started meanwhile sees at worst one
		// worker fewer, never one more than the CPUs.
		c.added.Store(1)
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	})
}

// loaderWorkers is the default of loader.Config.Workers in this library:
// the Go loader's own (GOMAXPROCS) less the Ps added for calling threads.
func loaderWorkers() int { return max(runtime.GOMAXPROCS(0)-int(callerProcs.added.Load()), 1) }
