package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"sync"
)

// calls maps the OS thread making each interruptible call to the cancel
// function of its context. A C caller's thread runs the exported Go
// function itself (cgo locks the callback's goroutine to it), so the
// thread id names the call for as long as it runs.
var calls struct {
	sync.Mutex
	m map[int]context.CancelFunc
}

// interruptible returns the context of a long call, which loch_interrupt
// of the calling thread cancels, and the function that ends the call (call
// it with defer).
func interruptible() (context.Context, func()) {
	tid := threadID()
	ctx, cancel := context.WithCancel(context.Background())
	calls.Lock()
	if calls.m == nil {
		calls.m = make(map[int]context.CancelFunc)
	}
	calls.m[tid] = cancel
	calls.Unlock()
	return ctx, func() {
		calls.Lock()
		delete(calls.m, tid)
		calls.Unlock()
		cancel()
	}
}

// loch_interrupt cancels the interruptible call running on OS thread tid
// (see loch.h) and returns 1, or returns 0 when there is none.
//
//export loch_interrupt
func loch_interrupt(tid C.int64_t) C.int {
	calls.Lock()
	cancel, ok := calls.m[int(tid)]
	calls.Unlock()
	if !ok {
		return 0
	}
	cancel()
	return 1
}
